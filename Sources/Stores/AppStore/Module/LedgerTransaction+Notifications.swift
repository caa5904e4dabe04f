import Foundation
import SettleBase
import SettleModel
import SettleAppStore
import SettleLedger

/// What storing one notification did. `outcome` is a stable code (status, metrics).
package struct IngestResult: Sendable, Equatable {
    package var outcome: String
    package var orderId: String?
    package var detail: String?
    /// Already stored under this UUID: nothing changed.
    package var duplicate: Bool
    /// The notification left work for a pass (an order to settle, a revoke, an answer to Apple).
    package var needsPass: Bool

    package init(outcome: String, orderId: String? = nil, detail: String? = nil, duplicate: Bool, needsPass: Bool) {
        (self.outcome, self.orderId, self.detail, self.duplicate) = (outcome, orderId, detail, duplicate)
        self.needsPass = needsPass
    }
}

/// The rules the ledger applies to a notification, from the configuration.
package struct NotificationRules: Sendable {
    package var eligibility: PurchaseEligibility
    /// `consumption.respond`: a refund request queues an answer to Apple.
    package var answerConsumptionRequests: Bool

    package init(eligibility: PurchaseEligibility, answerConsumptionRequests: Bool) {
        self.eligibility = eligibility
        self.answerConsumptionRequests = answerConsumptionRequests
    }
}

/// What a notification does to the ledger, written once for both engines: each runs inside the
/// caller's write transaction (`TransactionalLedger.writing`), so the notification's row and
/// all its effects commit together or not at all.
extension LedgerTransaction {
    /// Stores a verified notification once (by UUID) and applies it to the orders. The insert
    /// is the claim: a second host storing the same UUID waits for the first one's transaction
    /// (the primary key), then inserts nothing and answers "duplicate"; effects follow only a
    /// row this transaction inserted.
    package func ingest(_ notification: AppleNotification, source: String, rules: NotificationRules, now: Int64) throws -> IngestResult {
        // Two notifications about one purchase (a purchase and its refund, reaching two hosts)
        // apply one after the other, each seeing what the other did.
        if let lock = dialect.keyLock, let transaction = notification.transaction {
            try query(lock, [.text(transaction.originalTransactionId)])
        }
        // The row first: what the notification leads to may refer to it.
        let inserted = try query("""
            INSERT INTO notifications(uuid, type, subtype, environment, signed_date_ms, transaction_id, original_transaction_id,
                                      source, received_at, outcome, payload)
            VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, 'recorded', ?)
            ON CONFLICT (uuid) DO NOTHING RETURNING uuid
            """, [.text(notification.uuid), .text(notification.type), .from(notification.subtype), .text(notification.environment.rawValue),
                  .from(notification.signedDateMs), .from(notification.transaction?.transactionId),
                  .from(notification.transaction?.originalTransactionId), .text(source), .integer(now),
                  .text(notification.signedPayload)])
        guard !inserted.isEmpty else {
            return IngestResult(outcome: "duplicate", orderId: nil, detail: nil, duplicate: true, needsPass: false)
        }
        var result = IngestResult(outcome: "recorded", orderId: nil, detail: nil, duplicate: false, needsPass: false)
        if let transaction = notification.transaction {
            switch notification.effect {
            case .purchase: result = try applyPurchase(notification, transaction, source: source, rules: rules, now: now)
            case .refund: result = try applyRefund(notification, transaction, now: now)
            case .refundReversed: result = try applyRefundReversed(notification, transaction, now: now)
            case .consumptionRequest: result = try queueConsumptionAnswer(notification, transaction, rules: rules, now: now)
            case .informational:
                result.orderId = try orderFor(transaction)?.orderId
                if let id = result.orderId { try note(id, notification, "recorded", nil, now: now) }
            }
        }
        try query("UPDATE notifications SET order_id = ?, outcome = ?, detail = ? WHERE uuid = ?",
                  [.from(result.orderId), .text(result.outcome), .from(result.detail), .text(notification.uuid)])
        return result
    }

