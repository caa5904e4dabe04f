import Foundation

/// What `enqueue` did.
public enum EnqueueResult: Sendable, Equatable {
    case created
    /// The same order with the same content was already there.
    case unchanged
}

/// What recording Apple's confirmation did.
public enum VerifiedResult: Sendable, Equatable {
    /// The grant row is ours; the order is `delivering`.
    case delivering(Order)
    /// Apple's transaction is already granted to another order; this one is `rejected`.
    case alreadyGranted(otherOrderId: String)
    /// The order already holds a different transaction; it now needs a person.
    case grantConflict(String)
    /// Our claim was taken back meanwhile (lease expired and rescued); nothing written.
    case leaseLost
}

/// What rescue found and did.
public struct RescueResult: Sendable, Equatable {
    /// Orders taken back from `verifying` to `pending` (no attempt used).
    public var requeued: [String] = []
    /// Orders in `delivering` now leased to us, to be delivered again with the same key.
    public var redeliver: [Order] = []
}

/// Why an order went to `needs_attention`, as `status` shows it.
public enum AttentionReason: String, Sendable {
    case attemptsExhausted = "attempts_exhausted"
    case hookRefused = "hook_refused"
    case grantConflict = "grant_conflict"
}

extension Ledger {
    // MARK: - Enqueue

    /// Records a paid order and its proof. The same order twice with the same content is a
    /// no-op; with different content it is refused, never overwritten.
    public func enqueue(_ new: NewOrder) throws(LedgerError) -> EnqueueResult {
        let receiptHash = new.receipt.map { SHA256.hex(Data($0.utf8)) }
        let now = time.unixSeconds
        return try locked { () throws(LedgerError) in
            try write {
                if let row = try database.query("SELECT * FROM orders WHERE order_id = ?", [.text(new.orderId)]).first {
                    let existing = Order(row: row)
                    let same = existing.userId == new.userId && existing.productId == new.productId
                        && existing.requestedTransactionId == new.transactionId
                        && existing.receiptSHA256 == receiptHash && existing.signedTransaction == new.signedTransaction
                    guard same else { throw LedgerError.conflictingOrder(new.orderId) }
                    return .unchanged
                }
                if let receipt = new.receipt, let hash = receiptHash {
                    try database.query("INSERT OR IGNORE INTO receipts(sha256, data, created_at) VALUES (?, ?, ?)",
                                       [.text(hash), .text(receipt), .integer(now)])
                }
                try database.query("""
                    INSERT INTO orders(order_id, user_id, product_id, transaction_id, receipt_sha256, signed_transaction,
                                       next_attempt_at, created_at, updated_at)
                    VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
                    """, [.text(new.orderId), .text(new.userId), .text(new.productId), .from(new.transactionId),
                          .from(receiptHash), .from(new.signedTransaction), .integer(now), .integer(now), .integer(now)])
                try appendHistory(new.orderId, HistoryEntry(at: now, kind: .enqueue, outcome: "enqueued"))
                return .created
            }
        }
    }

    /// The stored receipt with this hash, checked against the hash (a backend may have
    /// written the row by hand).
    public func receipt(sha256: String) throws(LedgerError) -> String? {
        let stored = try read {
            try database.query("SELECT data FROM receipts WHERE sha256 = ?", [.text(sha256)]).first?.string("data")
        }
        guard let stored, SHA256.hex(Data(stored.utf8)) == sha256.lowercased() else { return nil }
        return stored
    }

    // MARK: - Verification outcomes

