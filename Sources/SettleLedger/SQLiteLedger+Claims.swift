import Foundation
import SettleModel

/// SQLite's claim of the next due order (the rest of the claims are written once, in
/// `TransactionalLedger+Claims`).
extension SQLiteLedger {
    /// Claims the next due order for verification, or nil when none is due.
    package func claimNextDue(owner: LeaseOwner, leaseSeconds: Int64) throws(LedgerError) -> Order? {
        let now = time.unixSeconds
        return try transition {
            // Google Play refunds a purchase not acknowledged within three days: a Play order
            // less than a day from that deadline goes before everything else (orders_play_pending).
            if let urgent = try database.query("""
                UPDATE orders SET state = 'verifying', lease_host = ?, lease_pid = ?, lease_start = ?,
                       lease_expires_at = ?, updated_at = ?
                WHERE order_id = (SELECT order_id FROM orders
                                  WHERE state = 'pending' AND store = 'google_play'
                                    AND coalesce(purchase_date_ms / 1000, created_at) <= ?
                                    AND next_attempt_at <= ? AND \(SQLiteLedger.wellFormed)
                                  ORDER BY coalesce(purchase_date_ms / 1000, created_at), order_id LIMIT 1)
                RETURNING *
                """, leaseArguments(owner, expiresAt: now + leaseSeconds)
                    + [.integer(now), .integer(now - PlayDeadline.urgentAfterSeconds), .integer(now)]).first {
                return Order(row: urgent)
            }
            // Pinned to the partial index that is already in claim order: without it the planner
            // may sort the whole backlog on every claim (quadratic passes), and ANALYZE can
            // flip plans (https://www.sqlite.org/lang_indexedby.html).
            return try database.query("""
                UPDATE orders SET state = 'verifying', lease_host = ?, lease_pid = ?, lease_start = ?,
                       lease_expires_at = ?, updated_at = ?
                WHERE order_id = (SELECT order_id FROM orders INDEXED BY orders_claim
                                  WHERE state = 'pending' AND next_attempt_at <= ? AND \(SQLiteLedger.wellFormed)
                                  ORDER BY next_attempt_at, order_id LIMIT 1)
                RETURNING *
                """, leaseArguments(owner, expiresAt: now + leaseSeconds) + [.integer(now), .integer(now)])
            .first.map(Order.init(row:))
        }
    }
}
