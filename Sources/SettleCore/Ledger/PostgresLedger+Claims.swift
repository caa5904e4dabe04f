import Foundation

/// Claims on a shared ledger: taken with `FOR UPDATE SKIP LOCKED`, each bumping the order's
/// fencing token, leased on the database's clock, and taken back only from the dead.
extension PostgresLedger {
    /// The lease columns of a new claim by `owner` for `leaseSeconds` of the database's time.
    static let leaseAssignments = """
        lease_host = ?, lease_pid = ?, lease_start = ?,
        lease_expires_at = \(databaseNow) + ?::bigint, fencing_token = fencing_token + 1
        """

    func leaseArguments(_ owner: LeaseOwner, seconds: Int64) -> [PostgresValue] {
        [.text(owner.host), .integer(Int64(owner.pid)), .text(owner.leaseStart), .integer(seconds)]
    }

    public func claimNextDue(owner: LeaseOwner, leaseSeconds: Int64) throws(LedgerError) -> Order? {
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

    public func claim(orderId: String, owner: LeaseOwner, leaseSeconds: Int64) throws(LedgerError) -> (order: Order, claimed: Bool)? {
        let now = time.unixSeconds
        return try write { db in
            if let row = try db.run("""
                UPDATE orders SET state = 'verifying', \(PostgresLedger.leaseAssignments), updated_at = ?
                WHERE order_id = ? AND state = 'pending'
                RETURNING *
                """, leaseArguments(owner, seconds: leaseSeconds) + [.integer(now), .text(orderId)]).first {
                return (Order(row: row), true)
            }
            return try db.run("SELECT * FROM orders WHERE order_id = ?", [.text(orderId)]).first.map { (Order(row: $0), false) }
        }
    }

    /// As `Ledger.rescue`: `verifying` claims of the dead go back to `pending`, `delivering`
    /// ones are listed for re-delivery. Rows another worker has locked are skipped: a locked
    /// row is being worked on.
    public func rescue(owner: LeaseOwner) throws(LedgerError) -> RescueResult {
        let now = time.unixSeconds
        return try write { db in
            var result = RescueResult()
            let leased = try db.run("""
                SELECT *, lease_expires_at <= \(PostgresLedger.databaseNow) AS expired FROM orders
                WHERE state IN ('verifying','delivering')
                  AND (lease_expires_at <= \(PostgresLedger.databaseNow) OR lease_host = ?)
                ORDER BY order_id FOR UPDATE SKIP LOCKED
                """, [.text(owner.host)])
            for row in leased {
                let order = Order(row: row)
                guard let why = rescuable(order, expired: row.bool("expired") ?? false, by: owner) else { continue }
                if order.state == .verifying {
                    try db.run("""
                        UPDATE orders SET state = 'pending', next_attempt_at = ?, updated_at = ?,
                               lease_host = NULL, lease_pid = NULL, lease_start = NULL, lease_expires_at = NULL
                        WHERE order_id = ?
                        """, [.integer(now), .integer(now), .text(order.orderId)])
                    try appendHistory(db, order.orderId, HistoryEntry(at: now, kind: .rescue, outcome: "requeued", detail: why))
                    result.requeued.append(order.orderId)
                } else {
                    result.redeliver.append(order.orderId)
                }
            }
            return result
        }
    }

    public func claimRedelivery(orderId: String, owner: LeaseOwner, leaseSeconds: Int64) throws(LedgerError) -> Order? {
        let now = time.unixSeconds
        return try write { db in
            guard let row = try db.run("""
                SELECT *, lease_expires_at <= \(PostgresLedger.databaseNow) AS expired FROM orders
                WHERE order_id = ? AND state = 'delivering' FOR UPDATE SKIP LOCKED
                """, [.text(orderId)]).first else { return nil }
            let order = Order(row: row)
            guard let why = rescuable(order, expired: row.bool("expired") ?? false, by: owner) else { return nil }
            let leased = try db.run("""
                UPDATE orders SET \(PostgresLedger.leaseAssignments), updated_at = ? WHERE order_id = ? RETURNING *
                """, leaseArguments(owner, seconds: leaseSeconds) + [.integer(now), .text(orderId)])
            try appendHistory(db, orderId, HistoryEntry(at: now, kind: .rescue, outcome: "redeliver", detail: why))
            return leased.first.map(Order.init(row:))
        }
    }

    public func renewLease(orderId: String, owner: LeaseOwner, fence: Int64?, state: OrderState, leaseSeconds: Int64) throws(LedgerError) -> Bool {
        try write { db in
            try db.run("""
                UPDATE orders SET lease_expires_at = \(PostgresLedger.databaseNow) + ?::bigint
                WHERE order_id = ? AND state = ? AND \(PostgresLedger.claimedBy) RETURNING 1 AS renewed
                """, [.integer(leaseSeconds), .text(orderId), .text(state.rawValue)] + claimArguments(owner, fence)).count == 1
        }
    }

    public func release(orderId: String, owner: LeaseOwner, fence: Int64?) throws(LedgerError) {
        let now = time.unixSeconds
        try write { db in
            try db.run("""
                UPDATE orders SET state = 'pending', updated_at = ?,
                       lease_host = NULL, lease_pid = NULL, lease_start = NULL, lease_expires_at = NULL
                WHERE order_id = ? AND state = 'verifying' AND \(PostgresLedger.claimedBy)
                """, [.integer(now), .text(orderId)] + claimArguments(owner, fence))
        }
    }

    /// Why `owner` may take this claim over, or nil while its holder may still be working.
    /// `expired` is judged by the database's clock. A holder on this host (same boot and PID
    /// namespace) whose process is gone is dead at once; one on another host only once its
    /// lease expired: it may just be cut off from us.
    private func rescuable(_ order: Order, expired: Bool, by owner: LeaseOwner) -> String? {
        guard let lease = order.lease else { return nil }
        if lease.owner == owner { return "left over from an earlier pass of this process" }
        if expired { return "lease of \(lease.owner) expired" }
        if lease.owner.isKnownDead { return "owner \(lease.owner) is gone" }
        return nil
    }
}
