import Foundation

/// Google Play's part of the order store: "delivered, store finish pending".
extension Ledger {
    /// Order ids settle makes for Google Play purchases nobody enqueued (found through RTDN):
    /// `play-` and Google's order id. Backends may not use the prefix.
    public static let playOrderIdPrefix = "play-"

    /// The hook said delivered for a Google Play order, which Google has not been told yet: the
    /// order stays `delivering` under its claim with `delivered_at` set, durably, before settle
    /// calls Google. A crash from here on never runs the hook again: the rescued order is only
    /// acknowledged (or consumed). Called again after a failed acknowledgement, it keeps the first
    /// `delivered_at` and records the failure (`error`). False when the claim is gone.
    @discardableResult
    public func recordDelivered(orderId: String, owner: LeaseOwner, fence: Int64?, error: String?,
                                history: HistoryEntry) throws(LedgerError) -> Bool {
        let now = time.unixSeconds
        return try transition {
            guard try holds(orderId, state: .delivering, owner: owner) else { return false }
            try database.query("""
                UPDATE orders SET delivered_at = coalesce(delivered_at, ?), last_error = ?, updated_at = ? WHERE order_id = ?
                """, [.integer(now), .from(error), .integer(now), .text(orderId)])
            try appendHistory(orderId, history)
            return true
        }
    }
}
