import Foundation

/// Grants on a shared ledger: the primary key on `grant_key` makes "granted at most once"
/// true across every host, and a reservation that loses a race moves on to the next candidate.
extension PostgresLedger {
    public func recordVerified(orderId: String, owner: LeaseOwner, fence: Int64?, match: Match, deliveryLeaseSeconds: Int64,
                               history: HistoryEntry) throws(LedgerError) -> VerifiedResult {
        let now = time.unixSeconds
        return try write { db in
            guard try holding(db, orderId, state: .verifying, owner: owner, fence: fence) != nil else { return .leaseLost }
            let environment = match.candidates.first?.environment
            func end(_ state: OrderState, _ reason: String, _ message: String) throws {
                try finalize(db, orderId, state: state, reason: reason, error: message, environment: environment, now: now)
                var entry = history
                entry.outcome = state == .finished ? reason : state.rawValue
                entry.detail = "\(reason): \(message)"
                try appendHistory(db, orderId, entry)
            }
            // Apple refunded it while we verified: never delivered (a REFUND notification, stored
            // on any host; the claim's row lock above orders the two).
            if let refunded = try db.run("SELECT refund_kind FROM orders WHERE order_id = ? AND refunded_at IS NOT NULL",
                                         [.text(orderId)]).first {
                let message = "Apple reported a \(refunded.string("refund_kind") ?? "REFUND") of this purchase before delivery"
                try end(.rejected, RejectionReason.refunded.rawValue, message)
                return .rejected(.refunded, message)
            }
            let own = try db.run("SELECT grant_key FROM grants WHERE order_id = ?", [.text(orderId)]).first?.string("grant_key")
            var chosen: VerifiedPurchase?
            if let own {
                switch GrantChoice.own(own, in: match) {
                case let .keep(mine):
                    chosen = mine
                case let .reject(why):
                    try end(.rejected, why.reason.rawValue, why.detail)
                    return .rejected(why.reason, why.detail)
                case let .conflict(message):
                    try end(.needsAttention, AttentionReason.grantConflict.rawValue, message)
                    return .grantConflict(message)
                }
            }
            var held: [(VerifiedPurchase, GrantHolder)] = []
            if chosen == nil {
                for candidate in match.candidates {
                    if let holder = try holderOf(db, candidate) {
                        held.append((candidate, holder))
                        continue
                    }
                    // Another host may reserve the same purchase between our look and our insert:
                    // ON CONFLICT waits for its transaction and then inserts nothing, and the
                    // holder it committed is read again.
                    let inserted = try db.run("""
                        INSERT INTO grants(grant_key, transaction_id, order_id, source, granted_at) VALUES (?, ?, ?, 'settle', ?)
                        ON CONFLICT DO NOTHING RETURNING grant_key
                        """, [.text(candidate.grantKey), .text(candidate.transactionId), .text(orderId), .integer(now)])
                    if inserted.isEmpty {
                        held.append((candidate, try holderOf(db, candidate) ?? .order("another order")))
                        continue
                    }
                    chosen = candidate
                    break
                }
            }
            guard let purchase = chosen else {
                switch GrantChoice.allHeld(held, named: match.named) {
                case let .alreadyDelivered(outside, message):
                    try setVerified(db, orderId, outside)
                    try end(.finished, "already_delivered", message)
                    return .alreadyDelivered(message)
                case let .alreadyGranted(message):
                    try end(.rejected, RejectionReason.alreadyGranted.rawValue, message)
                    return .alreadyGranted(message)
                }
            }
            let row = try db.run("""
                UPDATE orders SET state = 'delivering', environment = ?, verified_transaction_id = ?,
                       original_transaction_id = ?, verified_product_id = ?, quantity = ?, purchase_date_ms = ?,
                       expires_date_ms = ?, grant_key = ?, reason = NULL, last_error = NULL,
                       lease_expires_at = \(PostgresLedger.databaseNow) + ?::bigint, updated_at = ?
                WHERE order_id = ? RETURNING *
                """, [.text(purchase.environment), .text(purchase.transactionId), .text(purchase.originalTransactionId),
                      .text(purchase.productId), .integer(Int64(purchase.quantity)), .from(purchase.purchaseDateMs),
                      .from(purchase.expiresDateMs), .text(purchase.grantKey), .integer(deliveryLeaseSeconds),
                      .integer(now), .text(orderId)])
            var entry = history
            entry.detail = GrantChoice.reserved(purchase)
            try appendHistory(db, orderId, entry)
            return .delivering(Order(row: row[0]))
        }
    }

