import Foundation
import SettleBase
import SettleModel
import SettleLedger
import SettleDelivery

/// Renders the ledger for support (SPEC section 6): one JSON object, or aligned text.
/// Never prints receipts, signed transactions or anything secret.
package enum StatusView {
    /// `breakers`: each store's (a store without one is closed). The first store settle served
    /// (`Store.ofUnnamedOrders`) has its health repeated under its log name (`apple`), the key
    /// it had before there were more.
    package static func json(_ summary: LedgerSummary, breakers: [Store: StoreBreaker] = [:], daemon: DaemonRecord? = nil) -> JSONValue {
        let head: [(String, JSONValue)] = [
            ("counts", .object(OrderState.allCases.map { ($0.rawValue, .number(summary.counts[$0] ?? 0)) })),
            ("oldest_undelivered_seconds", summary.oldestUndeliveredSeconds.map { .number($0) } ?? .null),
            (Store.ofUnnamedOrders.logName, health(breakers[.ofUnnamedOrders] ?? StoreBreaker())),
            ("health", .object(Store.allCases.map { ($0.rawValue, health(breakers[$0] ?? StoreBreaker())) })),
            ("daemon", daemon.flatMap { $0.isRunning ? $0 : nil }.map { d in
                .object([
                    ("pid", .number(Int(d.owner.pid))),
                    ("started_at", time(d.startedAt)),
                    ("last_pass_at", time(d.lastPassAt)),
                    ("last_pass_summary", .string(d.lastPassSummary)),
                ])
            } ?? .null),
            ("matching", .number(summary.matching)),
            ("orders", .array(summary.orders.map(json))),
            ("stores", .object(Store.allCases.map { store in
                (store.rawValue, .object(OrderState.allCases.map { ($0.rawValue, .number(storeCount(summary, store, $0))) }))
            })),
        ]
        return .object(head + refundClocks(summary) + [("support_actions_waiting", .number(summary.supportActionsWaitingCount))])
    }

    /// Each store with a refund window: its orders not yet told of, soonest first.
    static func refundClocks(_ summary: LedgerSummary) -> [(String, JSONValue)] {
        Store.allCases.filter { $0.refundWindowSeconds != nil }.map { store in
            let clocks: [JSONValue] = summary.refundDeadlines.filter { $0.store == store }.map { d in
                .object([("order_id", .string(d.orderId)), ("state", .string(d.state.rawValue)),
                         ("refund_at", time(d.refundAt)), ("refund_at_estimated", .bool(!d.exact)),
                         ("delivered", .bool(d.delivered))])
            }
            return (store.rawValue, .object([("unacknowledged", .array(clocks))]))
        }
    }

    /// One store's breaker as status shows it.
    static func health(_ breaker: StoreBreaker) -> JSONValue {
        .object([
            ("breaker", .string(breaker.state.rawValue)),
            ("retry_at", breaker.state == .open ? time(breaker.retryAt) : .null),
            ("last_error", .string(breaker.lastError)),
            ("last_error_at", time(breaker.lastErrorAt)),
        ])
    }

    /// Orders of `store` in `state`, as the ledger counted them.
    static func storeCount(_ summary: LedgerSummary, _ store: Store, _ state: OrderState) -> Int {
        summary.storeCounts[store]?[state] ?? 0
    }

    /// When Google refunds a Play order's purchase unless it is acknowledged: three days after it
    /// was bought (before Google confirmed it, after it was enqueued); nil once settled.
    package static func playRefundAt(_ order: Order) -> Int64? { order.refundDeadline }

    /// The verdict as `settle status ORDER --json` and `/api/orders/ID` give it, in the text's words.
    package static func json(_ verdict: Verdict) -> JSONValue {
        .object(verdict.lines.map { ($0.0, .string($0.1)) })
    }

    package static func json(_ order: Order) -> JSONValue {
        .object([
            ("order_id", .string(order.orderId)),
            ("user_id", .string(order.userId)),
            ("product_id", .string(order.productId)),
            ("state", .string(order.state.rawValue)),
            ("transaction_id", .string(order.transactionId)),
            ("original_transaction_id", .string(order.verified?.originalTransactionId)),
            ("environment", .string(order.environment)),
            ("quantity", .number(order.verified?.quantity)),
            ("proof", .string(proof(order))),
            ("attempts", .number(order.attempts)),
            ("next_attempt_at", order.state == .pending ? time(order.nextAttemptAt) : .null),
            ("reason", .string(order.reason)),
            ("last_error", .string(withoutSignedData(order.lastError))),
            ("claimed_by", .string(order.lease.map { "\($0.owner)" })),
            ("created_at", time(order.createdAt)),
            ("updated_at", time(order.updatedAt)),
            ("finished_at", time(order.finishedAt)),
            ("origin", .string(order.origin)),
            ("refund", order.refund.map(refundJSON) ?? .null),
            ("store", .string(order.store.rawValue)),
            // A bearer secret: only its fingerprint, which support can match (status --purchase-token-file).
            ("purchase_token", .string(order.purchaseToken?.fingerprint)),
            ("store_finish", .string(order.store.mustBeToldOfDelivery && order.deliveredAt != nil
                                     ? (order.state == .finished ? "done" : "pending") : nil)),
            ("google_refunds_at", time(playRefundAt(order))),
        ])
    }

    package static func json(_ order: Order, history: [HistoryEntry]) -> JSONValue {
        guard case var .object(members) = json(order) else { return .null }
        members.append(("history", .array(history.map { entry in
            .object([
                ("at", time(entry.at)),
                ("kind", .string(entry.kind.rawValue)),
                ("outcome", .string(entry.outcome)),
                ("apple_status", .number(entry.appleStatus)),
                ("hook_exit", .number(entry.hookExit)),
                ("environment", .string(entry.environment)),
                ("duration_ms", .number(entry.durationMs)),
                ("detail", .string(withoutSignedData(entry.detail))),
            ])
        })))
        return .object(members)
    }

    package static func text(_ summary: LedgerSummary, breakers: [Store: StoreBreaker] = [:], daemon: DaemonRecord? = nil,
                            pacer: [PacedBucket] = [], now: Int64) -> String {
        var out = summary.filtered ? "matching orders by state: " : ""
        out += OrderState.allCases.map { "\($0.rawValue) \(summary.counts[$0] ?? 0)" }.joined(separator: "  ") + "\n"
        out += "oldest undelivered: " + (summary.oldestUndeliveredSeconds.map(Timestamp.age) ?? "none") + "\n"
        out += supportActionsWaitingText(summary)
        // Each store's health; a store with no orders and nothing to say is left out.
        for store in Store.allCases {
            let breaker = breakers[store] ?? StoreBreaker()
            let counts = summary.storeCounts[store] ?? [:]
            let hasOrders = counts.values.contains { $0 > 0 }
            // The first store is always shown: it is the one every configuration had.
            guard store == .ofUnnamedOrders || hasOrders || breaker.state == .open || breaker.lastError != nil else { continue }
            var line = "\(store.logName): " + healthText(breaker, now: now)
            if store != .ofUnnamedOrders || Store.allCases.contains(where: { $0 != store && summary.storeCounts[$0]?.values.contains { $0 > 0 } == true }) {
                line += "; " + OrderState.allCases.map { "\($0.rawValue) \(counts[$0] ?? 0)" }.joined(separator: "  ")
            }
            out += line + "\n" + pacerText(store, summary: summary, buckets: pacer)
            // Each clock under its own store's line, never another's.
            for d in summary.refundDeadlines where d.store == store {
                out += "  unacknowledged \(PrintableText.escape(d.orderId)) " + deadlineText(d, now: now) + "\n"
            }
        }
        out += "daemon: " + daemonText(daemon, now: now) + "\n"
        guard !summary.orders.isEmpty else { return out + "\nno matching orders\n" }
        let header = ["ORDER", "STATE", "USER", "PRODUCT", "TRANSACTION", "ATTEMPTS", "REASON", "UPDATED"]
        let rows = summary.orders.map { o in
            [o.orderId, o.state.rawValue, o.userId, o.productId, o.transactionId ?? "-", String(o.attempts),
             o.reason ?? "-", Timestamp.age(max(0, now.saturatingSubtracting(o.updatedAt))) + " ago"]
        }
        out += "\n" + table([header] + rows)
        if summary.matching > summary.orders.count {
            out += "showing \(summary.orders.count) of \(summary.matching) (most recently changed first; --limit N shows more)\n"
        }
        return out
    }

    /// A store's breaker in words: "answering", "breaker OPEN until ..." with its last error.
    package static func healthText(_ breaker: StoreBreaker, now: Int64) -> String {
        if breaker.state == .open, let retryAt = breaker.retryAt {
            // Past its time, the breaker waits for the next pass to probe: "until … ago" would say it closed.
            let until = retryAt > now ? "until \(Timestamp.relative(retryAt, now: now))"
                : "since its cool-down ended \(Timestamp.age(now.saturatingSubtracting(retryAt))) ago; the next pass probes it"
            return "breaker OPEN " + until + lastError(breaker, now: now)
        }
        return breaker.lastError != nil ? "breaker closed" + lastError(breaker, now: now) : "answering"
    }

    /// An order's refund clock: "(delivered, acknowledge pending): Google refunds it in 2 d".
    package static func deadlineText(_ d: RefundDeadline, now: Int64) -> String {
        let left = d.refundAt.saturatingSubtracting(now)
        let days = (d.store.refundWindowSeconds ?? 0) / 86_400
        let when = left > 0 ? "\(d.store.owner) refunds it in \(Timestamp.age(left))"
            : "\(d.store.owner)'s \(days)-day deadline passed \(Timestamp.age(now.saturatingSubtracting(d.refundAt))) ago"
        return "(\(d.delivered ? "delivered, acknowledge pending" : d.state.rawValue)): " + when
            + (d.exact ? "" : " (at most; purchase time not confirmed yet)") + (d.isUrgent(now: now) ? "  ** under 24 h **" : "")
    }

    /// The daemon and its last pass: "pid 42 since 3 h ago; last pass 20 s ago: ...", or "not running".
    package static func daemonText(_ daemon: DaemonRecord?, now: Int64) -> String {
        guard let d = daemon, d.isRunning else { return "not running" }
        return "pid \(d.owner.pid) since \(Timestamp.relative(d.startedAt, now: now))"
            + (d.lastPassAt.map { "; last pass \(Timestamp.relative($0, now: now)): \(PrintableText.escape(d.lastPassSummary ?? ""))" } ?? "; no pass yet")
    }

    static func lastError(_ breaker: StoreBreaker, now: Int64) -> String {
        guard let error = breaker.lastError else { return "" }
        return "; last error" + (breaker.lastErrorAt.map { " \(Timestamp.relative($0, now: now))" } ?? "")
            + ": \(PrintableText.escape(error))"
    }

    /// An order's facts as label and value, verdict first: the text view and the order's page.
    package static func fields(_ order: Order, now: Int64, verdict: Verdict? = nil) -> [(String, String)] {
        let verdict = verdict ?? Verdict(order, now: now)
        var fields: [(String, String)] = verdict.lines + [("", "")]
        fields += [
            ("order", order.orderId), ("state", order.state.rawValue), ("user", order.userId), ("product", order.productId),
            ("transaction", order.transactionId ?? "-"),
        ]
        if let verified = order.verified {
            fields.append(("original transaction", verified.originalTransactionId))
            fields.append(("quantity", String(verified.quantity)))
        }
        let store = order.store.descriptor
        if let token = order.appAccountToken { fields.append((store.accountIdLabel, token)) }
        if order.store != .ofUnnamedOrders {
            fields.append(("store", order.store.rawValue))
            if store.provenByPurchaseToken {
                fields.append(("purchase token", order.purchaseToken?.fingerprint ?? "missing or unusable"))
            }
            if let refundAt = order.refundDeadline {
                fields.append(("\(store.owner.lowercased()) refunds", refundAt > now ? "in \(Timestamp.age(refundAt.saturatingSubtracting(now))) unless acknowledged"
                                                                : "deadline passed \(Timestamp.age(now.saturatingSubtracting(refundAt))) ago"))
            }
            if order.deliveredAt != nil && order.state == .delivering && store.deliveryNotice.beforeFinished {
                fields.append(("store finish", "delivered; telling \(store.owner) (\(store.finishName)) is pending"))
            }
        }
        fields += [
            ("environment", order.environment ?? "-"), ("proof", proof(order)), ("attempts", String(order.attempts)),
            ("next attempt", order.state == .pending ? Timestamp.relative(order.nextAttemptAt, now: now) : "-"),
            ("reason", order.reason ?? "-"), ("last error", withoutSignedData(order.lastError) ?? "-"),
            ("claimed by", order.lease.map { "\($0.owner) until \(Timestamp.relative($0.expiresAt, now: now))" } ?? "-"),
            ("created", Timestamp.relative(order.createdAt, now: now)),
            ("updated", Timestamp.relative(order.updatedAt, now: now)),
            ("finished", order.finishedAt.map { Timestamp.relative($0, now: now) } ?? "-"),
            ("origin", order.origin),
            ("refund", order.refund.map(refundText) ?? "-"),
        ]
        return fields
    }

    /// One history entry as status shows it: time, kind, outcome, facts, the detail's first line,
    /// and, for a failed delivery, the last lines the hook said (unescaped: each view escapes).
    package struct HistoryRow: Sendable {
        package var cells: [String]
        package var hookSaid: [String]
    }

    package static func historyRows(_ history: [HistoryEntry]) -> [HistoryRow] {
        history.map { e in
            var facts: [String] = []
            if let s = e.appleStatus { facts.append("apple status \(s)") }
            if let x = e.hookExit { facts.append("hook exit \(x)") }
            if let env = e.environment { facts.append(env) }
            if let ms = e.durationMs { facts.append("\(ms) ms") }
            let detailLines = (withoutSignedData(e.detail) ?? "").split(separator: "\n", omittingEmptySubsequences: true).map(String.init)
            let cells = [Timestamp.rfc3339(unixSeconds: e.at), e.kind.rawValue, e.outcome, facts.joined(separator: ", "),
                         detailLines.first ?? ""]
            // A failed delivery's own words (its stderr) are what support needs: the last lines.
            guard e.kind == .delivery, e.outcome != "delivered", detailLines.count > 1 else { return HistoryRow(cells: cells, hookSaid: []) }
            let output = DeliveryReport.tail(detailLines.dropFirst().joined(separator: "\n"))
            return HistoryRow(cells: cells, hookSaid: output.split(separator: "\n").map(String.init))
        }
    }

    package static func text(_ order: Order, history: [HistoryEntry], now: Int64, verdict: Verdict? = nil) -> String {
        let fields = fields(order, now: now, verdict: verdict)
        let width = fields.map(\.0.count).max() ?? 0
        var out = fields.map { $0.0.isEmpty ? "" : ($0.0 + ":").padding(toLength: width + 2, withPad: " ", startingAt: 0) + PrintableText.escape($0.1) }
            .joined(separator: "\n")
        out += "\n\nhistory:\n"
        let rows = historyRows(history)
        let tableLines = rows.isEmpty ? [] : table(rows.map(\.cells)).split(separator: "\n").map(String.init)
        let lines = zip(tableLines, rows).flatMap { [$0.0] + $0.1.hookSaid.map { "    hook said: " + PrintableText.escape($0) } }
        out += lines.isEmpty ? "  (none)\n" : lines.map { "  " + $0 }.joined(separator: "\n") + "\n"
        return out
    }

    /// Text with every compact JWS (a signed transaction or any other signed data) in it
    /// replaced by its SHA-256: proofs are never printed whole. Ledgers written before retry
    /// kept replaced proofs by hash carry whole ones in their history.
    static func withoutSignedData(_ text: String?) -> String? {
        guard let text, text.contains(".") else { return text }
        guard let regex = signedDataPattern else { return text }
        var out = ""
        var last = text.startIndex
        for match in regex.matches(in: text, range: NSRange(text.startIndex..., in: text)) {
            guard let range = Range(match.range, in: text) else { continue }
            out += text[last..<range.lowerBound] + "<signed data sha256 \(SHA256.hex(Data(text[range].utf8)))>"
            last = range.upperBound
        }
        return out + text[last...]
    }

    /// Three dot-separated base64url parts, the first a JSON object's (`eyJ` is base64 of `{"`).
    private static let signedDataPattern = try? NSRegularExpression(pattern: #"eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}"#)

    static func proof(_ order: Order) -> String { order.proof?.kind ?? "none" }

    static func time(_ seconds: Int64?) -> JSONValue { .string(seconds.map { Timestamp.rfc3339(unixSeconds: $0) }) }

    /// Cells are escaped first (ids and hook output are outside text), so widths count what is shown.
    static func table(_ rows: [[String]]) -> String {
        let rows = rows.map { $0.map { PrintableText.escape($0) } }
        let columns = rows.map(\.count).max() ?? 0
        let widths = (0..<columns).map { c in rows.map { c < $0.count ? $0[c].count : 0 }.max() ?? 0 }
        return rows.map { row in
            row.enumerated().map { c, cell in c == row.count - 1 ? cell : cell.padding(toLength: widths[c], withPad: " ", startingAt: 0) }
                .joined(separator: "  ")
        }.joined(separator: "\n") + "\n"
    }
}
