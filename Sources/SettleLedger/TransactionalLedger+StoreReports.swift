import Foundation
import SettleBase
import SettleModel

/// A purchase a store reported of its own accord (a notification), read from the store and found
/// purchased: what settle does with it is the same for every store (`TransactionalLedger.place`).
package struct ReportedPurchase: Sendable {
    package var store: Store
    /// The purchase's key: its grant key and its proof's lookup key (a purchase order id, a purchase id).
    package var key: String
    package var productId: String
    package var proof: StoreProof
    /// The account id the purchase names its buyer by (a developer payload), if any.
    package var accountId: String?
    /// The id of the order made for it when no order holds it (`huawei-…`, `onestore-…`).
    package var orderId: String
    /// What the order's history says it came from (`huawei_notification`).
    package var origin: String
    /// Who reported what, for the history: "Huawei reported purchase order X (INITIAL_BUY)".
    package var reported: String

    package init(store: Store, key: String, productId: String, proof: StoreProof, accountId: String?, orderId: String, origin: String,
                 reported: String) {
        (self.store, self.key, self.productId, self.proof, self.accountId) = (store, key, productId, proof, accountId)
        (self.orderId, self.origin, self.reported) = (orderId, origin, reported)
    }
}

/// What a store module reports to the ledger of its own accord, in the store's terms and the
/// core's rules, so each store does not write them again: a purchase it refunded (taken back once
/// from the order that holds it, never delivered to one that does not yet), a purchase no backend
/// enqueued (an order of its own), and an order it says changed (due now).
extension TransactionalLedger {
    /// A pending order its store says changed (a payment completed, a notification arrived) is due
    /// now, not at its backoff.
    package func makeDue(orderId: String) throws(LedgerError) {
        let now = time.unixSeconds
        try writing { db in
            try db.query("UPDATE orders SET next_attempt_at = ? WHERE order_id = ? AND state = 'pending' AND next_attempt_at > ?",
                         [.integer(now), .text(orderId), .integer(now)])
        }
    }

    /// Places a purchase its store reported: nothing when its grant is held already; the order
    /// waiting for it (its proof's key is the purchase's) made due now; else an order of its own for
    /// the user its account id names (`user_binding.app_account_token: user_id`: the id is the
    /// user; `order`: the one user whose orders of the store carry it), or for nobody
    /// (`unclaimed_purchase`, for `settle assign`). Returns the outcome, its detail and the order.
    package func place(_ reported: ReportedPurchase, binding: UserBinding) throws(LedgerError)
        -> (outcome: String, detail: String?, orderId: String?) {
        let probe = VerifiedPurchase(transactionId: reported.key, originalTransactionId: reported.key, productId: reported.productId,
                                     environment: "", quantity: 1, purchaseDateMs: nil, expiresDateMs: nil)
        if let holder = try grantHolder(of: probe) {
            let id: String? = if case let .order(id) = holder { id } else { nil }
            return ("order_exists", "purchase \(reported.key) is held by \(holder.description)", id)
        }
        let waiting = try orders(store: reported.store, proofKey: reported.key)
        if let live = waiting.first(where: { [.pending, .verifying, .delivering].contains($0.state) }) {
            try makeDue(orderId: live.orderId)
            return ("order_exists", nil, live.orderId)
        }
        if waiting.contains(where: { $0.orderId == reported.orderId }) {
            return ("order_exists", "purchase \(reported.key) has its order", reported.orderId)
        }
        let account = reported.accountId.flatMap { $0.isEmpty ? nil : UserBinding.normalizedAccountId($0) }
        var user = ""
        if let account {
            switch binding.tokenSource {
            case .userId: user = account
            case .order: user = try self.user(store: reported.store, accountId: account) ?? ""
            case .uuid5: break
            }
        }
        var detail = "\(reported.reported) that no backend enqueued"
            + (user.isEmpty ? "; nothing maps it to a user" : "; its account id maps to user \(user)")
        if user.isEmpty { detail += "; find the buyer and run: settle assign \(Verdict.shellWord(reported.orderId)) --user USER_ID" }
        guard try createReportedOrder(orderId: reported.orderId, userId: user, productId: reported.productId, store: reported.store,
                                      proof: reported.proof, accountId: account, origin: reported.origin, detail: detail) else {
            return ("order_id_taken", "order \(reported.orderId) exists and does not hold this purchase; a person looks", reported.orderId)
        }
        return ("order_created", detail, reported.orderId)
    }

    /// The one user whose verified orders of `store` carry `accountId` (`app_account_token`), the
    /// buyer, never a transfer's holder; nil for none or several.
    package func user(store: Store, accountId: String) throws(LedgerError) -> String? {
        try reading { db in
            let users = try db.query(AccountTokenSQL.buyers, [.text(accountId), .text(accountId), .text(store.rawValue)])
                .compactMap { $0.string("buyer") }
            return users.count == 1 ? users[0] : nil
        }
    }

    /// The orders of `store` whose module proof is found by `key` (`StoreProof.key`), oldest first.
    package func orders(store: Store, proofKey key: String) throws(LedgerError) -> [Order] {
        try reading { db in
            try db.query("SELECT * FROM orders WHERE store = ? AND proof_key = ? ORDER BY created_at, order_id",
                         [.text(store.rawValue), .text(key)]).map { Order(row: $0) }
        }
    }