    public func recordGrantedOutside(orderId: String, owner: LeaseOwner, fence: Int64?, history: HistoryEntry) throws(LedgerError) -> GrantedOutsideResult {
        let now = time.unixSeconds
        return try write { db in
            guard let order = try holding(db, orderId, state: .delivering, owner: owner, fence: fence) else { return .leaseLost }
            if !order.namesTransaction, try !db.run(GrantChoice.earlierHandOff, [.text(orderId), .text(orderId)]).isEmpty {
                let message = GrantChoice.unclearAlreadyGranted(order)
                var entry = history
                entry.outcome = OrderState.needsAttention.rawValue
                entry.detail = "\(AttentionReason.alreadyGrantedUnclear.rawValue): \(message)" + (history.detail.map { "\n" + $0 } ?? "")
                try appendHistory(db, orderId, entry)
                try finalize(db, orderId, state: .needsAttention, reason: AttentionReason.alreadyGrantedUnclear.rawValue, error: message,
                             environment: nil, now: now)
                return .unclear(message)
            }
            try db.run("UPDATE grants SET order_id = NULL, source = 'outside', note = ? WHERE order_id = ?",
                       [.text("the hook answered \"already granted\" delivering order \(orderId)"), .text(orderId)])
            try appendHistory(db, orderId, history)
            if order.namesTransaction {
                try finalize(db, orderId, state: .finished, reason: "already_delivered",
                             error: "the hook answered that transaction \(order.verified?.transactionId ?? "?") was granted before",
                             environment: nil, now: now)
                return .finished
            }
            let row = try db.run("""
                UPDATE orders SET state = 'verifying', verified_transaction_id = NULL, original_transaction_id = NULL,
                       verified_product_id = NULL, quantity = NULL, purchase_date_ms = NULL, expires_date_ms = NULL,
                       grant_key = NULL, updated_at = ?
                WHERE order_id = ? RETURNING *
                """, [.integer(now), .text(orderId)])
            return .rematch(Order(row: row[0]))
        }
    }

    public func recordOutsideGrant(transactionId: String, grantKey: String, note: String?) throws(LedgerError) -> Ledger.OutsideGrantResult {
        let now = time.unixSeconds
        let candidate = VerifiedPurchase(transactionId: transactionId, originalTransactionId: grantKey, productId: "",
                                         environment: "", quantity: 1, purchaseDateMs: nil, expiresDateMs: nil, grantKey: grantKey)
        return try write { db in
            if let holder = try holderOf(db, candidate) { return PostgresLedger.outsideResult(holder) }
            let inserted = try db.run("""
                INSERT INTO grants(grant_key, transaction_id, order_id, source, granted_at, note) VALUES (?, ?, NULL, 'outside', ?, ?)
                ON CONFLICT DO NOTHING RETURNING grant_key
                """, [.text(grantKey), .text(transactionId), .integer(now), .from(note)])
            if inserted.isEmpty, let holder = try holderOf(db, candidate) { return PostgresLedger.outsideResult(holder) }
            return .recorded
        }
    }

    private static func outsideResult(_ holder: GrantHolder) -> Ledger.OutsideGrantResult {
        switch holder {
        case let .order(id): return .grantedBySettle(orderId: id)
        case .outside: return .alreadyRecorded
        }
    }

    public func grantHolder(of purchase: VerifiedPurchase) throws(LedgerError) -> GrantHolder? {
        try read { db in try holderOf(db, purchase) }
    }

    public func grantHolder(transactionId: String) throws(LedgerError) -> String? {
        try read { db in
            try db.run("SELECT order_id FROM grants WHERE transaction_id = ?", [.text(transactionId)]).first?.string("order_id")
        }
    }

    /// Who holds a purchase: its grant key, or its transaction id recorded by a backend.
    func holderOf(_ db: PostgresConnection, _ purchase: VerifiedPurchase) throws -> GrantHolder? {
        try PostgresTransaction(connection: db).holderOf(purchase)
    }

    private func setVerified(_ db: PostgresConnection, _ orderId: String, _ purchase: VerifiedPurchase) throws {
        try db.run("""
            UPDATE orders SET verified_transaction_id = ?, original_transaction_id = ?, verified_product_id = ?, quantity = ?,
                   purchase_date_ms = ?, expires_date_ms = ?, grant_key = ?
            WHERE order_id = ?
            """, [.text(purchase.transactionId), .text(purchase.originalTransactionId), .text(purchase.productId),
                  .integer(Int64(purchase.quantity)), .from(purchase.purchaseDateMs), .from(purchase.expiresDateMs),
                  .text(purchase.grantKey), .text(orderId)])
    }
}
