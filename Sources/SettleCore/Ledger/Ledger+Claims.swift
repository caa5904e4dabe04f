import Foundation

/// Claims: who works on an order right now, until when, and taking claims back from the dead.
extension Ledger {
    /// Claims the next due order for verification, or nil when none is due.
    public func claimNextDue(owner: LeaseOwner, leaseSeconds: Int64) throws(LedgerError) -> Order? {
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
                                    AND next_attempt_at <= ? AND \(Ledger.wellFormed)
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
                                  WHERE state = 'pending' AND next_attempt_at <= ? AND \(Ledger.wellFormed)
                                  ORDER BY next_attempt_at, order_id LIMIT 1)
                RETURNING *
                """, leaseArguments(owner, expiresAt: now + leaseSeconds) + [.integer(now), .integer(now)])
            .first.map(Order.init(row:))
        }
    }

    /// Claims a named order if it is `pending`, due or not. Returns the order as found when it
    /// could not be claimed (so the caller can say why), nil if there is no such order.
    public func claim(orderId: String, owner: LeaseOwner, leaseSeconds: Int64) throws(LedgerError) -> (order: Order, claimed: Bool)? {
        let now = time.unixSeconds
        return try transition {
            if let row = try database.query("""
                UPDATE orders SET state = 'verifying', lease_host = ?, lease_pid = ?, lease_start = ?,
                       lease_expires_at = ?, updated_at = ?
                WHERE order_id = ? AND state = 'pending'
                RETURNING *
                """, leaseArguments(owner, expiresAt: now + leaseSeconds) + [.integer(now), .text(orderId)]).first {
                return (Order(row: row), true)
            }
            return try database.query("SELECT * FROM orders WHERE order_id = ?", [.text(orderId)])
                .first.map { (Order(row: $0), false) }
        }
    }

    /// Takes back claims whose owner is dead or whose lease expired, and `owner`'s own
    /// leftovers: `verifying` returns to `pending` without using an attempt; `delivering` is
    /// returned for re-delivery with the same idempotency key, but not leased yet: a worker
    /// leases it (`claimRedelivery`) at the moment it starts, so a long queue of rescued
    /// deliveries never expires while it waits. Call it only when `owner` has no work in
    /// flight (before a pass).
    public func rescue(owner: LeaseOwner) throws(LedgerError) -> RescueResult {
        let now = time.unixSeconds
        return try locked { () throws(LedgerError) in
            try write {
                var result = RescueResult()
                let leased = try database.query("SELECT * FROM orders WHERE state IN ('verifying','delivering') AND typeof(order_id) = 'text'")
                for order in leased.map(Order.init(row:)) {
                    guard let why = rescuable(order, by: owner, now: now) else { continue }
                    if order.state == .verifying {
                        try database.query("""
                            UPDATE orders SET state = 'pending', next_attempt_at = ?, updated_at = ?,
                                   lease_host = NULL, lease_pid = NULL, lease_start = NULL, lease_expires_at = NULL
                            WHERE order_id = ?
                            """, [.integer(now), .integer(now), .text(order.orderId)])
                        try appendHistory(order.orderId, HistoryEntry(at: now, kind: .rescue, outcome: "requeued", detail: why))
                        result.requeued.append(order.orderId)
                    } else {
                        result.redeliver.append(order.orderId)
                    }
                }
                return result
            }
        }
    }

    /// Leases a `delivering` order for re-delivery if it is still up for rescue (its owner
    /// dead, its lease expired, or a leftover of ours); nil when someone else has it now.
    public func claimRedelivery(orderId: String, owner: LeaseOwner, leaseSeconds: Int64) throws(LedgerError) -> Order? {
        let now = time.unixSeconds
        return try transition {
            guard let row = try database.query("SELECT * FROM orders WHERE order_id = ? AND state = 'delivering'",
                                               [.text(orderId)]).first else { return nil }
            let order = Order(row: row)
            guard let why = rescuable(order, by: owner, now: now) else { return nil }
            let leased = try database.query("""
                UPDATE orders SET lease_host = ?, lease_pid = ?, lease_start = ?, lease_expires_at = ?, updated_at = ?
                WHERE order_id = ? RETURNING *
                """, leaseArguments(owner, expiresAt: now + leaseSeconds) + [.integer(now), .text(orderId)])
            try appendHistory(orderId, HistoryEntry(at: now, kind: .rescue, outcome: "redeliver", detail: why))
            return leased.first.map(Order.init(row:))
        }
    }

    /// Pushes our lease on an order we are working on further out (a hook still running).
    /// False when the order is no longer ours.
    public func renewLease(orderId: String, owner: LeaseOwner, state: OrderState, leaseSeconds: Int64) throws(LedgerError) -> Bool {
        let now = time.unixSeconds
        return try transition {
            try database.query("""
                UPDATE orders SET lease_expires_at = ? WHERE order_id = ? AND state = ? AND \(Ledger.ownedBy)
                RETURNING 1 AS renewed
                """, [.integer(now + leaseSeconds), .text(orderId), .text(state.rawValue)] + ownerArguments(owner)).count == 1
        }
    }

    /// Why `owner` may take this claim over, or nil when its holder may still be working.
    private func rescuable(_ order: Order, by owner: LeaseOwner, now: Int64) -> String? {
        guard let lease = order.lease else { return nil }
        // Rescue runs before a pass starts work, and a process runs one pass at a time, so a
        // claim of our own here was orphaned by an earlier pass (a failed ledger write after
        // the hook ran) and is taken back like any other.
        if lease.owner == owner { return "left over from an earlier pass of this process" }
        if lease.expiresAt <= now { return "lease of \(lease.owner) expired" }
        if lease.owner.isKnownDead { return "owner \(lease.owner) is gone" }
        return nil
    }

    /// Puts a claimed, not yet verified order back to `pending` as it was: no attempt used,
    /// no history (nothing happened to it).
    public func release(orderId: String, owner: LeaseOwner) throws(LedgerError) {
        let now = time.unixSeconds
        _ = try transition {
            try database.query("""
                UPDATE orders SET state = 'pending', updated_at = ?,
                       lease_host = NULL, lease_pid = NULL, lease_start = NULL, lease_expires_at = NULL
                WHERE order_id = ? AND state = 'verifying' AND \(Ledger.ownedBy)
                """, [.integer(now), .text(orderId)] + ownerArguments(owner))
        }
    }
}