    /// An order for a purchase its store reported that no backend enqueued, due now, for `userId`
    /// (empty: nobody known; the pass sets it aside as `unclaimed_purchase` for `settle assign`),
    /// with `origin` saying where it came from and `detail` in its history. False, and nothing
    /// written, when an order of that id exists.
    package func createReportedOrder(orderId: String, userId: String, productId: String, store: Store, proof: StoreProof,
                                     accountId: String?, origin: String, detail: String) throws(LedgerError) -> Bool {
        let now = time.unixSeconds
        return try writing { db in
            let created = try !db.query("""
                INSERT INTO orders(order_id, user_id, product_id, store, proof_kind, proof, proof_key, app_account_token, origin,
                                   next_attempt_at, created_at, updated_at)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                ON CONFLICT(order_id) DO NOTHING RETURNING order_id
                """, [.text(orderId), .text(userId), .text(productId), .text(store.rawValue), .text(proof.kind), .text(proof.proof),
                      .from(proof.key), .from(accountId), .text(origin), .integer(now), .integer(now), .integer(now)]).isEmpty
            if created {
                // PostgreSQL makes every inserted row a backend's (its trigger sets origin 'backend'):
                // settle's own row says where it came from here, in the same transaction.
                try db.query("UPDATE orders SET origin = ? WHERE order_id = ?", [.text(origin), .text(orderId)])
                try db.appendHistory(orderId, HistoryEntry(at: now, kind: .notification, outcome: "created", detail: detail))
            }
            return created
        }
    }

    /// The orders a store's refund names (arguments: the store, the grant key, the store, the
    /// grant key): by its proof (`orders_proof_key`) or the grant it holds (the grant, then the
    /// order's key). `store || ''` in the second branch keeps SQLite's planner off
    /// `orders_store_state`: it read every order of the store there, in the write transaction
    /// (278 ms a refund among 500,000 orders of one store, every other write waiting, against 1).
    static var storeRefundOrders: String {
        """
        SELECT o.*, (SELECT g.grant_key FROM grants g WHERE g.order_id = o.order_id) AS held_key
        FROM orders o
        WHERE (o.store = ? AND o.proof_key = ?)
           OR (o.store || '' = ? AND o.order_id IN (SELECT order_id FROM grants WHERE grant_key = ?))
        ORDER BY o.created_at, o.order_id
        """
    }

    /// Its store refunded (revoked) purchase `grantKey` in whole. Each order of `store` that holds
    /// it, or waits for it (its proof's key is the purchase's id), records the refund once:
    ///  - delivered (`delivering`, `finished`): a revoke is owed once, keyed by the purchase,
    ///    whichever host or report sees it first (`revoke_queued`, `revoke_already_queued`);
    ///  - being verified: the verification sees the refund when it records its result, and never
    ///    delivers (`refund_recorded`);
    ///  - not delivered (`pending`, `needs_attention`): rejected `refunded`, never delivered
    ///    (`never_delivered`); already `rejected`: noted (`refund_recorded`);
    ///  - set aside while holding the grant (a hook whose outcome was not known, a store that refused
    ///    to hear of the delivery): rejected `refunded`, and a revoke owed once, since the goods may be out.
    /// Returns each order's outcome; empty when no order has the purchase.
    package func applyStoreRefund(store: Store, grantKey: String, kind: String, reason: String?, why: String,
                                  source: String) throws(LedgerError) -> [String: String] {
        let now = time.unixSeconds
        return try writing { db in
            let rows = try db.query(Self.storeRefundOrders + db.dialect.lockRows,
                                    [.text(store.rawValue), .text(grantKey), .text(store.rawValue), .text(grantKey)])
            var outcomes: [String: String] = [:]
            for row in rows {
                let order = Order(row: row)
                let held = row.string("held_key")
                // An order holding another purchase (a subscription's other period) is not this refund's.
                if let held, held != grantKey { continue }
                let first = order.refund == nil
                if first {
                    try db.query("UPDATE orders SET refunded_at = ?, refund_kind = ?, refund_reason = ?, updated_at = ? WHERE order_id = ?",
                                 [.integer(now), .text(kind), .from(reason), .integer(now), .text(order.orderId)])
                    try db.cancelGrantRedeliveries(order.orderId, refund: why, now: now)
                }
                func revoke() throws -> String {
                    let queued = try db.query("""
                        INSERT INTO revocations(transaction_id, order_id, kind, next_attempt_at, created_at, updated_at)
                        VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (transaction_id) DO NOTHING RETURNING transaction_id
                        """, [.text(grantKey), .text(order.orderId), .text(kind), .integer(now), .integer(now), .integer(now)])
                    return queued.isEmpty ? "revoke_already_queued" : "revoke_queued"
                }
                let outcome: String
                switch order.state {
                case .delivering, .finished:
                    outcome = try revoke()
                case .verifying:
                    // The verification in flight sees the refund when it records its result.
                    outcome = held == nil ? "refund_recorded" : try revoke()
                case .pending, .needsAttention, .rejected:
                    if held != nil {
                        // It holds the grant: the goods may be out (a hook whose outcome was not known, a
                        // store that refused to hear of the delivery), so a revoke is sent; it is never delivered again.
                        if order.state != .rejected {
                            try db.finalize(order.orderId, state: .rejected, reason: RejectionReason.refunded.rawValue,
                                            error: "\(why); the delivery's outcome was not known, so a revoke is sent; it will never be delivered",
                                            environment: nil, now: now)
                        }
                        outcome = try revoke()
                    } else if order.state == .rejected {
                        outcome = "refund_recorded"
                    } else {
                        try db.finalize(order.orderId, state: .rejected, reason: RejectionReason.refunded.rawValue,
                                        error: "\(why) before it was delivered; it will never be delivered", environment: nil, now: now)
                        outcome = "never_delivered"
                    }
                }
                outcomes[order.orderId] = outcome
                if first || outcome == "revoke_queued" {
                    try db.appendHistory(order.orderId, HistoryEntry(at: now, kind: .notification, outcome: outcome, detail: "\(source): \(why)"))
                }
            }
            return outcomes
        }
    }
}
