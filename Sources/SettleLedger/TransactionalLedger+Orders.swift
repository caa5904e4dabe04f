import Foundation
import SettleBase
import SettleModel

/// What `enqueue` did.
package enum EnqueueResult: Sendable, Equatable {
    case created
    /// The same order with the same content was already there.
    case unchanged
}

/// Enqueue and the transitions of a claimed order, written once for both engines. Each
/// transition checks the claim (owner, and on PostgreSQL the fencing token, see
/// `LedgerDialect.fence`) in the unit that writes (`transition`: on SQLite one item of a group
/// commit, on PostgreSQL one transaction holding the row's lock).
extension TransactionalLedger {
    /// Records a paid order and its proof. The same order twice with the same content is a
    /// no-op; with different content it is refused, never overwritten. Two backends enqueueing
    /// the same order at once (on PostgreSQL) both succeed, one creating it and the other
    /// comparing against it.
    package func enqueue(_ new: NewOrder) throws(LedgerError) -> EnqueueResult {
        let receiptHash = new.receipt.map { SHA256.hex(Data($0.utf8)) }
        let now = time.unixSeconds
        return try writing { db in
            if let receipt = new.receipt, let hash = receiptHash { try db.storeReceipt(receipt, sha256: hash, now: now) }
            let created = try db.query("""
                INSERT INTO orders(order_id, user_id, product_id, transaction_id, receipt_sha256, signed_transaction,
                                   app_account_token, store, purchase_token, app_transaction, proof_kind, proof, proof_key,
                                   next_attempt_at, created_at, updated_at)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                ON CONFLICT (order_id) DO NOTHING RETURNING order_id
                """, [.text(new.orderId), .text(new.userId), .text(new.productId), .from(new.transactionId),
                      .from(receiptHash), .from(new.signedTransaction), .from(new.appAccountToken),
                      .text(new.store.rawValue), .from(new.purchaseToken?.value), .from(new.appTransaction),
                      .from(new.storeProof?.kind), .from(new.storeProof?.proof), .from(new.storeProof?.key), .integer(now),
                      .integer(now), .integer(now)])
            if created.isEmpty {
                guard let row = try db.query("SELECT * FROM orders WHERE order_id = ?", [.text(new.orderId)]).first else {
                    throw LedgerError.invalid("order \(new.orderId) vanished while enqueueing it")
                }
                let existing = Order(row: row)
                let same = existing.userId == new.userId && existing.productId == new.productId
                    && existing.requestedTransactionId == new.transactionId
                    && existing.receiptSHA256 == receiptHash && existing.signedTransaction == new.signedTransaction
                    && existing.appAccountToken == new.appAccountToken
                    && existing.store == new.store && existing.purchaseToken == new.purchaseToken
                    && existing.appTransaction == new.appTransaction && existing.storeProof == new.storeProof
                guard same else { throw LedgerError.conflictingOrder(new.orderId) }
                return .unchanged
            }
            try db.appendHistory(new.orderId, HistoryEntry(at: now, kind: .enqueue, outcome: "enqueued"))
            return .created
        }
    }

    /// The stored receipt with this hash, checked against the hash (a backend may have
    /// written the row by hand).
    package func receipt(sha256: String) throws(LedgerError) -> String? {
        let stored = try readingStatement { db in
            try db.query("SELECT data FROM receipts WHERE sha256 = ?", [.text(sha256)]).first?.string("data")
        }
        return stored.flatMap { ClaimedReceipts.checked($0, sha256: sha256) }
    }

    // MARK: - Verification outcomes

    /// Apple proved there is nothing to grant: `rejected` with a stable reason code.
    @discardableResult
    package func recordRejected(orderId: String, owner: LeaseOwner, fence: Int64?, reason: String, detail: String,
                               environment: String?, history: HistoryEntry) throws(LedgerError) -> Bool {
        try end(orderId, from: .verifying, owner: owner, fence: fence, as: .rejected, reason: reason, error: detail,
                environment: environment, history: history)
    }

    /// settle cannot decide the order by itself: `needs_attention` at once, with the reason.
    @discardableResult
    package func recordNeedsAttention(orderId: String, owner: LeaseOwner, fence: Int64?, reason: AttentionReason, detail: String,
                                     environment: String?, history: HistoryEntry) throws(LedgerError) -> Bool {
        try end(orderId, from: .verifying, owner: owner, fence: fence, as: .needsAttention, reason: reason.rawValue, error: detail,
                environment: environment, history: history)
    }

    /// The hook confirmed delivery: `finished`, for good.
    @discardableResult
    package func markFinished(orderId: String, owner: LeaseOwner, fence: Int64?, history: HistoryEntry) throws(LedgerError) -> Bool {
        try end(orderId, from: .delivering, owner: owner, fence: fence, as: .finished, reason: nil, error: nil,
                environment: nil, history: history)
    }

    package func markFinished(_ orders: [FinishedDelivery], owner: LeaseOwner) -> [Result<Bool, LedgerError>] {
        let now = time.unixSeconds
        return transitions(orders.map { order in
            ending(order.orderId, from: .delivering, owner: owner, fence: order.fence, as: .finished, reason: nil, error: nil,
                   environment: nil, history: order.history, now: now)
        })
    }

    /// Ends a claimed order in `state`; false (nothing written) when the claim is gone.
    private func end(_ orderId: String, from current: OrderState, owner: LeaseOwner, fence: Int64?, as state: OrderState,
                     reason: String?, error: String?, environment: String?, history: HistoryEntry) throws(LedgerError) -> Bool {
        try transition(ending(orderId, from: current, owner: owner, fence: fence, as: state, reason: reason, error: error,
                              environment: environment, history: history, now: time.unixSeconds))
    }

