import SettleModel

/// "Delivered, store finish pending", written once for both engines: for a store whose
/// descriptor finishes after delivery (`.beforeFinished`), the hook's yes is kept before the
/// store is told.
extension TransactionalLedger {
    /// The hook said delivered for an order whose store has not been told yet: the order stays
    /// `delivering` under its claim with `delivered_at` set, durably, before settle calls the
    /// store. A crash from here on never runs the hook again: the rescued order is only finished
    /// with the store (acknowledged or consumed). Called again after a failed acknowledgement, it keeps the first
    /// `delivered_at` and records the failure (`error`). False when the claim is gone.
    @discardableResult
    package func recordDelivered(orderId: String, owner: LeaseOwner, fence: Int64?, error: String?,
                                history: HistoryEntry) throws(LedgerError) -> Bool {
        let now = time.unixSeconds
        return try transition { db in
            guard try db.holds(orderId, state: .delivering, owner: owner, fence: fence) else { return false }
            try db.query("""
                UPDATE orders SET delivered_at = coalesce(delivered_at, ?), last_error = ?, updated_at = ? WHERE order_id = ?
                """, [.integer(now), .from(error), .integer(now), .text(orderId)])
            try db.appendHistory(orderId, history)
            return true
        }
    }
}
