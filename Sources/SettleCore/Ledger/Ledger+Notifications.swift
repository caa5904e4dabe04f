import Foundation

/// What storing one notification did. `outcome` is a stable code (status, metrics).
public struct IngestResult: Sendable, Equatable {
    public var outcome: String
    public var orderId: String?
    public var detail: String?
    /// Already stored under this UUID: nothing changed.
    public var duplicate: Bool
    /// The notification left work for a pass (an order to settle, a revoke, an answer to Apple).
    public var needsPass: Bool
}

/// The rules the ledger applies to a notification, from the configuration.
public struct NotificationRules: Sendable {
    public var eligibility: PurchaseEligibility
    /// `consumption.respond`: a refund request queues an answer to Apple.
    public var answerConsumptionRequests: Bool

    public init(eligibility: PurchaseEligibility, answerConsumptionRequests: Bool) {
        self.eligibility = eligibility
        self.answerConsumptionRequests = answerConsumptionRequests
    }
}

/// A stored notification, for `settle status --notification`.
public struct NotificationRecord: Sendable, Equatable {
    public var uuid: String
    public var type: String
    public var subtype: String?
    public var environment: String
    public var signedDateMs: Int64?
    public var transactionId: String?
    public var orderId: String?
    public var source: String
    public var receivedAt: Int64
    public var outcome: String
    public var detail: String?
}

extension Ledger {
    /// Apple answers refund requests only within 12 hours (apple-protocol.md 4).
    static let consumptionDeadlineSeconds: Int64 = 12 * 3600

    /// Stores a verified notification once (by UUID) and applies it to the orders, in one write:
    /// when this returns, the row is durable (synchronous = FULL) and Apple may be told 200.
    public func ingest(_ notification: AppleNotification, source: String, rules: NotificationRules) throws(LedgerError) -> IngestResult {
        let now = time.unixSeconds
        return try locked { () throws(LedgerError) in
            try write {
                if try !database.query("SELECT 1 AS seen FROM notifications WHERE uuid = ?", [.text(notification.uuid)]).isEmpty {
                    return IngestResult(outcome: "duplicate", orderId: nil, detail: nil, duplicate: true, needsPass: false)
                }
                // The row first: what the notification leads to may refer to it.
                try database.query("""
                    INSERT INTO notifications(uuid, type, subtype, environment, signed_date_ms, transaction_id, original_transaction_id,
                                              source, received_at, outcome, payload)
                    VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, 'recorded', ?)
                    """, [.text(notification.uuid), .text(notification.type), .from(notification.subtype), .text(notification.environment),
                          .from(notification.signedDateMs), .from(notification.transaction?.transactionId),
                          .from(notification.transaction?.originalTransactionId), .text(source), .integer(now),
                          .text(notification.signedPayload)])
                var result = IngestResult(outcome: "recorded", orderId: nil, detail: nil, duplicate: false, needsPass: false)
                if let transaction = notification.transaction {
                    switch notification.effect {
                    case .purchase: result = try applyPurchase(notification, transaction, rules: rules, now: now)
                    case .refund: result = try applyRefund(notification, transaction, now: now)
                    case .refundReversed: result = try applyRefundReversed(notification, transaction, now: now)
                    case .consumptionRequest: result = try queueConsumptionAnswer(notification, transaction, rules: rules, now: now)
                    case .informational:
                        result.orderId = try orderFor(transaction)?.orderId
                        if let id = result.orderId { try note(id, notification, "recorded", nil, now: now) }
                    }
                }
                try database.query("UPDATE notifications SET order_id = ?, outcome = ?, detail = ? WHERE uuid = ?",
                                   [.from(result.orderId), .text(result.outcome), .from(result.detail), .text(notification.uuid)])
                return result
            }
        }
    }

    // MARK: - Effects (callers hold the lock, inside the write)

    /// The order about this transaction: the one holding it, else one that names it.
    private func orderFor(_ transaction: SignedTransaction) throws -> Order? {
        try database.query("""
            SELECT * FROM orders WHERE verified_transaction_id = ? OR transaction_id = ?
            ORDER BY verified_transaction_id IS NULL, created_at LIMIT 1
            """, [.text(transaction.transactionId), .text(transaction.transactionId)]).first.map(Order.init(row:))
    }

