import SettleBase
import SettleModel
import SettleLedger
import SettleEngine
import SettleDelivery

/// What `settle status` shows about App Store Server Notifications: an order's refund and
/// notifications, and one notification by UUID (never its signed payload).
extension StatusView {
    static func refundJSON(_ refund: Refund) -> JSONValue {
        .object([("at", time(refund.at)), ("kind", .string(refund.kind)), ("reason", .string(refund.reason))])
    }

    static func refundText(_ refund: Refund) -> String {
        "\(refund.kind) at \(Timestamp.rfc3339(unixSeconds: refund.at))" + (refund.reason.map { ", revocationReason \($0)" } ?? "")
    }

    package static func json(_ notification: NotificationRecord) -> JSONValue {
        .object([
            ("uuid", .string(notification.uuid)),
            ("type", .string(notification.type)),
            ("subtype", .string(notification.subtype)),
            ("environment", .string(notification.environment)),
            ("signed_date", .string(notification.signedDateMs.map { Timestamp.rfc3339(milliseconds: $0) })),
            ("transaction_id", .string(notification.transactionId)),
            ("order_id", .string(notification.orderId)),
            ("source", .string(notification.source)),
            ("received_at", time(notification.receivedAt)),
            ("outcome", .string(notification.outcome)),
            ("detail", .string(notification.detail)),
        ])
    }

    package static func text(_ notification: NotificationRecord) -> String {
        let fields = fields(notification)
        let width = fields.map(\.0.count).max() ?? 0
        return fields.map { $0.0.padding(toLength: width + 2, withPad: " ", startingAt: 0) + PrintableText.escape($0.1) }
            .joined(separator: "\n") + "\n"
    }

    /// A notification's facts as label and value (never its signed payload).
    package static func fields(_ notification: NotificationRecord) -> [(String, String)] {
        [
            ("notification", notification.uuid), ("type", notification.type + (notification.subtype.map { "/\($0)" } ?? "")),
            ("environment", notification.environment),
            ("signed", notification.signedDateMs.map { Timestamp.rfc3339(milliseconds: $0) } ?? "-"),
            ("transaction", notification.transactionId ?? "-"), ("order", notification.orderId ?? "-"),
            ("source", notification.source), ("received", Timestamp.rfc3339(unixSeconds: notification.receivedAt)),
            ("outcome", notification.outcome), ("detail", notification.detail ?? "-"),
        ]
    }

    /// The revoke owed for an order after a refund: its state, key, attempts and why it waits or failed.
    package static func json(_ revoke: (state: String, job: RevocationJob)) -> JSONValue {
        .object([
            ("state", .string(revoke.state)),
            ("idempotency_key", .string(RevokeHook.idempotencyKey(transactionId: revoke.job.transactionId, round: revoke.job.round))),
            ("attempts", .number(revoke.job.attempts)),
            ("last_error", .string(revoke.job.lastError)),
        ])
    }

    /// The order view with its notifications (and the revoke it owes, if any) added.
    package static func json(_ order: Order, history: [HistoryEntry], notifications: [NotificationRecord],
                            revoke: (state: String, job: RevocationJob)? = nil, storeSections: [StoreOrderSection] = []) -> JSONValue {
        guard case var .object(members) = json(order, history: history) else { return .null }
        members.append(("notifications", .array(notifications.map(json))))
        if let revoke { members.append(("revoke", json(revoke))) }
        members += storeSections.map { ($0.jsonKey, $0.json) }
        return .object(members)
    }

    package static func text(_ order: Order, history: [HistoryEntry], notifications: [NotificationRecord], now: Int64,
                            revoke: (state: String, job: RevocationJob)? = nil, storeSections: [StoreOrderSection] = [],
                            verdict: Verdict? = nil) -> String {
        var out = text(order, history: history, now: now, verdict: verdict)
        for section in storeSections { out += "\n" + section.text + "\n" }
        if let revoke {
            out += "\nrevoke: \(revoke.state), key \(RevokeHook.idempotencyKey(transactionId: revoke.job.transactionId, round: revoke.job.round))"
                + ", \(Plural.count(revoke.job.attempts, "attempt"))"
                + (revoke.job.lastError.map { ": " + PrintableText.escape($0) } ?? "") + "\n"
        }
        guard !notifications.isEmpty else { return out }
        out += "\nnotifications:\n"
        let rows = notifications.map { n in
            [Timestamp.rfc3339(unixSeconds: n.receivedAt), n.type + (n.subtype.map { "/\($0)" } ?? ""), n.outcome, n.source, n.uuid]
        }
        return out + table(rows).split(separator: "\n").map { "  " + $0 }.joined(separator: "\n") + "\n"
    }
}
