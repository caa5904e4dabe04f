import Foundation

/// Google Play's part of the order store, as in `Ledger+GooglePlay.swift`.
extension PostgresLedger {
    @discardableResult
    public func recordDelivered(orderId: String, owner: LeaseOwner, fence: Int64?, error: String?,
                                history: HistoryEntry) throws(LedgerError) -> Bool {
        let now = time.unixSeconds
        return try write { db in
            guard try holding(db, orderId, state: .delivering, owner: owner, fence: fence) != nil else { return false }
            try db.run("""
                UPDATE orders SET delivered_at = coalesce(delivered_at, ?), last_error = ?, updated_at = ? WHERE order_id = ?
                """, [.integer(now), .from(error), .integer(now), .text(orderId)])
            try appendHistory(db, orderId, history)
            return true
        }
    }
}
