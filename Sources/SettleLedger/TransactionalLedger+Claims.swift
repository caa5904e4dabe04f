import Foundation
import SettleModel

/// What rescue found and did.
package struct RescueResult: Sendable, Equatable {
    /// Orders taken back from `verifying` to `pending` (no attempt used).
    package var requeued: [String] = []
    /// Orders in `delivering` to be delivered again with the same key, once leased.
    package var redeliver: [String] = []
    /// Side-queue jobs (Finish Transaction, revokes, ...) taken back from a dead owner of this host.
    package var sideJobsTakenBack = 0
}

/// Claims: who works on an order right now, until when, and taking claims back from the dead,
/// written once for both engines. What differs is asked of the dialect: the lease clock
/// (this process's on SQLite, the database's on PostgreSQL), the fencing token a PostgreSQL
/// claim bumps and checks, and rows another host holds being skipped (`SKIP LOCKED`). Claiming
/// the next due order stays per engine (`SQLiteLedger+Claims`, `PostgresLedger+Claims`): SQLite pins
/// its index and skips rows it cannot read back, PostgreSQL skips locked rows and re-checks the state.
extension TransactionalLedger {
    /// Claims a named order if it is `pending`, due or not. Returns the order as found when it
    /// could not be claimed (so the caller can say why), nil if there is no such order.
    package func claim(orderId: String, owner: LeaseOwner, leaseSeconds: Int64) throws(LedgerError) -> (order: Order, claimed: Bool)? {
        let now = time.unixSeconds
        return try transition { db in
            let lease = db.newLease(owner, now: now, seconds: leaseSeconds)
            if let row = try db.query("""
                UPDATE orders SET state = 'verifying', \(lease.sql), updated_at = ?
                WHERE order_id = ? AND state = 'pending'
                RETURNING *
                """, lease.values + [.integer(now), .text(orderId)]).first {
                return (Order(row: row), true)
            }
            return try db.query("SELECT * FROM orders WHERE order_id = ?", [.text(orderId)]).first.map { (Order(row: $0), false) }
        }
    }

    /// Takes back claims whose owner is dead or whose lease expired, and `owner`'s own
    /// leftovers: `verifying` returns to `pending` without using an attempt; `delivering` is
    /// returned for re-delivery with the same idempotency key, but not leased yet: a worker
    /// leases it (`claimRedelivery`) at the moment it starts, so a long queue of rescued
    /// deliveries never expires while it waits. Call it only when `owner` has no work in
    /// flight (before a pass). Rows another worker has locked (PostgreSQL) are skipped: a
    /// locked row is being worked on.
    package func rescue(owner: LeaseOwner) throws(LedgerError) -> RescueResult {
        let now = time.unixSeconds
        return try writing { db in
            var result = RescueResult()
            let clock = db.dialect.leaseExpiry(now, 0)
            // Only expired leases and this host's can be taken over (a holder on another host
            // may just be cut off from us).
            let leased = try db.query("""
                SELECT *, CASE WHEN lease_expires_at <= \(clock.sql) THEN 1 ELSE 0 END AS expired FROM orders
                WHERE state IN ('verifying','delivering') AND \(db.dialect.isText("order_id"))
                  AND (lease_expires_at <= \(clock.sql) OR lease_host = ?)
                ORDER BY order_id\(db.dialect.claimRows("orders"))
                """, clock.values + clock.values + [.text(owner.host)])
            for row in leased {
                let order = Order(row: row)
                guard let why = Self.rescuable(order, expired: row.int("expired") == 1, by: owner) else { continue }
                // Delivered, and the store refused to hear it: left alone until its backoff ends.
                if order.state == .delivering, order.deliveredAt != nil, order.nextAttemptAt > now { continue }
                if order.state == .verifying {
                    try db.query("""
                        UPDATE orders SET state = 'pending', next_attempt_at = ?, updated_at = ?,
                               lease_host = NULL, lease_pid = NULL, lease_start = NULL, lease_expires_at = NULL
                        WHERE order_id = ?
                        """, [.integer(now), .integer(now), .text(order.orderId)])
                    try db.appendHistory(order.orderId, HistoryEntry(at: now, kind: .rescue, outcome: "requeued", detail: why))
                    result.requeued.append(order.orderId)
                } else {
                    result.redeliver.append(order.orderId)
                }
            }
            // The side queues' claims, by the same rule: a dead owner of this host's at once
            // (only writers, on a migrated ledger, rescue).
            result.sideJobsTakenBack = try db.rescueSideQueueClaims(by: owner, now: now)
            return result
        }
    }

