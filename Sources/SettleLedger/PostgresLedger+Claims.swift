import Foundation
import SettleModel

/// PostgreSQL's claim of the next due order: taken with `FOR UPDATE SKIP LOCKED`, bumping the
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

    package func claimNextDue(owner: LeaseOwner, leaseSeconds: Int64) throws(LedgerError) -> Order? {
        let now = time.unixSeconds
        return try write { db in
            // A Google Play order less than a day from Google's refund deadline goes first.
            if let urgent = try db.run("""
                UPDATE orders SET state = 'verifying', \(PostgresLedger.leaseAssignments), updated_at = ?
                WHERE order_id = (SELECT order_id FROM orders
                                  WHERE state = 'pending' AND store = 'google_play'
                                    AND coalesce(purchase_date_ms / 1000, created_at) <= ? AND next_attempt_at <= ?
                                  ORDER BY coalesce(purchase_date_ms / 1000, created_at), order_id LIMIT 1 FOR UPDATE SKIP LOCKED)
                  AND state = 'pending'
                RETURNING *
                """, leaseArguments(owner, seconds: leaseSeconds)
                    + [.integer(now), .integer(now - PlayDeadline.urgentAfterSeconds), .integer(now)]).first {
                return Order(row: urgent)
            }
            // SKIP LOCKED: concurrent claimers each take a different row instead of queueing on
            // the first; `state = 'pending'` again in the outer WHERE, which PostgreSQL re-checks
            // on the row's latest version (https://www.postgresql.org/docs/current/sql-select.html#SQL-FOR-UPDATE-SHARE).
            return try db.run("""
                UPDATE orders SET state = 'verifying', \(PostgresLedger.leaseAssignments), updated_at = ?
                WHERE order_id = (SELECT order_id FROM orders WHERE state = 'pending' AND next_attempt_at <= ?
                                  ORDER BY next_attempt_at, order_id LIMIT 1 FOR UPDATE SKIP LOCKED)
                  AND state = 'pending'
                RETURNING *
                """, leaseArguments(owner, seconds: leaseSeconds) + [.integer(now), .integer(now)])
            .first.map(Order.init(row:))
        }
    }
}