    // MARK: - Effects (inside the caller's write transaction)

    /// The order about this transaction: the one holding it, else one that names it.
    private func orderFor(_ transaction: SignedTransaction) throws -> Order? {
        try ordersAbout(transaction).first
    }

    /// Every order about this transaction: the one holding its grant first, then those that name
    /// it, oldest first; then live orders whose only proof is a signed transaction of it (a row
    /// a backend wrote without `transaction_id`). Locked until the transaction ends: a claim on
    /// another host waits, or skips them, and sees what this notification did to them.
    private func ordersAbout(_ transaction: SignedTransaction) throws -> [Order] {
        let named = try query("""
            SELECT * FROM orders WHERE verified_transaction_id = ? OR transaction_id = ?
            ORDER BY NOT EXISTS (SELECT 1 FROM grants g WHERE g.order_id = orders.order_id), verified_transaction_id IS NULL, created_at
            \(dialect.lockRows)
            """, [.text(transaction.transactionId), .text(transaction.transactionId)]).map { Order(row: $0) }
        let unnamed = try query("""
            SELECT * FROM orders WHERE transaction_id IS NULL AND verified_transaction_id IS NULL AND signed_transaction IS NOT NULL
            AND state IN ('pending','verifying','delivering','needs_attention') ORDER BY created_at
            """).filter { row in
            row.string("signed_transaction").flatMap(Order.transactionId(namedIn:)) == transaction.transactionId
        }.compactMap { row in
            try query("SELECT * FROM orders WHERE order_id = ?\(dialect.lockRows)", [.from(row.string("order_id"))]).first.map { Order(row: $0) }
        }
        return named + unnamed
    }

    private func holdsGrant(_ orderId: String) throws -> Bool {
        try !query("SELECT 1 AS held FROM grants WHERE order_id = ?", [.text(orderId)]).isEmpty
    }

    private func note(_ orderId: String, _ n: AppleNotification, _ outcome: String, _ detail: String?, now: Int64) throws {
        let what = "\(n.type)\(n.subtype.map { "/\($0)" } ?? "") \(n.uuid)"
        try appendHistory(orderId, HistoryEntry(at: now, kind: .notification, outcome: outcome, environment: n.environment.rawValue,
                                                detail: detail.map { "\(what): \($0)" } ?? what))
    }