    /// Records Apple's confirmation and reserves the transaction for this order, in one
    /// transaction: the UNIQUE grant row is what makes "granted at most once" true.
    public func recordVerified(orderId: String, owner: LeaseOwner, purchase: VerifiedPurchase,
                               deliveryLeaseSeconds: Int64, history: HistoryEntry) throws(LedgerError) -> VerifiedResult {
        let now = time.unixSeconds
        return try locked { () throws(LedgerError) in
            try write {
                guard try holds(orderId, state: .verifying, owner: owner) else { return .leaseLost }
                try database.query("INSERT INTO grants(transaction_id, order_id, granted_at) VALUES (?, ?, ?) ON CONFLICT DO NOTHING",
                                   [.text(purchase.transactionId), .text(orderId), .integer(now)])
                let holder = try database.query("SELECT order_id FROM grants WHERE transaction_id = ?",
                                                 [.text(purchase.transactionId)]).first?.string("order_id")
                if let holder, holder != orderId {
                    try finalize(orderId, state: .rejected, reason: "already_granted",
                                 error: "transaction \(purchase.transactionId) was already granted to order \(holder)",
                                 environment: purchase.environment, now: now)
                    var entry = history
                    entry.outcome = "rejected"
                    entry.detail = "already_granted to \(holder)"
                    try appendHistory(orderId, entry)
                    return .alreadyGranted(otherOrderId: holder)
                }
                if holder == nil {
                    let other = try database.query("SELECT transaction_id FROM grants WHERE order_id = ?", [.text(orderId)])
                        .first?.string("transaction_id") ?? "?"
                    let message = "order already holds transaction \(other), Apple now matched \(purchase.transactionId)"
                    try finalize(orderId, state: .needsAttention, reason: AttentionReason.grantConflict.rawValue,
                                 error: message, environment: purchase.environment, now: now)
                    var entry = history
                    entry.outcome = "needs_attention"
                    entry.detail = message
                    try appendHistory(orderId, entry)
                    return .grantConflict(message)
                }
                let row = try database.query("""
                    UPDATE orders SET state = 'delivering', environment = ?, verified_transaction_id = ?,
                           original_transaction_id = ?, verified_product_id = ?, quantity = ?, purchase_date_ms = ?,
                           expires_date_ms = ?, reason = NULL, last_error = NULL, lease_expires_at = ?, updated_at = ?
                    WHERE order_id = ? RETURNING *
                    """, [.text(purchase.environment), .text(purchase.transactionId), .text(purchase.originalTransactionId),
                          .text(purchase.productId), .integer(Int64(purchase.quantity)), .from(purchase.purchaseDateMs),
                          .from(purchase.expiresDateMs), .integer(now + deliveryLeaseSeconds), .integer(now), .text(orderId)])
                try appendHistory(orderId, history)
                return .delivering(Order(row: row[0]))
            }
        }
    }

    /// Apple proved there is nothing to grant: `rejected` with a stable reason code.
    @discardableResult
    public func recordRejected(orderId: String, owner: LeaseOwner, reason: String, detail: String,
                               environment: String?, history: HistoryEntry) throws(LedgerError) -> Bool {
        let now = time.unixSeconds
        return try locked { () throws(LedgerError) in
            try write {
                guard try holds(orderId, state: .verifying, owner: owner) else { return false }
                try finalize(orderId, state: .rejected, reason: reason, error: detail, environment: environment, now: now)
                try appendHistory(orderId, history)
                return true
            }
        }
    }

    /// A verification or delivery that did not succeed and may be tried again.
    ///
    /// `countsAttempt` is false for failures of Apple as a whole, which must not use up the
    /// order's attempts. When the attempts reach `maxAttempts` the order needs a person.
    /// `permanent` sends it to a person at once (the hook refused).
    @discardableResult
    public func recordFailure(orderId: String, owner: LeaseOwner, from state: OrderState, error: String,
                              countsAttempt: Bool, permanent: Bool = false, nextAttemptAt: Int64, maxAttempts: Int,
                              environment: String? = nil, history: HistoryEntry) throws(LedgerError) -> OrderState? {
        let now = time.unixSeconds
        return try locked { () throws(LedgerError) in
            try write {
                guard let order = try holding(orderId, state: state, owner: owner) else { return nil }
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
                try database.query("""
                    UPDATE orders SET state = ?, attempts = ?, next_attempt_at = ?, reason = ?, last_error = ?,
                           environment = coalesce(?, environment), updated_at = ?,
                           lease_host = NULL, lease_pid = NULL, lease_start = NULL, lease_expires_at = NULL
                    WHERE order_id = ?
                    """, [.text(newState.rawValue), .integer(Int64(attempts)), .integer(nextAttemptAt), .from(reason),
                          .text(error), .from(environment), .integer(now), .text(orderId)])
                try appendHistory(orderId, history)
                return newState
            }
        }
    }

    /// The hook confirmed delivery: `finished`, for good.
    @discardableResult
    public func markFinished(orderId: String, owner: LeaseOwner, history: HistoryEntry) throws(LedgerError) -> Bool {
        let now = time.unixSeconds
        return try locked { () throws(LedgerError) in
            try write {
                guard try holds(orderId, state: .delivering, owner: owner) else { return false }
                try finalize(orderId, state: .finished, reason: nil, error: nil, environment: nil, now: now)
                try appendHistory(orderId, history)
                return true
            }
        }
    }

    // MARK: - Support