    private func note(_ orderId: String, _ n: AppleNotification, _ outcome: String, _ detail: String?, now: Int64) throws {
        let what = "\(n.type)\(n.subtype.map { "/\($0)" } ?? "") \(n.uuid)"
        try appendHistory(orderId, HistoryEntry(at: now, kind: .notification, outcome: outcome, environment: n.environment,
                                                detail: detail.map { "\(what): \($0)" } ?? what))
    }

    private func applyPurchase(_ n: AppleNotification, _ t: SignedTransaction, rules: NotificationRules, now: Int64) throws -> IngestResult {
        if let order = try orderFor(t) {
            // Apple confirmed the purchase an order waits for: settle it now rather than at its backoff.
            if order.state == .pending {
                try database.query("UPDATE orders SET next_attempt_at = ?, updated_at = ? WHERE order_id = ?",
                                   [.integer(now), .integer(now), .text(order.orderId)])
            }
            try note(order.orderId, n, "apple_confirmed", "Apple confirmed transaction \(t.transactionId)", now: now)
            return IngestResult(outcome: "attached", orderId: order.orderId, detail: nil, duplicate: false, needsPass: order.state == .pending)
        }
        let confirmed = ConfirmedPurchase(transactionId: t.transactionId, originalTransactionId: t.originalTransactionId,
                                          productId: t.productId, environment: t.environment, quantity: t.quantity,
                                          purchaseDateMs: t.purchaseDateMs, expiresDateMs: t.expiresDateMs, refunded: nil,
                                          isUpgraded: t.isUpgraded, appAccountToken: t.appAccountToken)
        let key = rules.eligibility.grantKey(confirmed)
        let probe = VerifiedPurchase(transactionId: t.transactionId, originalTransactionId: t.originalTransactionId, productId: t.productId,
                                     environment: t.environment, quantity: t.quantity, purchaseDateMs: nil, expiresDateMs: nil, grantKey: key)
        if let holder = try holderOf(probe) {
            return IngestResult(outcome: "already_granted", orderId: nil, detail: "grant key \(key) is held by \(holder.description)",
                                duplicate: false, needsPass: false)
        }
        let orderId = "apple-\(t.transactionId)"
        let user = try userFor(token: t.appAccountToken, binding: rules.eligibility.binding)
        var state = OrderState.pending
        var reason: String? = nil
        var error: String? = nil
        if user == nil {
            state = .needsAttention
            reason = AttentionReason.unclaimedPurchase.rawValue
            let token = t.appAccountToken.map { "appAccountToken \($0) maps to no user (user_binding)" } ?? "the purchase carries no appAccountToken"
            error = "Apple reported \(t.productId) transaction \(t.transactionId) (\(t.environment), purchased "
                + (t.purchaseDateMs.map { Timestamp.rfc3339(milliseconds: $0) } ?? "at an unknown time")
                + ") that no backend enqueued, and \(token); find the buyer and run: settle assign \(orderId) --user USER_ID"
        } else if rules.eligibility.products[t.productId] == nil {
            // A product missing from the configuration is settle's gap, not a reason to forget a
            // paid purchase: the order waits for a person (add the product, then settle retry).
            state = .needsAttention
            reason = AttentionReason.unknownProduct.rawValue
            error = "Apple reported transaction \(t.transactionId) of product \(t.productId), which is not in the configuration's "
                + "products; add it, then run: settle retry \(orderId)"
        }
        try database.query("""
            INSERT INTO orders(order_id, user_id, product_id, transaction_id, signed_transaction, app_account_token, state, reason,
                               last_error, origin, next_attempt_at, created_at, updated_at)
            VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, 'apple_notification', ?, ?, ?)
            """, [.text(orderId), .text(user ?? ""), .text(t.productId), .text(t.transactionId), .from(n.signedTransactionInfo),
                  .from(t.appAccountToken), .text(state.rawValue), .from(reason), .from(error), .integer(now), .integer(now), .integer(now)])
        let outcome = state == .pending ? "order_created" : reason == AttentionReason.unknownProduct.rawValue ? "unknown_product" : "unclaimed"
        try note(orderId, n, state == .pending ? "order_created" : reason ?? outcome,
                 state == .pending ? user.map { "Apple reported transaction \(t.transactionId) that no backend enqueued; order created for user \($0)" } : error,
                 now: now)
        return IngestResult(outcome: outcome, orderId: orderId, detail: error, duplicate: false, needsPass: state == .pending)
    }