    /// Apple confirms a purchase. It is attached only to the order that holds its grant, or to a
    /// live order of the purchase's own user that names it; an order of that user rejected
    /// because Apple did not find the purchase then is re-queued with Apple's signed
    /// transaction as its new proof. Otherwise the purchase gets its own `apple-<txn>` order, as
    /// if no order named it: a stranger's order naming a guessed id squats nothing, and the
    /// grant key still keeps the purchase delivered at most once.
    private func applyPurchase(_ n: AppleNotification, _ t: SignedTransaction, source: String, rules: NotificationRules,
                               now: Int64) throws -> IngestResult {
        let confirmed = ConfirmedPurchase(transactionId: t.transactionId, originalTransactionId: t.originalTransactionId,
                                          productId: t.productId, environment: t.environment.rawValue, quantity: t.quantity,
                                          purchaseDateMs: t.purchaseDateMs, expiresDateMs: t.expiresDateMs, refunded: nil,
                                          isUpgraded: t.isUpgraded, appAccountToken: t.appAccountToken)
        let key = rules.eligibility.grantKey(confirmed)
        let orders = try ordersAbout(t)
        if let holder = try query("""
            SELECT o.* FROM grants g JOIN orders o ON o.order_id = g.order_id WHERE g.grant_key = ? OR g.transaction_id = ? LIMIT 1
            """, [.text(key), .text(t.transactionId)]).first.map { Order(row: $0) } {
            try note(holder.orderId, n, "apple_confirmed", "Apple confirmed transaction \(t.transactionId), which this order holds", now: now)
            return IngestResult(outcome: "attached", orderId: holder.orderId, detail: nil, duplicate: false, needsPass: false)
        }
        let probe = VerifiedPurchase(transactionId: t.transactionId, originalTransactionId: t.originalTransactionId, productId: t.productId,
                                     environment: t.environment.rawValue, quantity: t.quantity, purchaseDateMs: nil, expiresDateMs: nil, grantKey: key)
        if let holder = try holderOf(probe) {
            return IngestResult(outcome: "already_granted", orderId: nil, detail: "grant key \(key) is held by \(holder.description)",
                                duplicate: false, needsPass: false)
        }
        // The purchase's own user: its token binds to the order's user, or stands for that user;
        // else the user a signed AppTransaction linked its appTransactionId to. A family member's
        // shared purchase carries no token of the member's (at most the buyer's): only the
        // member's own appTransactionId binds it, never to the buyer.
        let token = t.isFamilyShared ? nil : t.appAccountToken
        let linked = try linkedUsers(t.appTransactionId.map { [$0] } ?? [])
        let linkedUser = t.appTransactionId.flatMap { linked[$0] }.flatMap { $0.count == 1 ? $0.first : nil }
        let user = try userFor(token: token, binding: rules.eligibility.binding) ?? linkedUser
        let buyers = { (order: Order) in
            rules.eligibility.binding.verdict(purchaseToken: token, order: order, proofSigned: true,
                                              appTransactionId: t.appTransactionId, linked: linked) == .bound
                || (user != nil && !order.userId.isEmpty && order.userId == user)
        }
        if let live = orders.first(where: { $0.state != .finished && $0.state != .rejected && buyers($0) }) {
            // Apple confirmed the purchase an order waits for: settle it now rather than at its backoff.
            if live.state == .pending {
                try query("UPDATE orders SET next_attempt_at = ?, updated_at = ? WHERE order_id = ?",
                                   [.integer(now), .integer(now), .text(live.orderId)])
            }
            try note(live.orderId, n, "apple_confirmed", "Apple confirmed transaction \(t.transactionId)", now: now)
            return IngestResult(outcome: "attached", orderId: live.orderId, detail: nil, duplicate: false, needsPass: live.state == .pending)
        }
        if let stale = orders.first(where: { $0.state == .rejected && $0.reason == RejectionReason.transactionNotFound.rawValue && buyers($0) }),
           let jws = n.signedTransactionInfo {
            let detail = "Apple confirmed transaction \(t.transactionId), which it had not found for this order: pending again, "
                + "with Apple's signed transaction as its new proof"
                + (stale.signedTransaction.map { "; previous signed transaction sha256 \(SHA256.hex(Data($0.utf8)))" } ?? "")
            try query("""
                UPDATE orders SET signed_transaction = ?, state = 'pending', attempts = 0, next_attempt_at = ?, reason = NULL,
                       last_error = NULL, finished_at = NULL, updated_at = ? WHERE order_id = ?
                """, [.text(jws), .integer(now), .integer(now), .text(stale.orderId)])
            try note(stale.orderId, n, "requeued", detail, now: now)
            return IngestResult(outcome: "requeued", orderId: stale.orderId, detail: detail, duplicate: false, needsPass: true)
        }
        let orderId = NotificationTransitions.appleOrderId(t.transactionId)
        if orders.contains(where: { $0.orderId == orderId }) {
            try note(orderId, n, "apple_confirmed", "Apple confirmed transaction \(t.transactionId) again", now: now)
            return IngestResult(outcome: "attached", orderId: orderId, detail: nil, duplicate: false, needsPass: false)
        }
        let purchased = t.purchaseDateMs.map { Timestamp.rfc3339(milliseconds: $0) } ?? "at an unknown time"
        var state = OrderState.pending
        var reason: String? = nil
        var error: String? = nil
        var outcome = "order_created"
        let started = source == "history"
            ? try query("SELECT started_at_ms FROM notification_cursor WHERE environment = ?", [.text(n.environment.rawValue)])
                .first?.int("started_at_ms")
            : nil
        let backfilled = started.map { (t.purchaseDateMs ?? n.signedDateMs ?? 0) < $0 } ?? false
        if user == nil {
            state = .needsAttention
            reason = AttentionReason.unclaimedPurchase.rawValue
            outcome = "unclaimed"
            var token = t.isFamilyShared ? "it is a family member's shared purchase, which carries no token of the member's"
                : t.appAccountToken.map { "appAccountToken \($0) maps to no user (user_binding)" } ?? "the purchase carries no appAccountToken"
            if let id = t.appTransactionId {
                let users = linked[id].map { " is linked to more than one user (\($0.sorted().joined(separator: ", ")))" }
                    ?? " is linked to no user (settle link)"
                token += ", and its appTransactionId \(id)\(users)"
            }
            // Orders that name the transaction but cannot be tied to its buyer: support's first lead.
            let naming = orders.prefix(3).map { "\($0.orderId) (user \($0.userId), \($0.state.rawValue))" }
            error = "Apple reported \(t.productId) transaction \(t.transactionId) (\(t.environment), purchased \(purchased)) that no backend "
                + "enqueued for its buyer, and \(token); "
                + (naming.isEmpty ? "" : "orders naming it that nothing ties to the buyer: \(naming.joined(separator: ", ")) "
                    + "(if one of them is the buyer's and delivers it, assigning this one ends already_granted); ")
                + (backfilled ? "it was made before settle first read Apple's history, so the app may have granted it already: "
                    + "if it did, settle resolve \(orderId) --as granted_by_hand; else find the buyer and run: "
                    : "find the buyer and run: ")
                + "settle assign \(orderId) --user USER_ID"
        } else if rules.eligibility.products[t.productId] == nil {
            // A product missing from the configuration is settle's gap, not a reason to forget a
            // paid purchase: the order waits for a person (add the product, then settle retry).
            state = .needsAttention
            reason = AttentionReason.unknownProduct.rawValue
            outcome = "unknown_product"
            error = "Apple reported transaction \(t.transactionId) of product \(t.productId), which is not in the configuration's "
                + "products; add it, then run: settle retry \(orderId)"
        } else if backfilled, let user, let started {
            // Catch-up found a purchase made before settle first listened: the app's own flow
            // most likely granted it. Only a person can tell; settle never guesses.
            state = .needsAttention
            reason = AttentionReason.backfilledPurchase.rawValue
            outcome = "backfilled"
            error = "Apple's history lists \(t.productId) transaction \(t.transactionId) of user \(user) (\(t.environment), purchased "
                + "\(purchased)), made before settle first read Apple's history (\(Timestamp.rfc3339(milliseconds: started))): "
                + "the app may have granted it already. If it did: settle resolve \(orderId) --as granted_by_hand; if not: settle retry \(orderId)"
        }
        try query("""
            INSERT INTO orders(order_id, user_id, product_id, transaction_id, signed_transaction, app_account_token, state, reason,
                               last_error, origin, next_attempt_at, created_at, updated_at)
            VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, 'apple_notification', ?, ?, ?)
            """, [.text(orderId), .text(user ?? ""), .text(t.productId), .text(t.transactionId), .from(n.signedTransactionInfo),
                  .from(token), .text(state.rawValue), .from(reason), .from(error), .integer(now), .integer(now), .integer(now)])
        // PostgreSQL makes every inserted row a backend's pending order (the trigger that keeps a
        // backend role from inserting rows in flight); settle's own row gets its state here, in
        // the same transaction, so no other host ever sees it otherwise. On SQLite this changes nothing.
        try query("UPDATE orders SET state = ?, reason = ?, last_error = ?, origin = 'apple_notification' WHERE order_id = ?",
                  [.text(state.rawValue), .from(reason), .from(error), .text(orderId)])
        try note(orderId, n, state == .pending ? "order_created" : reason ?? outcome,
                 error ?? user.map { "Apple reported transaction \(t.transactionId) that no backend enqueued; order created for user \($0)" },
                 now: now)
        return IngestResult(outcome: outcome, orderId: orderId, detail: error, duplicate: false, needsPass: state == .pending)
    }

