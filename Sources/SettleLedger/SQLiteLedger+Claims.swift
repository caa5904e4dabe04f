import Foundation
import SettleModel

/// SQLite's claim of due orders (the rest of the claims are written once, in
/// `TransactionalLedger+Claims`).
extension SQLiteLedger {
    /// Claims up to `limit` due orders in one transaction (one commit for the batch), in claim
    /// order; empty when none is due.
    package func claimDue(owner: LeaseOwner, leaseSeconds: Int64, limit: Int, stores: Set<Store>?) throws(LedgerError) -> [Order] {
        let only = Store.only(stores)
        let now = time.unixSeconds
        let lease = leaseArguments(owner, expiresAt: now + leaseSeconds) + [.integer(now)]
        // The orders `picking` names (a SELECT of order ids, in claim order, with its arguments),
        // claimed in one statement and returned in `order`.
        func claim(_ picking: String, _ values: [SQLiteValue], order: (Order, Order) -> Bool) throws -> [Order] {
            try database.query("""
                UPDATE orders SET state = 'verifying', lease_host = ?, lease_pid = ?, lease_start = ?,
                       lease_expires_at = ?, updated_at = ?
                WHERE order_id IN (\(picking))
                RETURNING *
                """, lease + values).map(Order.init(row:)).sorted(by: order)
        }
        func pickAndClaim() throws -> [Order] {
            // A store that refunds a purchase it was not told of (Google, after three days): its
            // orders less than a day from that deadline go before everything else
            // (orders_play_pending; the store is written into the SQL so the partial index applies).
            var claimed: [Order] = []
            for (store, urgentAfter) in RefundDeadline.deadlineStores(only) where claimed.count < limit {
                claimed += try claim("""
                    SELECT order_id FROM orders
                    WHERE state = 'pending' AND store = '\(store.rawValue)' AND coalesce(purchase_date_ms / 1000, created_at) <= ?
                      AND next_attempt_at <= ? AND \(SQLiteLedger.wellFormed)
                    ORDER BY coalesce(purchase_date_ms / 1000, created_at), order_id LIMIT ?
                    """, [.integer(now - urgentAfter), .integer(now), .integer(Int64(limit - claimed.count))],
                    order: Order.beforeInRefundDeadlineOrder)
            }
            guard let only else {
                // Pinned to the partial index that is already in claim order: without it the planner
                // may sort the whole backlog on every claim (quadratic passes), and ANALYZE can
                // flip plans (https://www.sqlite.org/lang_indexedby.html).
                guard claimed.count < limit else { return claimed }
                return claimed + (try claim("""
                    SELECT order_id FROM orders INDEXED BY orders_claim
                    WHERE state = 'pending' AND next_attempt_at <= ? AND \(SQLiteLedger.wellFormed)
                    ORDER BY next_attempt_at, order_id LIMIT ?
                    """, [.integer(now), .integer(Int64(limit - claimed.count))], order: Order.beforeInDueOrder))
            }
            // Some stores only (another's breaker is open): each store's due orders in its own
            // index range, in claim order, so a held-back backlog of the other is never read.
            for store in Store.allCases where only.contains(store) && claimed.count < limit {
                claimed += try claim("""
                    SELECT order_id FROM orders INDEXED BY orders_claim_store
                    WHERE state = 'pending' AND store = ? AND next_attempt_at <= ? AND \(SQLiteLedger.wellFormed)
                    ORDER BY next_attempt_at, order_id LIMIT ?
                    """, [.text(store.rawValue), .integer(now), .integer(Int64(limit - claimed.count))], order: Order.beforeInDueOrder)
            }
            return claimed
        }
        // The stored receipts of the orders claimed, in the same transaction (`ClaimedReceipts`).
        return try transition {
            var claimed = try pickAndClaim()
            if let receipts = ClaimedReceipts.query(for: claimed) {
                ClaimedReceipts.attach(try database.query(receipts.sql, receipts.hashes.map { .text($0) }), to: &claimed)
            }
            return claimed
        }
    }
}
