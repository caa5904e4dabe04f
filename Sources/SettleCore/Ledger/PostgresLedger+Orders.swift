import Foundation

/// Enqueue and the transitions of a claimed order, as in `Ledger+Orders.swift`; each checks
/// the claim (owner and fencing token) under the row's lock in the transaction that writes.
extension PostgresLedger {
    public func enqueue(_ new: NewOrder) throws(LedgerError) -> EnqueueResult {
        let receiptHash = new.receipt.map { SHA256.hex(Data($0.utf8)) }
        let now = time.unixSeconds
        return try write { db in
            if let receipt = new.receipt, let hash = receiptHash {
                try db.run("INSERT INTO receipts(sha256, data, created_at) VALUES (?, ?, ?) ON CONFLICT DO NOTHING",
                           [.text(hash), .text(receipt), .integer(now)])
            }
            // ON CONFLICT: two backends enqueueing the same order at once both succeed, one
            // creating it and the other comparing against it.
            let created = try db.run("""
                INSERT INTO orders(order_id, user_id, product_id, transaction_id, receipt_sha256, signed_transaction,
                                   app_account_token, store, purchase_token, next_attempt_at, created_at, updated_at)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                ON CONFLICT (order_id) DO NOTHING RETURNING order_id
                """, [.text(new.orderId), .text(new.userId), .text(new.productId), .from(new.transactionId),
                      .from(receiptHash), .from(new.signedTransaction), .from(new.appAccountToken),
                      .text(new.store.rawValue), .from(new.purchaseToken?.value), .integer(now),
                      .integer(now), .integer(now)])
            if created.isEmpty {
                guard let row = try db.run("SELECT * FROM orders WHERE order_id = ?", [.text(new.orderId)]).first else {
                    throw LedgerError.invalid("order \(new.orderId) vanished while enqueueing it")
                }
                let existing = Order(row: row)
                let same = existing.userId == new.userId && existing.productId == new.productId
                    && existing.requestedTransactionId == new.transactionId
                    && existing.receiptSHA256 == receiptHash && existing.signedTransaction == new.signedTransaction
                    && existing.appAccountToken == new.appAccountToken
                    && existing.store == new.store && existing.purchaseToken == new.purchaseToken
                guard same else { throw LedgerError.conflictingOrder(new.orderId) }
                return .unchanged
            }
            try appendHistory(db, new.orderId, HistoryEntry(at: now, kind: .enqueue, outcome: "enqueued"))
            return .created
        }
    }

    public func receipt(sha256: String) throws(LedgerError) -> String? {
        let stored = try read { db in
            try db.run("SELECT data FROM receipts WHERE sha256 = ?", [.text(sha256)]).first?.string("data")
        }
        guard let stored, SHA256.hex(Data(stored.utf8)) == sha256.lowercased() else { return nil }
        return stored
    }

    public func recordRejected(orderId: String, owner: LeaseOwner, fence: Int64?, reason: String, detail: String,
                               environment: String?, history: HistoryEntry) throws(LedgerError) -> Bool {
        let now = time.unixSeconds
        return try write { db in
            guard try holding(db, orderId, state: .verifying, owner: owner, fence: fence) != nil else { return false }
            try finalize(db, orderId, state: .rejected, reason: reason, error: detail, environment: environment, now: now)
            try appendHistory(db, orderId, history)
            return true
        }
    }

    public func recordNeedsAttention(orderId: String, owner: LeaseOwner, fence: Int64?, reason: AttentionReason, detail: String,
                                     environment: String?, history: HistoryEntry) throws(LedgerError) -> Bool {
        let now = time.unixSeconds
        return try write { db in
            guard try holding(db, orderId, state: .verifying, owner: owner, fence: fence) != nil else { return false }
            try finalize(db, orderId, state: .needsAttention, reason: reason.rawValue, error: detail, environment: environment, now: now)
            try appendHistory(db, orderId, history)
            return true
        }
    }

    /// PostgreSQL's column types refuse the malformed rows SQLite lets a backend write, so
    /// there is never one to set aside.
    /// Typed columns and valid UTF-8 leave PostgreSQL no malformed rows, and new rows are forced
    /// to `pending`; what is left is a row put in flight by someone else than settle (a role
    /// with UPDATE): `delivering` without holding its grant row, or in flight without a claim.
    /// As on SQLite, such a row goes to `needs_attention` (`row_invalid`) and is never delivered.
    public func quarantineMalformedRows() throws(LedgerError) -> [String] {
        let now = time.unixSeconds
        return try write { db in
            let ids = try db.run("""
                UPDATE orders SET state = 'needs_attention', reason = 'row_invalid',
                       last_error = 'this row was ' || state || ' without ' ||
                                    CASE WHEN lease_host IS NOT NULL AND lease_start IS NOT NULL AND lease_expires_at IS NOT NULL
                                         THEN 'the grant row settle reserves before any delivery' ELSE 'a claim of settle''s' END ||
                                    ': settle moves orders out of pending itself, after Apple confirmed the purchase. ' ||
                                    'Check who wrote it; a backend writes new orders as pending',
                       updated_at = ?, lease_host = NULL, lease_pid = NULL, lease_start = NULL, lease_expires_at = NULL
                WHERE \(Ledger.inFlightWithoutClaim)
                RETURNING order_id
                """, [.integer(now)]).compactMap { $0.string("order_id") }
            for id in ids {
                try appendHistory(db, id, HistoryEntry(at: now, kind: .verification, outcome: "needs_attention",
                                                       detail: "row_invalid: written in flight without a claim or a grant"))
            }
            return ids
        }
    }

