import SettleModel

/// The order writes every transition ends with, written once for both engines.
extension LedgerTransaction {
    /// Ends a claim: the order's new state, why, and no lease.
    package func finalize(_ orderId: String, state: OrderState, reason: String?, error: String?, environment: String?, now: Int64) throws {
        _ = try finalize(orderId, held: nil, state: state, reason: reason, error: error, environment: environment, now: now)
    }

    /// Ends a claim if it still holds the order in `held.state` (this owner and, where the
    /// dialect fences claims, this fencing token): the check and the write in one statement,
    /// which PostgreSQL re-evaluates on the row's latest version. False (nothing written) when
    /// the claim is gone.
    /// `recoveredAt`: the order's recovery (`markRecovered`) in the same statement, set only if unset.
    package func finalize(_ orderId: String, held: (state: OrderState, owner: LeaseOwner, fence: Int64?)?, state: OrderState,
                          reason: String?, error: String?, environment: String?, now: Int64, recoveredAt: Int64? = nil) throws -> Bool {
        var claim: (sql: String, values: [LedgerValue]) = ("", [])
        if let held {
            let holder = claimedBy(held.owner, fence: held.fence)
            claim = (" AND state = ? AND " + holder.sql, [.text(held.state.rawValue)] + holder.values)
        }
        var values: [LedgerValue] = [.text(state.rawValue), .from(reason), .from(error), .from(environment),
                                     state == .finished ? .integer(now) : .null, .integer(now)]
        if let recoveredAt { values.append(.integer(recoveredAt)) }
        values.append(.text(orderId))
        return try changedRows("""
            UPDATE orders SET state = ?, reason = ?, last_error = ?, environment = coalesce(?, environment),
                   finished_at = ?, updated_at = ?,\(recoveredAt == nil ? "" : " recovered_at = coalesce(recovered_at, ?),")
                   lease_host = NULL, lease_pid = NULL, lease_start = NULL, lease_expires_at = NULL
            WHERE order_id = ?\(claim.sql)
            """, values + claim.values) == 1
    }

    /// Whether this claim still holds the order in `state`, as `holding`, without reading the row.
    package func holds(_ orderId: String, state: OrderState, owner: LeaseOwner, fence: Int64?) throws -> Bool {
        let claim = claimedBy(owner, fence: fence)
        return try !query("SELECT 1 AS held FROM orders WHERE order_id = ? AND state = ? AND \(claim.sql)\(dialect.lockRows)",
                          [.text(orderId), .text(state.rawValue)] + claim.values).isEmpty
    }

    /// The order named, as it is now; nil when the ledger holds none.
    package func order(_ id: String) throws -> Order? {
        try query("SELECT * FROM orders WHERE order_id = ?", [.text(id)]).first.map { Order(row: $0) }
    }

    /// `markingRecovery` false: the caller already set the recovery an entry may carry (`finalize`'s `recoveredAt`).
    package func appendHistory(_ orderId: String, _ entry: HistoryEntry, markingRecovery: Bool = true) throws {
        try query("""
            INSERT INTO history(order_id, at, kind, outcome, apple_status, hook_exit, environment, duration_ms, detail)
            VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
            """, [.text(orderId), .integer(entry.at), .text(entry.kind.rawValue), .text(entry.outcome),
                  .from(entry.appleStatus), .from(entry.hookExit), .from(entry.environment), .from(entry.durationMs),
                  .from(entry.detail)])
        if markingRecovery { try markRecovered(orderId, entry) }
    }

    /// Who holds a purchase: its grant key, or its transaction id recorded by a backend.
    package func holderOf(_ purchase: VerifiedPurchase) throws -> GrantHolder? {
        guard let row = try query("""
            SELECT order_id, note FROM grants WHERE grant_key = ? OR transaction_id = ? OR grant_key = ? LIMIT 1
            """, [.text(purchase.grantKey), .text(purchase.transactionId), .text(purchase.transactionId)]).first else { return nil }
        if let id = row.string("order_id") { return .order(id) }
        return .outside(note: row.string("note"))
    }
}

extension LedgerTransaction {
    /// The order if this claim still holds it in `state`: this owner and, where the dialect
    /// fences claims, this fencing token; locked for the rest of the transaction where rows
    /// are locked.
    package func holding(_ orderId: String, state: OrderState, owner: LeaseOwner, fence: Int64?) throws -> Order? {
        let claim = claimedBy(owner, fence: fence)
        return try query("SELECT * FROM orders WHERE order_id = ? AND state = ? AND \(claim.sql)\(dialect.lockRows)",
                         [.text(orderId), .text(state.rawValue)] + claim.values).first.map { Order(row: $0) }
    }

    /// The condition that a claim is still `owner`'s (and, where the dialect fences claims, still
    /// the one with this fencing token).
    package func claimedBy(_ owner: LeaseOwner, fence: Int64?) -> (sql: String, values: [LedgerValue]) {
        let fenced = dialect.fence(fence)
        return ("lease_host = ? AND lease_pid = ? AND lease_start = ?" + fenced.sql,
                [.text(owner.host), .integer(Int64(owner.pid)), .text(owner.leaseStart)] + fenced.values)
    }

    /// The lease columns of a new claim by `owner` for `seconds` on the lease clock.
    package func newLease(_ owner: LeaseOwner, now: Int64, seconds: Int64) -> (sql: String, values: [LedgerValue]) {
        let expiry = dialect.leaseExpiry(now, seconds)
        return ("lease_host = ?, lease_pid = ?, lease_start = ?, lease_expires_at = \(expiry.sql)\(dialect.newFence)",
                [.text(owner.host), .integer(Int64(owner.pid)), .text(owner.leaseStart)] + expiry.values)
    }

    /// Stores a proof by its hash; the same proof twice is stored once.
    package func storeReceipt(_ data: String, sha256: String, now: Int64) throws {
        try query("INSERT INTO receipts(sha256, data, created_at) VALUES (?, ?, ?) ON CONFLICT DO NOTHING",
                  [.text(sha256), .text(data), .integer(now)])
    }
}