    /// The transition `end` runs.
    private func ending(_ orderId: String, from current: OrderState, owner: LeaseOwner, fence: Int64?, as state: OrderState,
                        reason: String?, error: String?, environment: String?, history: HistoryEntry,
                        now: Int64) -> (any LedgerTransaction) throws -> Bool {
        { db in
            // The recovery a delivered history entry marks, written by the same UPDATE.
            let recovery = history.recoveredAt
            guard try db.finalize(orderId, held: (current, owner, fence), state: state, reason: reason, error: error,
                                  environment: environment, now: now, recoveredAt: recovery) else { return false }
            try db.appendHistory(orderId, history, markingRecovery: recovery == nil)
            return true
        }
    }

    /// The store refused to hear that a delivered order is done (Google's 4xx on acknowledge or
    /// consume): the goods were granted, so the order is never delivered again, but the store is
    /// asked again only at `nextAttemptAt` (a backoff, counting attempts), and once the attempts
    /// run out a person decides (`needs_attention`, `store_finish_refused`): its grant stays, so
    /// a revoke queued for it runs, and status keeps showing Google's refund clock. Returns the
    /// state the order is left in; nil when the claim is gone.
    package func recordStoreFinishRefused(orderId: String, owner: LeaseOwner, fence: Int64?, error: String, nextAttemptAt: Int64,
                                          maxAttempts: Int, history: HistoryEntry) throws(LedgerError) -> OrderState? {
        let now = time.unixSeconds
        return try transition { db in
            let claim = db.claimedBy(owner, fence: fence)
            guard let row = try db.query("""
                UPDATE orders SET attempts = attempts + 1, next_attempt_at = ?, last_error = ?, updated_at = ?
                WHERE order_id = ? AND state = 'delivering' AND \(claim.sql)
                RETURNING attempts
                """, [.integer(nextAttemptAt), .text(error), .integer(now), .text(orderId)] + claim.values).first else { return nil }
            try db.appendHistory(orderId, history)
            guard row.count("attempts") >= maxAttempts else { return .delivering }
            try db.query("""
                UPDATE orders SET state = 'needs_attention', reason = ?, delivered_at = NULL, finished_at = NULL,
                       lease_host = NULL, lease_pid = NULL, lease_start = NULL, lease_expires_at = NULL
                WHERE order_id = ?
                """, [.text(AttentionReason.storeFinishRefused.rawValue), .text(orderId)])
            return .needsAttention
        }
    }

    /// A verification or delivery that did not succeed and may be tried again.
    ///
    /// `countsAttempt` is false for failures of Apple as a whole, which must not use up the
    /// order's attempts. When the attempts reach `maxAttempts` the order needs a person.
    /// `permanent` sends it to a person at once (the hook refused). `exhaustedReason` is what an
    /// order out of attempts needs a person for, after its last attempt (`hook_unconfirmed` when
    /// that one was answered success without a confirmation).
    @discardableResult
    package func recordFailure(orderId: String, owner: LeaseOwner, fence: Int64?, from state: OrderState, error: String,
                              countsAttempt: Bool, permanent: Bool, nextAttemptAt: Int64, maxAttempts: Int,
                              exhaustedReason: AttentionReason, environment: String?, history: HistoryEntry) throws(LedgerError) -> OrderState? {
        let now = time.unixSeconds
        return try transition { db in
            guard let order = try db.holding(orderId, state: state, owner: owner, fence: fence) else { return nil }
            let attempts = order.attempts + (countsAttempt ? 1 : 0)
            var newState = OrderState.pending
            var reason: String? = nil
            if permanent {
                newState = .needsAttention
                reason = AttentionReason.hookRefused.rawValue
            } else if countsAttempt && attempts >= maxAttempts {
                newState = .needsAttention
                reason = exhaustedReason.rawValue
            }
            try db.query("""
                UPDATE orders SET state = ?, attempts = ?, next_attempt_at = ?, reason = ?, last_error = ?,
                       environment = coalesce(?, environment), updated_at = ?,
                       lease_host = NULL, lease_pid = NULL, lease_start = NULL, lease_expires_at = NULL
                WHERE order_id = ?
                """, [.text(newState.rawValue), .integer(Int64(attempts)), .integer(nextAttemptAt), .from(reason),
                      .text(error), .from(environment), .integer(now), .text(orderId)])
            try db.appendHistory(orderId, history)
            return newState
        }
    }

    // MARK: - Rows settle cannot work on

    /// A write about this order failed a constraint (a row a backend broke): `needs_attention`
    /// (`row_invalid`) so the pass goes on. History is written only if the row accepts it.
    package func quarantine(orderId: String, detail: String) throws(LedgerError) {
        let now = time.unixSeconds
        try writing { db in
            try db.query("""
                UPDATE orders SET state = 'needs_attention', reason = 'row_invalid', last_error = ?, updated_at = ?,
                       finished_at = NULL, lease_host = NULL, lease_pid = NULL, lease_start = NULL, lease_expires_at = NULL
                WHERE order_id = ? AND state IN ('pending','verifying','delivering')
                """, [.text(detail), .integer(now), .text(orderId)])
        }
        _ = try? writing { db in
            try db.appendHistory(orderId, HistoryEntry(at: now, kind: .verification, outcome: "needs_attention",
                                                       detail: "row_invalid: \(detail)"))
        }
    }
}
