import Foundation
import SettleModel

/// PostgreSQL's claim of due orders: taken with `FOR UPDATE SKIP LOCKED`, bumping the
/// order's fencing token, leased on the database's clock (the rest of the claims are written
/// once, in `TransactionalLedger+Claims`).
extension PostgresLedger {
    /// The lease columns of a new claim by `owner` for `leaseSeconds` of the database's time.
    package static let leaseAssignments = """
        lease_host = ?, lease_pid = ?, lease_start = ?,
        lease_expires_at = \(databaseNow) + ?::bigint, fencing_token = fencing_token + 1
        """

    package func leaseArguments(_ owner: LeaseOwner, seconds: Int64) -> [PostgresValue] {
        [.text(owner.host), .integer(Int64(owner.pid)), .text(owner.leaseStart), .integer(seconds)]
    }

    /// Claims up to `limit` due orders in one transaction, in claim order; empty when none is due.
    package func claimDue(owner: LeaseOwner, leaseSeconds: Int64, limit: Int, stores: Set<Store>?) throws(LedgerError) -> [Order] {
        let only = Store.only(stores)
        let now = time.unixSeconds
        let lease = leaseArguments(owner, seconds: leaseSeconds) + [.integer(now)]
        // The stored receipts of the orders claimed are read in the same transaction (`ClaimedReceipts`).
        func pickAndClaim(_ db: PostgresConnection) throws -> [Order] {
            // The orders `picking` names (a SELECT of order ids, in claim order, with its
            // arguments), locked and claimed in one statement and returned in `order`.
            // SKIP LOCKED: concurrent claimers each take different rows instead of queueing on
            // the first; `state = 'pending'` again in the outer WHERE, which PostgreSQL re-checks
            // on the row's latest version (https://www.postgresql.org/docs/current/sql-select.html#SQL-FOR-UPDATE-SHARE).
            // The batch is picked once, in a materialized CTE: `IN (SELECT … LIMIT n FOR UPDATE)`
            // may be planned as a semi-join that runs the locking subquery again for each
            // candidate row, and then claims fewer rows than are due (none, at times).
            func claim(_ picking: String, _ values: [PostgresValue], order: (Order, Order) -> Bool) throws -> [Order] {
                try db.run("""
                    WITH picked AS MATERIALIZED (\(picking) FOR UPDATE SKIP LOCKED)
                    UPDATE orders SET state = 'verifying', \(PostgresLedger.leaseAssignments), updated_at = ?
                    FROM picked WHERE orders.order_id = picked.order_id AND orders.state = 'pending'
                    RETURNING orders.*
                    """, values + lease).map(Order.init(row:)).sorted(by: order)
            }
            // An order less than a day from its store's refund deadline (Google's) goes first.
            var claimed: [Order] = []
            for (store, urgentAfter) in RefundDeadline.deadlineStores(only) where claimed.count < limit {
                claimed += try claim("""
                    SELECT order_id FROM orders
                    WHERE state = 'pending' AND store = '\(store.rawValue)'
                      AND coalesce(purchase_date_ms / 1000, created_at) <= ? AND next_attempt_at <= ?
                    ORDER BY coalesce(purchase_date_ms / 1000, created_at), order_id LIMIT ?
                    """, [.integer(now - urgentAfter), .integer(now), .integer(Int64(limit - claimed.count))],
                    order: Order.beforeInRefundDeadlineOrder)
            }
            guard let only else {
                guard claimed.count < limit else { return claimed }
                return claimed + (try claim("""
                    SELECT order_id FROM orders WHERE state = 'pending' AND next_attempt_at <= ?
                    ORDER BY next_attempt_at, order_id LIMIT ?
                    """, [.integer(now), .integer(Int64(limit - claimed.count))], order: Order.beforeInDueOrder))
            }
            // Some stores only (another's breaker is open): each store's due orders on its own
            // (orders_claim_store), so a held-back backlog of the other is never read.
            for store in Store.allCases where only.contains(store) && claimed.count < limit {
                claimed += try claim("""
                    SELECT order_id FROM orders WHERE state = 'pending' AND store = ? AND next_attempt_at <= ?
                    ORDER BY next_attempt_at, order_id LIMIT ?
                    """, [.text(store.rawValue), .integer(now), .integer(Int64(limit - claimed.count))], order: Order.beforeInDueOrder)
            }
            return claimed
        }
        return try write { db in
            var claimed = try pickAndClaim(db)
            if let receipts = ClaimedReceipts.query(for: claimed) {
                ClaimedReceipts.attach(try db.run(receipts.sql, receipts.hashes.map { .text($0) }), to: &claimed)
            }
            return claimed
        }
    }
}