    public func quarantine(orderId: String, detail: String) throws(LedgerError) {
        let now = time.unixSeconds
        try write { db in
            try db.run("""
                UPDATE orders SET state = 'needs_attention', reason = 'row_invalid', last_error = ?, updated_at = ?,
                       finished_at = NULL, lease_host = NULL, lease_pid = NULL, lease_start = NULL, lease_expires_at = NULL
                WHERE order_id = ? AND state IN ('pending','verifying','delivering')
                """, [.text(detail), .integer(now), .text(orderId)])
        }
        _ = try? write { db in
            try appendHistory(db, orderId, HistoryEntry(at: now, kind: .verification, outcome: "needs_attention",
                                                        detail: "row_invalid: \(detail)"))
        }
    }

    public func recordFailure(orderId: String, owner: LeaseOwner, fence: Int64?, from state: OrderState, error: String,
                              countsAttempt: Bool, permanent: Bool, nextAttemptAt: Int64, maxAttempts: Int,
                              environment: String?, history: HistoryEntry) throws(LedgerError) -> OrderState? {
        let now = time.unixSeconds
        return try write { db in
            guard let order = try holding(db, orderId, state: state, owner: owner, fence: fence) else { return nil }
            let attempts = order.attempts + (countsAttempt ? 1 : 0)
            var newState = OrderState.pending
            var reason: String? = nil
            if permanent {
                newState = .needsAttention
                reason = AttentionReason.hookRefused.rawValue
            } else if countsAttempt && attempts >= maxAttempts {
                newState = .needsAttention
                reason = AttentionReason.attemptsExhausted.rawValue
            }
            try db.run("""
                UPDATE orders SET state = ?, attempts = ?, next_attempt_at = ?, reason = ?, last_error = ?,
                       environment = coalesce(?, environment), updated_at = ?,
                       lease_host = NULL, lease_pid = NULL, lease_start = NULL, lease_expires_at = NULL
                WHERE order_id = ?
                """, [.text(newState.rawValue), .integer(Int64(attempts)), .integer(nextAttemptAt), .from(reason),
                      .text(error), .from(environment), .integer(now), .text(orderId)])
            try appendHistory(db, orderId, history)
            return newState
        }
    }

    public func markFinished(orderId: String, owner: LeaseOwner, fence: Int64?, history: HistoryEntry) throws(LedgerError) -> Bool {
        let now = time.unixSeconds
        return try write { db in
            guard try holding(db, orderId, state: .delivering, owner: owner, fence: fence) != nil else { return false }
            try finalize(db, orderId, state: .finished, reason: nil, error: nil, environment: nil, now: now)
            try appendHistory(db, orderId, history)
            return true
        }
    }

    // MARK: - Shared by the transitions

    /// The claim a transition acts on: this owner, and (when given) this fencing token.
    static let claimedBy = "lease_host = ? AND lease_pid = ? AND lease_start = ? AND (?::bigint IS NULL OR fencing_token = ?::bigint)"

    func claimArguments(_ owner: LeaseOwner, _ fence: Int64?) -> [PostgresValue] {
        [.text(owner.host), .integer(Int64(owner.pid)), .text(owner.leaseStart), .from(fence), .from(fence)]
    }

    /// The order if this claim still holds it, locked for the rest of the transaction.
    func holding(_ db: PostgresConnection, _ orderId: String, state: OrderState, owner: LeaseOwner, fence: Int64?) throws -> Order? {
        try db.run("SELECT * FROM orders WHERE order_id = ? AND state = ? AND \(PostgresLedger.claimedBy) FOR UPDATE",
                   [.text(orderId), .text(state.rawValue)] + claimArguments(owner, fence)).first.map(Order.init(row:))
    }

    func finalize(_ db: PostgresConnection, _ orderId: String, state: OrderState, reason: String?, error: String?,
                  environment: String?, now: Int64) throws {
        try db.run("""
            UPDATE orders SET state = ?, reason = ?, last_error = ?, environment = coalesce(?, environment),
                   finished_at = ?, updated_at = ?,
                   lease_host = NULL, lease_pid = NULL, lease_start = NULL, lease_expires_at = NULL
            WHERE order_id = ?
            """, [.text(state.rawValue), .from(reason), .from(error), .from(environment),
                  state == .finished ? .integer(now) : .null, .integer(now), .text(orderId)])
    }

    func appendHistory(_ db: PostgresConnection, _ orderId: String, _ entry: HistoryEntry) throws {
        try db.run("""
            INSERT INTO history(order_id, at, kind, outcome, apple_status, hook_exit, environment, duration_ms, detail)
            VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
            """, [.text(orderId), .integer(entry.at), .text(entry.kind.rawValue), .text(entry.outcome),
                  .from(entry.appleStatus), .from(entry.hookExit), .from(entry.environment), .from(entry.durationMs),
                  .from(entry.detail)])
    }
}
