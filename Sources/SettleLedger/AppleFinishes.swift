import SettleModel

/// A Finish Transaction call Apple is owed: an App Store order was finished (delivered, granted
/// outside settle, or resolved as granted by hand), so StoreKit should stop offering its
/// transaction to the app. Queued by the ledger's own transition to `finished` (migration 12),
/// worked after a pass; never part of the order's own settling.
package struct AppleFinishJob: Sendable, Equatable {
    package var transactionId: String
    package var orderId: String
    /// The order's environment as the ledger holds it (Apple's spelling).
    package var storedEnvironment: String
    package var attempts: Int
    /// The claim this call was handed out under, as for `RevocationJob.claim`.
    package var claim: Int64 = 0

    /// Where the call goes; nil for text that is not Apple's, which is never sent.
    package var environment: AppleEnvironment? { AppleEnvironment(rawValue: storedEnvironment) }
}

/// What became of an order's Finish Transaction, for `settle status`.
package struct AppleFinishRecord: Sendable, Equatable {
    /// `pending`, `finished`, `refused` (Apple's final 4xx, or attempts exhausted) or `not_sent`.
    package var state: String
    package var attempts: Int
    package var lastError: String?
    package var updatedAt: Int64
}

extension TransactionalLedger {
    /// Due Finish Transaction calls, each claimed for `leaseSeconds` (a host that dies holding
    /// one leaves it to the others that much later).
    package func claimDueAppleFinishes(limit: Int, leaseSeconds: Int64, owner: LeaseOwner = .current) throws(LedgerError) -> [AppleFinishJob] {
        guard try knowsAppleFinishes() else { return [] }
        let now = time.unixSeconds
        return try writing { db in
            let due = try db.query("""
                SELECT transaction_id FROM apple_finishes WHERE state = 'pending' AND next_attempt_at <= ?
                ORDER BY next_attempt_at, transaction_id LIMIT ?\(db.dialect.claimRows("apple_finishes"))
                """, [.integer(now), .integer(Int64(limit))]).compactMap { $0.string("transaction_id") }
            return try due.compactMap { id in
                try db.query("""
                    UPDATE apple_finishes SET claim = claim + 1, next_attempt_at = ?, updated_at = ?, \(SideQueue.owner(owner, until: now + leaseSeconds).sql)
                    WHERE transaction_id = ? RETURNING *
                    """, [.integer(now + leaseSeconds), .integer(now)] + SideQueue.owner(owner, until: now + leaseSeconds).values + [.text(id)]).first.map { row in
                    AppleFinishJob(transactionId: id, orderId: row.string("order_id") ?? "", storedEnvironment: row.string("environment") ?? "",
                                   attempts: row.count("attempts"), claim: row.int("claim") ?? 0)
                }
            }
        }
    }

    /// Whether this call's claim is still this one's and unexpired: checked just before Apple is called.
    package func holds(_ job: AppleFinishJob) throws(LedgerError) -> Bool {
        let now = time.unixSeconds
        return try reading { db in
            try !db.query("""
                SELECT 1 AS held FROM apple_finishes WHERE transaction_id = ? AND state = 'pending' AND claim = ? AND next_attempt_at > ?
                """, [.text(job.transactionId), .integer(job.claim), .integer(now)]).isEmpty
        }
    }

    /// Gives a claimed call back untouched (the pass's time ran out, or Apple is down): due again at once.
    package func releaseAppleFinish(_ job: AppleFinishJob) throws(LedgerError) {
        let now = time.unixSeconds
        try writing { db in
            try db.query("UPDATE apple_finishes SET next_attempt_at = ? WHERE transaction_id = ? AND state = 'pending' AND claim = ?",
                         [.integer(now), .text(job.transactionId), .integer(job.claim)])
        }
    }

    /// What one call concluded (`finished`, `pending` again at `nextAttemptAt`, `refused`,
    /// `not_sent`), with its line in the order's history. Nothing changes when the call was
    /// claimed again since (false). `countsAttempt`: false when Apple was not reached.
    @discardableResult
    package func recordAppleFinish(_ job: AppleFinishJob, state: String, error: String?, nextAttemptAt: Int64, countsAttempt: Bool,
                                   history: HistoryEntry) throws(LedgerError) -> Bool {
        let now = time.unixSeconds
        return try writing { db in
            let changed = try db.query("""
                UPDATE apple_finishes SET state = ?, attempts = attempts + ?, next_attempt_at = ?, last_error = ?, updated_at = ?
                WHERE transaction_id = ? AND state = 'pending' AND claim = ?
                RETURNING transaction_id
                """, [.text(state), .integer(countsAttempt ? 1 : 0), .integer(nextAttemptAt), .from(error), .integer(now),
                      .text(job.transactionId), .integer(job.claim)])
            guard !changed.isEmpty else { return false }
            try db.appendHistory(job.orderId, history)
            return true
        }
    }

    /// With Finish Transaction off (or no Server API), what is owed is set aside as `not_sent`,
    /// saying why, so it is neither shown as waiting nor sent later by surprise. Returns how many.
    @discardableResult
    package func setAsideAppleFinishes(why: String) throws(LedgerError) -> Int {
        guard try knowsAppleFinishes() else { return 0 }
        let now = time.unixSeconds
        return try writing { db in
            try db.query("""
                UPDATE apple_finishes SET state = 'not_sent', last_error = ?, updated_at = ? WHERE state = 'pending'
                RETURNING transaction_id
                """, [.text(why), .integer(now)]).count
        }
    }

    /// The Finish Transaction of one order, for `settle status`: nil when none was ever owed.
    package func appleFinish(orderId: String) throws(LedgerError) -> AppleFinishRecord? {
        guard try knowsAppleFinishes() else { return nil }
        return try reading { db in
            try db.query("SELECT * FROM apple_finishes WHERE order_id = ? ORDER BY updated_at DESC LIMIT 1", [.text(orderId)]).first
                .map { row in
                    AppleFinishRecord(state: row.string("state") ?? "", attempts: row.count("attempts"),
                                      lastError: row.string("last_error"), updatedAt: row.int("updated_at") ?? 0)
                }
        }
    }

    /// How many Finish Transaction calls Apple refused for good, for the status summary.
    package func refusedAppleFinishes() throws(LedgerError) -> Int {
        guard try knowsAppleFinishes() else { return 0 }
        return try reading { db in
            Int(try db.query("SELECT count(*) AS n FROM apple_finishes WHERE state = 'refused'").first?.int("n") ?? 0)
        }
    }
}
