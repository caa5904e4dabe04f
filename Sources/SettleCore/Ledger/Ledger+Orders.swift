import Foundation

/// What `enqueue` did.
public enum EnqueueResult: Sendable, Equatable {
    case created
    /// The same order with the same content was already there.
    case unchanged
}

/// What rescue found and did.
public struct RescueResult: Sendable, Equatable {
    /// Orders taken back from `verifying` to `pending` (no attempt used).
    public var requeued: [String] = []
    /// Orders in `delivering` to be delivered again with the same key, once leased.
    public var redeliver: [String] = []
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
                        && existing.appAccountToken == new.appAccountToken
                        && existing.store == new.store && existing.purchaseToken == new.purchaseToken
                    guard same else { throw LedgerError.conflictingOrder(new.orderId) }
                    return .unchanged
                }
                if let receipt = new.receipt, let hash = receiptHash {
                    try database.query("INSERT OR IGNORE INTO receipts(sha256, data, created_at) VALUES (?, ?, ?)",
                                       [.text(hash), .text(receipt), .integer(now)])
                }
                try database.query("""
                    INSERT INTO orders(order_id, user_id, product_id, transaction_id, receipt_sha256, signed_transaction,
                                       app_account_token, store, purchase_token, next_attempt_at, created_at, updated_at)
                    VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                    """, [.text(new.orderId), .text(new.userId), .text(new.productId), .from(new.transactionId),
                          .from(receiptHash), .from(new.signedTransaction), .from(new.appAccountToken),
                          .text(new.store.rawValue), .from(new.purchaseToken?.value), .integer(now),
                          .integer(now), .integer(now)])
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

    /// Apple proved there is nothing to grant: `rejected` with a stable reason code.
    @discardableResult
    public func recordRejected(orderId: String, owner: LeaseOwner, reason: String, detail: String,
                               environment: String?, history: HistoryEntry) throws(LedgerError) -> Bool {
        let now = time.unixSeconds
        return try transition {
            guard try holds(orderId, state: .verifying, owner: owner) else { return false }
            try finalize(orderId, state: .rejected, reason: reason, error: detail, environment: environment, now: now)
            try appendHistory(orderId, history)
            return true
        }
    }

    /// settle cannot decide the order by itself: `needs_attention` at once, with the reason.
    @discardableResult
    public func recordNeedsAttention(orderId: String, owner: LeaseOwner, reason: AttentionReason, detail: String,
                                     environment: String?, history: HistoryEntry) throws(LedgerError) -> Bool {
        let now = time.unixSeconds
        return try transition {
            guard try holds(orderId, state: .verifying, owner: owner) else { return false }
            try finalize(orderId, state: .needsAttention, reason: reason.rawValue, error: detail, environment: environment, now: now)
            try appendHistory(orderId, history)
            return true
        }
    }

    // MARK: - Rows settle cannot work on

    /// A row a backend wrote with values settle cannot read back as written: a BLOB where text
    /// belongs, or text with a NUL character or bytes that are not UTF-8 (read back, it would
    /// be another string, so statements naming the row by it would miss it or hit another row).
    /// Such a row is never claimed; `quarantineMalformedRows` sets it aside by rowid.
    static let wellFormed = """
        typeof(order_id) = 'text' AND typeof(user_id) = 'text' AND typeof(product_id) = 'text'
        AND typeof(transaction_id) IN ('text','null') AND typeof(receipt_sha256) IN ('text','null')
        AND typeof(signed_transaction) IN ('text','null') AND typeof(app_account_token) IN ('text','null')
        AND typeof(purchase_token) IN ('text','null') AND settle_clean_text(purchase_token)
        AND settle_clean_text(order_id) AND settle_clean_text(user_id) AND settle_clean_text(product_id)
        AND settle_clean_text(transaction_id) AND settle_clean_text(receipt_sha256)
        AND settle_clean_text(signed_transaction) AND settle_clean_text(app_account_token)
        """

    /// How a column of a malformed row reads in its `last_error`.
    private static func describe(_ column: String) -> String {
        "'\(column) ' || CASE WHEN typeof(\(column)) = 'text' AND NOT settle_clean_text(\(column)) "
            + "THEN 'text with a NUL or bytes that are not UTF-8' ELSE typeof(\(column)) END"
    }

    /// Rows in flight that settle did not put there: `verifying` or `delivering` without a whole
    /// claim, or `delivering` without holding the grant row of its purchase (settle reserves it
    /// in the same write that starts a delivery). Rescue would otherwise deliver such a row
    /// without Apple ever confirming it.
    static let inFlightWithoutClaim = """
        state IN ('verifying','delivering') AND (lease_host IS NULL OR lease_start IS NULL OR lease_expires_at IS NULL
            OR (state = 'delivering' AND NOT EXISTS (SELECT 1 FROM grants
                WHERE grants.order_id = orders.order_id AND grants.grant_key = orders.grant_key)))
        """

    /// Moves every unsettled row settle cannot work on to `needs_attention` (`row_invalid`), by
    /// rowid, so one bad row never stops the pass: rows not well formed, and rows written in
    /// flight without a claim or a grant. Returns a printable id of each.
    public func quarantineMalformedRows() throws(LedgerError) -> [String] {
        let now = time.unixSeconds
        let columns = ["order_id", "user_id", "product_id", "transaction_id", "receipt_sha256", "signed_transaction", "app_account_token",
                       "purchase_token"]
        return try locked { () throws(LedgerError) in
            try write {
                let malformed = try database.query("""
                    UPDATE orders SET state = 'needs_attention', reason = 'row_invalid',
                           last_error = 'a backend wrote this row with values settle cannot read back as written: ' ||
                                        \(columns.map(Ledger.describe).joined(separator: " || ', ' || "))
                                        || '; rewrite it with plain text values and run settle retry',
                           updated_at = ?, lease_host = NULL, lease_pid = NULL, lease_start = NULL, lease_expires_at = NULL
                    WHERE state IN ('pending','verifying','delivering') AND NOT (\(Ledger.wellFormed))
                    RETURNING CASE WHEN typeof(order_id) = 'text' AND settle_clean_text(order_id) THEN order_id ELSE 'rowid ' || rowid END AS id,
                              typeof(order_id) = 'text' AND settle_clean_text(order_id) AS named
                    """, [.integer(now)])
                let unclaimed = try database.query("""
                    UPDATE orders SET state = 'needs_attention', reason = 'row_invalid',
                           last_error = 'this row was written as ' || state || ' without ' ||
                                        CASE WHEN state = 'delivering' AND lease_host IS NOT NULL AND lease_start IS NOT NULL
                                                  AND lease_expires_at IS NOT NULL
                                             THEN 'the grant row settle reserves before any delivery' ELSE 'a claim of settle''s' END ||
                                        ': settle moves orders out of pending itself, after Apple confirmed the purchase. ' ||
                                        'Check who wrote it; a backend writes new orders as pending',
                           updated_at = ?, lease_host = NULL, lease_pid = NULL, lease_start = NULL, lease_expires_at = NULL
                    WHERE \(Ledger.inFlightWithoutClaim)
                    RETURNING order_id AS id, 1 AS named
                    """, [.integer(now)])
                for row in malformed + unclaimed where row.int("named") == 1 {
                    if let id = row.string("id") {
                        try appendHistory(id, HistoryEntry(at: now, kind: .verification, outcome: "needs_attention",
                                                           detail: "row_invalid: " + (unclaimed.contains { $0.string("id") == id }
                                                                ? "written in flight without a claim or a grant"
                                                                : "a column holds a value settle cannot read back as written")))
                    }
                }
                return (malformed + unclaimed).compactMap { $0.string("id") }
            }
        }
    }

    /// A write about this order failed a constraint (a row a backend broke): `needs_attention`
    /// (`row_invalid`) so the pass goes on. History is written only if the row accepts it.
    public func quarantine(orderId: String, detail: String) throws(LedgerError) {
        let now = time.unixSeconds
        try locked { () throws(LedgerError) in
            try write {
                try database.query("""
                    UPDATE orders SET state = 'needs_attention', reason = 'row_invalid', last_error = ?, updated_at = ?,
                           finished_at = NULL, lease_host = NULL, lease_pid = NULL, lease_start = NULL, lease_expires_at = NULL
                    WHERE order_id = ? AND state IN ('pending','verifying','delivering')
                    """, [.text(detail), .integer(now), .text(orderId)])
            }
            _ = try? write {
                try appendHistory(orderId, HistoryEntry(at: now, kind: .verification, outcome: "needs_attention",
                                                        detail: "row_invalid: \(detail)"))
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
        return try transition {
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

    /// The hook confirmed delivery: `finished`, for good.
    @discardableResult
    public func markFinished(orderId: String, owner: LeaseOwner, history: HistoryEntry) throws(LedgerError) -> Bool {
        let now = time.unixSeconds
        return try transition {
            guard try holds(orderId, state: .delivering, owner: owner) else { return false }
            try finalize(orderId, state: .finished, reason: nil, error: nil, environment: nil, now: now)
            try appendHistory(orderId, history)
            return true
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

    func holding(_ orderId: String, state: OrderState, owner: LeaseOwner) throws -> Order? {
        try database.query("SELECT * FROM orders WHERE order_id = ? AND state = ? AND \(Ledger.ownedBy)",
                           [.text(orderId), .text(state.rawValue)] + ownerArguments(owner)).first.map(Order.init(row:))
    }

    func holds(_ orderId: String, state: OrderState, owner: LeaseOwner) throws -> Bool {
        try !database.query("SELECT 1 AS held FROM orders WHERE order_id = ? AND state = ? AND \(Ledger.ownedBy)",
                            [.text(orderId), .text(state.rawValue)] + ownerArguments(owner)).isEmpty
    }

    func finalize(_ orderId: String, state: OrderState, reason: String?, error: String?, environment: String?,
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
    init(row: some LedgerRow) {
        let verified: VerifiedPurchase? = row.string("verified_transaction_id").map { txn in
            VerifiedPurchase(transactionId: txn, originalTransactionId: row.string("original_transaction_id") ?? txn,
                             productId: row.string("verified_product_id") ?? row.string("product_id") ?? "",
                             environment: row.string("environment") ?? "", quantity: Int(row.int("quantity") ?? 1),
                             purchaseDateMs: row.int("purchase_date_ms"), expiresDateMs: row.int("expires_date_ms"),
                             grantKey: row.string("grant_key"))
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
                  finishedAt: row.int("finished_at"), lease: lease, appAccountToken: row.string("app_account_token"),
                  origin: row.string("origin") ?? "backend",
                  refund: row.int("refunded_at").map { Refund(at: $0, kind: row.string("refund_kind") ?? "REFUND",
                                                              reason: row.string("refund_reason")) })
        fencingToken = row.int("fencing_token")
        store = row.string("store").flatMap(Store.init(rawValue:)) ?? .appStore
        purchaseToken = row.string("purchase_token").flatMap(PlayPurchaseToken.init)
        deliveredAt = row.int("delivered_at")
    }
}