    /// Puts `needs_attention` or `rejected` orders back to `pending`, due now, attempts reset.
    /// All or nothing: an unknown id or an order in another state refuses the whole request.
    public func retry(orderIds: [String], note: String?) throws(LedgerError) {
        let now = time.unixSeconds
        try locked { () throws(LedgerError) in
            try write {
                for id in orderIds {
                    guard let row = try database.query("SELECT state FROM orders WHERE order_id = ?", [.text(id)]).first else {
                        throw LedgerError.invalid("no order \(id) in the ledger")
                    }
                    let state = row.string("state") ?? "?"
                    guard state == OrderState.needsAttention.rawValue || state == OrderState.rejected.rawValue else {
                        throw LedgerError.invalid("order \(id) is \(state); only needs_attention or rejected orders can be retried")
                    }
                    try database.query("""
                        UPDATE orders SET state = 'pending', attempts = 0, next_attempt_at = ?, reason = NULL,
                               last_error = NULL, updated_at = ? WHERE order_id = ?
                        """, [.integer(now), .integer(now), .text(id)])
                    try appendHistory(id, HistoryEntry(at: now, kind: .retry, outcome: "retried", detail: note ?? "from \(state)"))
                }
            }
        }
    }

    // MARK: - Private

    static let ownedBy = "lease_host = ? AND lease_pid = ? AND lease_start = ?"

    func ownerArguments(_ owner: LeaseOwner) -> [SQLiteValue] {
        [.text(owner.host), .integer(Int64(owner.pid)), .text(owner.leaseStart)]
    }

    func leaseArguments(_ owner: LeaseOwner, expiresAt: Int64) -> [SQLiteValue] {
        ownerArguments(owner) + [.integer(expiresAt)]
    }

    private func holding(_ orderId: String, state: OrderState, owner: LeaseOwner) throws -> Order? {
        try database.query("SELECT * FROM orders WHERE order_id = ? AND state = ? AND \(Ledger.ownedBy)",
                           [.text(orderId), .text(state.rawValue)] + ownerArguments(owner)).first.map(Order.init(row:))
    }

    private func holds(_ orderId: String, state: OrderState, owner: LeaseOwner) throws -> Bool {
        try holding(orderId, state: state, owner: owner) != nil
    }

    private func finalize(_ orderId: String, state: OrderState, reason: String?, error: String?, environment: String?,
                          now: Int64) throws {
        try database.query("""
            UPDATE orders SET state = ?, reason = ?, last_error = ?, environment = coalesce(?, environment),
                   finished_at = ?, updated_at = ?,
                   lease_host = NULL, lease_pid = NULL, lease_start = NULL, lease_expires_at = NULL
            WHERE order_id = ?
            """, [.text(state.rawValue), .from(reason), .from(error), .from(environment),
                  state == .finished ? .integer(now) : .null, .integer(now), .text(orderId)])
    }

    func appendHistory(_ orderId: String, _ entry: HistoryEntry) throws {
        try database.query("""
            INSERT INTO history(order_id, at, kind, outcome, apple_status, hook_exit, environment, duration_ms, detail)
            VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
            """, [.text(orderId), .integer(entry.at), .text(entry.kind.rawValue), .text(entry.outcome),
                  .from(entry.appleStatus), .from(entry.hookExit), .from(entry.environment), .from(entry.durationMs),
                  .from(entry.detail)])
    }
}

extension Order {
    init(row: SQLiteRow) {
        let verified: VerifiedPurchase? = row.string("verified_transaction_id").map { txn in
            VerifiedPurchase(transactionId: txn, originalTransactionId: row.string("original_transaction_id") ?? txn,
                             productId: row.string("verified_product_id") ?? row.string("product_id") ?? "",
                             environment: row.string("environment") ?? "", quantity: Int(row.int("quantity") ?? 1),
                             purchaseDateMs: row.int("purchase_date_ms"), expiresDateMs: row.int("expires_date_ms"))
        }
        var lease: Lease? = nil
        if let host = row.string("lease_host"), let pid = row.int("lease_pid") {
            lease = Lease(owner: LeaseOwner(host: host, pid: Int32(truncatingIfNeeded: pid), leaseStart: row.string("lease_start") ?? ""),
                          expiresAt: row.int("lease_expires_at") ?? 0)
        }
        self.init(orderId: row.string("order_id") ?? "", userId: row.string("user_id") ?? "",
                  productId: row.string("product_id") ?? "", requestedTransactionId: row.string("transaction_id"),
                  receiptSHA256: row.string("receipt_sha256"), signedTransaction: row.string("signed_transaction"),
                  state: OrderState(rawValue: row.string("state") ?? "") ?? .pending,
                  attempts: Int(row.int("attempts") ?? 0), nextAttemptAt: row.int("next_attempt_at") ?? 0,
                  reason: row.string("reason"), lastError: row.string("last_error"), environment: row.string("environment"),
                  verified: verified, createdAt: row.int("created_at") ?? 0, updatedAt: row.int("updated_at") ?? 0,
                  finishedAt: row.int("finished_at"), lease: lease)
    }
}