    /// The user an appAccountToken stands for: the token itself when user ids are the tokens,
    /// else the buyer of a granted order that carries it. A uuid5 token cannot be reversed.
    private func userFor(token given: String?, binding: UserBinding) throws -> String? {
        guard let given, let token = UUID(uuidString: given)?.uuidString.lowercased() else { return nil }
        if binding.tokenSource == .userId {
            // Apple writes tokens in lower case, a backend's UUID user ids may be upper case: the
            // user's own spelling when an order already names them, else the token as Apple gave it.
            // A transferred order's user is its holder, not this token's user: it is not found
            // here, and the token stands for its user as given.
            return try query("""
                SELECT user_id FROM orders WHERE lower(user_id) = ? ORDER BY created_at LIMIT 1
                """, [.text(token)]).first?.string("user_id") ?? given
        }
        return try query("""
            SELECT \(OrderBuyer.column) AS buyer FROM orders o
            WHERE lower(o.app_account_token) = ? AND o.user_id != '' AND \(OrderBuyer.verified) ORDER BY o.created_at LIMIT 1
            """, [.text(token)]).first?.string("buyer")
    }

    /// Apple took the purchase back. Every order about it learns so: one that never reached the
    /// hook is never delivered; one that was delivered, or whose delivery's outcome is unknown
    /// (it holds its grant: the hook timed out, settle died during it), owes a revoke.
    private func applyRefund(_ n: AppleNotification, _ t: SignedTransaction, now: Int64) throws -> IngestResult {
        let orders = try ordersAbout(t)
        guard let first = orders.first else {
            return IngestResult(outcome: "no_order", orderId: nil, detail: "settle holds no order for transaction \(t.transactionId)",
                                duplicate: false, needsPass: false)
        }
        let revocation = Self.revocation(of: t)
        let why = "Apple \(n.type == "REVOKE" ? "revoked" : "refunded") transaction \(t.transactionId)"
            + (n.revocationReason.map { " (revocationReason \($0))" } ?? "")
            + (revocation.type.map { " (\($0)\(revocation.percentage.map { " \($0) milliunits" } ?? ""))" } ?? "")
        var outcomes: [String: String] = [:]
        var needsPass = false
        for order in orders {
            try query("UPDATE orders SET refunded_at = ?, refund_kind = ?, refund_reason = ?, updated_at = ? WHERE order_id = ?",
                               [.integer(now), .text(n.type), .from(n.revocationReason), .integer(now), .text(order.orderId)])
            try cancelGrantRedeliveries(order.orderId, refund: why, now: now)
            let held = try holdsGrant(order.orderId)
            var outcome: String
            var detail = why
            switch order.state {
            case .verifying:
                // A verification in flight sees the refund when it records its result (recordVerified).
                outcome = "refund_recorded"
            case .delivering, .finished:
                outcome = try queueRevocation(t, order: order.orderId, kind: n.type, now: now)
            case .pending, .needsAttention, .rejected:
                if held {
                    // The hook ran (or may have) and its outcome is unknown: take the goods back
                    // anyway; a receiver that never granted them answers the revoke as done.
                    if order.state != .rejected {
                        try finalize(order.orderId, state: .rejected, reason: RejectionReason.refunded.rawValue,
                                     error: "\(why); the delivery's outcome was not known, so a revoke is sent; it will never be delivered",
                                     environment: nil, now: now)
                    }
                    detail += "; the delivery's outcome is unknown, so the goods are revoked"
                    outcome = try queueRevocation(t, order: order.orderId, kind: n.type, now: now)
                } else if order.state == .rejected {
                    outcome = "refund_recorded"
                } else {
                    try finalize(order.orderId, state: .rejected, reason: RejectionReason.refunded.rawValue,
                                 error: "\(why) before it was delivered; it will never be delivered", environment: nil, now: now)
                    outcome = "never_delivered"
                }
            }
            needsPass = needsPass || outcome == "revoke_queued"
            outcomes[order.orderId] = outcome
            try note(order.orderId, n, outcome, detail, now: now)
        }
        return IngestResult(outcome: outcomes[first.orderId] ?? "refund_recorded", orderId: first.orderId, detail: why,
                            duplicate: false, needsPass: needsPass)
    }