    /// Leases a `delivering` order for re-delivery if it is still up for rescue (its owner
    /// dead, its lease expired, or a leftover of ours); nil when someone else has it now.
    package func claimRedelivery(orderId: String, owner: LeaseOwner, leaseSeconds: Int64) throws(LedgerError) -> Order? {
        let now = time.unixSeconds
        return try transition { db in
            let clock = db.dialect.leaseExpiry(now, 0)
            guard let row = try db.query("""
                SELECT *, CASE WHEN lease_expires_at <= \(clock.sql) THEN 1 ELSE 0 END AS expired FROM orders
                WHERE order_id = ? AND state = 'delivering'\(db.dialect.claimRows("orders"))
                """, clock.values + [.text(orderId)]).first else { return nil }
            let order = Order(row: row)
            guard let why = Self.rescuable(order, expired: row.int("expired") == 1, by: owner) else { return nil }
            let lease = db.newLease(owner, now: now, seconds: leaseSeconds)
            let leased = try db.query("UPDATE orders SET \(lease.sql), updated_at = ? WHERE order_id = ? RETURNING *",
                                      lease.values + [.integer(now), .text(orderId)])
            try db.appendHistory(orderId, HistoryEntry(at: now, kind: .rescue, outcome: "redeliver", detail: why))
            return leased.first.map { Order(row: $0) }
        }
    }

    /// Pushes the lease of a claim still held (same owner, and on PostgreSQL the same fencing
    /// token) out by `leaseSeconds`; false when the claim is gone.
    package func renewLease(orderId: String, owner: LeaseOwner, fence: Int64?, state: OrderState, leaseSeconds: Int64) throws(LedgerError) -> Bool {
        let now = time.unixSeconds
        return try transition { db in
            let expiry = db.dialect.leaseExpiry(now, leaseSeconds)
            let claim = db.claimedBy(owner, fence: fence)
            return try db.query("""
                UPDATE orders SET lease_expires_at = \(expiry.sql) WHERE order_id = ? AND state = ? AND \(claim.sql)
                RETURNING 1 AS renewed
                """, expiry.values + [.text(orderId), .text(state.rawValue)] + claim.values).count == 1
        }
    }

    /// Puts a claimed, not yet verified order back to `pending` as it was: no attempt used,
    /// no history (nothing happened to it).
    package func release(orderId: String, owner: LeaseOwner, fence: Int64?) throws(LedgerError) {
        let now = time.unixSeconds
        try transition { db in
            let claim = db.claimedBy(owner, fence: fence)
            try db.query("""
                UPDATE orders SET state = 'pending', updated_at = ?,
                       lease_host = NULL, lease_pid = NULL, lease_start = NULL, lease_expires_at = NULL
                WHERE order_id = ? AND state = 'verifying' AND \(claim.sql)
                """, [.integer(now), .text(orderId)] + claim.values)
        }
    }

    /// Why `owner` may take this claim over, or nil while its holder may still be working.
    /// `expired` is judged on the lease clock. Rescue runs before a pass starts work, and a
    /// process runs one pass at a time, so a claim of our own was orphaned by an earlier pass
    /// (a failed ledger write after the hook ran) and is taken back like any other. A holder
    /// on this host (same boot and PID namespace) whose process is gone is dead at once; one
    /// on another host only once its lease expired: it may just be cut off from us.
    package static func rescuable(_ order: Order, expired: Bool, by owner: LeaseOwner) -> String? {
        guard let lease = order.lease else { return nil }
        if lease.owner == owner { return "left over from an earlier pass of this process" }
        if expired { return "lease of \(lease.owner) expired" }
        if lease.owner.isKnownDead { return "owner \(lease.owner) is gone" }
        return nil
    }
}
