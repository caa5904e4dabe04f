/// How long the ledger keeps what it no longer needs (`retention.history_days`).
extension Ledger {
    /// Deletes history rows older than `days` of orders that ended (finished or rejected)
    /// before then. Orders, grants and receipts stay: a grant is the proof that a purchase was
    /// delivered and is never pruned, and an order's row says what it became. Returns how many
    /// rows went.
    @discardableResult
    public func pruneHistory(olderThanDays days: Int) throws(LedgerError) -> Int {
        let cutoff = time.unixSeconds - Int64(days) * 86400
        return try locked { () throws(LedgerError) in
            try write {
                try database.query("""
                    DELETE FROM history WHERE at < ? AND order_id IN
                        (SELECT order_id FROM orders WHERE state IN ('finished','rejected') AND updated_at < ?)
                    """, [.integer(cutoff), .integer(cutoff)])
                return Int(try database.query("SELECT changes() AS n").first?.int("n") ?? 0)
            }
        }
    }
}