    /// Owes a revoke of the transaction. A revoke already owed or done for this refund is kept
    /// as it is; one cancelled by a reversed refund is owed again (under a new key when an
    /// earlier round may have reached the hook).
    private func queueRevocation(_ t: SignedTransaction, order orderId: String, kind: String, now: Int64) throws -> String {
        let transactionId = t.transactionId
        let revocation = Self.revocation(of: t)
        let row = try query("SELECT state FROM revocations WHERE transaction_id = ?", [.text(transactionId)]).first
        switch row?.string("state") {
        case nil:
            try query("""
                INSERT INTO revocations(transaction_id, order_id, kind, next_attempt_at, created_at, updated_at, revocation_type,
                                        revocation_percentage)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?)
                """, [.text(transactionId), .text(orderId), .text(kind), .integer(now), .integer(now), .integer(now),
                      .from(revocation.type), .from(revocation.percentage)])
            return "revoke_queued"
        case "cancelled":
            try query("""
                UPDATE revocations SET state = 'pending', order_id = ?, kind = ?, attempts = 0, next_attempt_at = ?, last_error = NULL,
                       updated_at = ?, revocation_type = ?, revocation_percentage = ? WHERE transaction_id = ?
                """, [.text(orderId), .text(kind), .integer(now), .integer(now), .from(revocation.type), .from(revocation.percentage),
                      .text(transactionId)])
            return "revoke_queued"
        default:
            return "revoke_already_queued"
        }
    }