    /// The user an appAccountToken stands for: the token itself when user ids are the tokens,
    /// else the user of an order that carries it. A uuid5 token cannot be reversed.
    private func userFor(token given: String?, binding: UserBinding) throws -> String? {
        guard let given, let token = UUID(uuidString: given)?.uuidString.lowercased() else { return nil }
        if binding.tokenSource == .userId {
            // Apple writes tokens in lower case, a backend's UUID user ids may be upper case: the
            // user's own spelling when an order already names them, else the token as Apple gave it.
            return try database.query("""
                SELECT user_id FROM orders WHERE lower(user_id) = ? ORDER BY created_at LIMIT 1
                """, [.text(token)]).first?.string("user_id") ?? given
        }
        return try database.query("""
            SELECT user_id FROM orders WHERE lower(app_account_token) = ? AND user_id != '' ORDER BY created_at LIMIT 1
            """, [.text(token)]).first?.string("user_id")
    }

    private func applyRefund(_ n: AppleNotification, _ t: SignedTransaction, now: Int64) throws -> IngestResult {
        guard let order = try orderFor(t) else {
            return IngestResult(outcome: "no_order", orderId: nil, detail: "settle holds no order for transaction \(t.transactionId)",
                                duplicate: false, needsPass: false)
        }
        try database.query("UPDATE orders SET refunded_at = ?, refund_kind = ?, refund_reason = ?, updated_at = ? WHERE order_id = ?",
                           [.integer(now), .text(n.type), .from(n.revocationReason), .integer(now), .text(order.orderId)])
        let why = "Apple \(n.type == "REVOKE" ? "revoked" : "refunded") transaction \(t.transactionId)"
            + (n.revocationReason.map { " (revocationReason \($0))" } ?? "")
        var outcome: String
        var needsPass = false
        switch order.state {
        case .pending, .needsAttention:
            try finalize(order.orderId, state: .rejected, reason: RejectionReason.refunded.rawValue,
                         error: "\(why) before it was delivered; it will never be delivered", environment: nil, now: now)
            outcome = "never_delivered"
        case .verifying, .rejected:
            // A verification in flight sees the refund when it records its result (recordVerified).
            outcome = "refund_recorded"
        case .delivering, .finished:
            try database.query("""
                INSERT OR IGNORE INTO revocations(transaction_id, order_id, kind, next_attempt_at, created_at, updated_at)
                VALUES (?, ?, ?, ?, ?, ?)
                """, [.text(t.transactionId), .text(order.orderId), .text(n.type), .integer(now), .integer(now), .integer(now)])
            outcome = "revoke_queued"
            needsPass = true
        }
        try note(order.orderId, n, outcome, why, now: now)
        return IngestResult(outcome: outcome, orderId: order.orderId, detail: why, duplicate: false, needsPass: needsPass)
    }

    private func applyRefundReversed(_ n: AppleNotification, _ t: SignedTransaction, now: Int64) throws -> IngestResult {
        guard let order = try orderFor(t) else {
            return IngestResult(outcome: "no_order", orderId: nil, detail: nil, duplicate: false, needsPass: false)
        }
        try database.query("UPDATE orders SET refunded_at = NULL, refund_kind = NULL, refund_reason = NULL, updated_at = ? WHERE order_id = ?",
                           [.integer(now), .text(order.orderId)])
        let cancelled = try database.query("""
            UPDATE revocations SET state = 'cancelled', updated_at = ? WHERE transaction_id = ? AND state = 'pending' RETURNING 1 AS n
            """, [.integer(now), .text(t.transactionId)]).count
        let revoked = try !database.query("SELECT 1 AS n FROM revocations WHERE transaction_id = ? AND state = 'revoked'",
                                          [.text(t.transactionId)]).isEmpty
        var outcome = "refund_reversed"
        var detail = "Apple reversed the refund of transaction \(t.transactionId)"
        var needsPass = false
        if cancelled > 0 {
            outcome = "revoke_cancelled"
            detail += "; the revoke was not sent yet and is cancelled"
        } else if revoked {
            outcome = "regrant_needed"
            detail += "; the revoke hook already took the goods back: grant them again by hand"
        } else if order.state == .rejected && order.reason == RejectionReason.refunded.rawValue {
            try database.query("""
                UPDATE orders SET state = 'pending', attempts = 0, next_attempt_at = ?, reason = NULL, last_error = NULL, updated_at = ?
                WHERE order_id = ?
                """, [.integer(now), .integer(now), .text(order.orderId)])
            outcome = "requeued"
            detail += "; the order, never delivered, is pending again"
            needsPass = true
        }
        try note(order.orderId, n, outcome, detail, now: now)
        return IngestResult(outcome: outcome, orderId: order.orderId, detail: detail, duplicate: false, needsPass: needsPass)
    }