    /// Apple's `revocationType` (`REFUND_FULL`, `REFUND_PRORATED`, `FAMILY_REVOKE`, or one Apple
    /// adds later, kept as sent) and `revocationPercentage` (milliunits, 50000 = 50 %), when given.
    /// https://developer.apple.com/documentation/appstoreserverapi/revocationtype
    static func revocation(of t: SignedTransaction) -> (type: String?, percentage: Int64?) {
        let type = t.payload["revocationType"]?.looseString.flatMap { $0.isEmpty || $0.utf8.count > 64 ? nil : $0 }
        let percentage = t.payload["revocationPercentage"]?.looseInt64.flatMap { (0...100_000).contains($0) ? $0 : nil }
        return (type, percentage)
    }

    private func applyRefundReversed(_ n: AppleNotification, _ t: SignedTransaction, now: Int64) throws -> IngestResult {
        guard let order = try orderFor(t) else {
            return IngestResult(outcome: "no_order", orderId: nil, detail: nil, duplicate: false, needsPass: false)
        }
        try query("UPDATE orders SET refunded_at = NULL, refund_kind = NULL, refund_reason = NULL, updated_at = ? WHERE order_id = ?",
                           [.integer(now), .text(order.orderId)])
        let revocation = try query("SELECT state, attempts FROM revocations WHERE transaction_id = ?", [.text(t.transactionId)]).first
        var outcome = "refund_reversed"
        var detail = "Apple reversed the refund of transaction \(t.transactionId)"
        var needsPass = false
        // The revoke is no longer owed. When it may have reached the hook, a later refund's
        // revoke gets a round (and key) of its own, so a receiver that saw this one acts again.
        let state = revocation?.string("state")
        let reached = state == "revoked" || state == "needs_attention" || (revocation?.int("attempts") ?? 0) > 0
        if let state, state != "cancelled" {
            try query("""
                UPDATE revocations SET state = 'cancelled', round = round + ?, last_error = 'Apple reversed the refund', updated_at = ?
                WHERE transaction_id = ?
                """, [.integer(reached ? 1 : 0), .integer(now), .text(t.transactionId)])
            if state == "revoked" {
                outcome = "regrant_needed"
                detail += "; the revoke hook already took the goods back: grant them again by hand"
            } else if reached {
                outcome = "regrant_needed"
                detail += "; a revoke was attempted and its outcome is not known: check whether the goods were taken back"
            } else {
                outcome = "revoke_cancelled"
                detail += "; the revoke was not sent yet and is cancelled"
            }
        }
        if order.state == .rejected && order.reason == RejectionReason.refunded.rawValue {
            try query("""
                UPDATE orders SET state = 'pending', attempts = 0, next_attempt_at = ?, reason = NULL, last_error = NULL, updated_at = ?
                WHERE order_id = ?
                """, [.integer(now), .integer(now), .text(order.orderId)])
            if outcome == "refund_reversed" { outcome = "requeued" }
            detail += "; the order is pending again"
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
        try query("""
            INSERT INTO consumption_answers(notification_uuid, transaction_id, environment, order_id, next_attempt_at, deadline_at, updated_at)
            VALUES (?, ?, ?, ?, ?, ?, ?)
            """, [.text(n.uuid), .text(t.transactionId), .text(n.environment.rawValue), .from(order?.orderId), .integer(now),
                  .integer(now + NotificationTransitions.consumptionDeadlineSeconds), .integer(now)])
        if let order { try note(order.orderId, n, "refund_requested", "the customer asked for a refund\(reason); answering Apple", now: now) }
        return IngestResult(outcome: "answer_queued", orderId: order?.orderId, detail: nil, duplicate: false, needsPass: true)
    }
}

/// A notification stored through the ledger, each in its own write transaction.
extension TransactionalLedger {
    /// Stores a verified notification once (by UUID) and applies it to the orders, in one write
    /// transaction: when this returns, the row and its effects are committed (durable), and
    /// Apple may be told 200. Whichever host stores a UUID first applies it; any other finds it
    /// stored and changes nothing (`duplicate`).
    package func ingest(_ notification: AppleNotification, source: String, rules: NotificationRules) throws(LedgerError) -> IngestResult {
        let now = time.unixSeconds
        return try writing { db in try db.ingest(notification, source: source, rules: rules, now: now) }
    }

    /// Stores a verified notification whose effect could not be applied (a write about it failed:
    /// a row a backend broke, a constraint) without its effect, `not_applied` with the error, so
    /// the history catch-up moves on and a person sees it (`settle status --notification UUID`).
    /// Throws when even that cannot be written: the ledger itself is failing.
    package func recordUnapplied(_ notification: AppleNotification, source: String, error: String) throws(LedgerError) {
        let now = time.unixSeconds
        try writing { db in
            try db.query("""
                INSERT INTO notifications(uuid, type, subtype, environment, signed_date_ms, transaction_id,
                                          original_transaction_id, source, received_at, outcome, detail, payload)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, 'not_applied', ?, ?)
                ON CONFLICT (uuid) DO NOTHING
                """, [.text(notification.uuid), .text(notification.type), .from(notification.subtype), .text(notification.environment.rawValue),
                      .from(notification.signedDateMs), .from(notification.transaction?.transactionId),
                      .from(notification.transaction?.originalTransactionId), .text(source), .integer(now),
                      .text("not applied: \(error); a person must apply it"),
                      .text(notification.signedPayload)])
        }
    }
}