    private func queueConsumptionAnswer(_ n: AppleNotification, _ t: SignedTransaction, rules: NotificationRules,
                                        now: Int64) throws -> IngestResult {
        let order = try orderFor(t)
        let reason = n.consumptionRequestReason.map { " (\($0))" } ?? ""
        guard rules.answerConsumptionRequests else {
            if let order { try note(order.orderId, n, "refund_requested", "the customer asked for a refund\(reason); consumption.respond is off", now: now) }
            return IngestResult(outcome: "recorded", orderId: order?.orderId, detail: nil, duplicate: false, needsPass: false)
        }
        try database.query("""
            INSERT INTO consumption_answers(notification_uuid, transaction_id, environment, order_id, next_attempt_at, deadline_at, updated_at)
            VALUES (?, ?, ?, ?, ?, ?, ?)
            """, [.text(n.uuid), .text(t.transactionId), .text(n.environment), .from(order?.orderId), .integer(now),
                  .integer(now + Ledger.consumptionDeadlineSeconds), .integer(now)])
        if let order { try note(order.orderId, n, "refund_requested", "the customer asked for a refund\(reason); answering Apple", now: now) }
        return IngestResult(outcome: "answer_queued", orderId: order?.orderId, detail: nil, duplicate: false, needsPass: true)
    }

    /// `settle assign`: an unclaimed purchase gets its buyer and is due now.
    public func assign(orderId: String, userId: String, note: String?) throws(LedgerError) {
        let now = time.unixSeconds
        try locked { () throws(LedgerError) in
            try write {
                guard let row = try database.query("SELECT state, reason FROM orders WHERE order_id = ?", [.text(orderId)]).first else {
                    throw LedgerError.invalid("no order \(orderId) in the ledger")
                }
                guard row.string("state") == OrderState.needsAttention.rawValue,
                      row.string("reason") == AttentionReason.unclaimedPurchase.rawValue else {
                    throw LedgerError.invalid("order \(orderId) is \(row.string("state") ?? "?") (\(row.string("reason") ?? "no reason")); "
                                              + "only needs_attention orders with reason unclaimed_purchase can be assigned")
                }
                try database.query("""
                    UPDATE orders SET user_id = ?, state = 'pending', attempts = 0, next_attempt_at = ?, reason = NULL, last_error = NULL,
                           updated_at = ? WHERE order_id = ?
                    """, [.text(userId), .integer(now), .integer(now), .text(orderId)])
                try appendHistory(orderId, HistoryEntry(at: now, kind: .assign, outcome: "assigned",
                                                        detail: "to user \(userId)" + (note.map { ": \($0)" } ?? "")))
            }
        }
    }

    // MARK: - Reading

    public func notification(uuid: String) throws(LedgerError) -> NotificationRecord? {
        guard try schemaVersion() >= 5 else { return nil }
        return try read { try database.query("SELECT * FROM notifications WHERE uuid = ?", [.text(uuid)]).first.map(NotificationRecord.init(row:)) }
    }

    /// The notifications about one order, oldest first.
    public func notifications(orderId: String) throws(LedgerError) -> [NotificationRecord] {
        guard try schemaVersion() >= 5 else { return [] }
        return try read {
            try database.query("SELECT * FROM notifications WHERE order_id = ? ORDER BY received_at, uuid", [.text(orderId)])
                .map(NotificationRecord.init(row:))
        }
    }

    /// When the newest notification arrived (Unix seconds), nil when none ever did.
    public func newestNotificationAt() throws(LedgerError) -> Int64? {
        guard try schemaVersion() >= 5 else { return nil }
        return try read { try database.query("SELECT max(received_at) AS newest FROM notifications").first?.int("newest") }
    }
}

extension NotificationRecord {
    init(row: SQLiteRow) {
        self.init(uuid: row.string("uuid") ?? "", type: row.string("type") ?? "", subtype: row.string("subtype"),
                  environment: row.string("environment") ?? "", signedDateMs: row.int("signed_date_ms"),
                  transactionId: row.string("transaction_id"), orderId: row.string("order_id"), source: row.string("source") ?? "",
                  receivedAt: row.int("received_at") ?? 0, outcome: row.string("outcome") ?? "", detail: row.string("detail"))
    }
}
