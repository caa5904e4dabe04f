import SettleModel
import SettleAppStore
import SettleLedger

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

extension AppleFinishJob: SideQueueJob {
    /// The core's numbered migrations that created `apple_finishes`: SQLite 13, PostgreSQL 9.
    static let sqliteVersion = 13, postgresVersion = 9

    package static let queue = SideQueue(table: "apple_finishes", key: ["transaction_id"],
                                         order: ["next_attempt_at", "transaction_id"])
    package var queueKey: [LedgerValue] { [.text(transactionId)] }

    package init(row: any LedgerRow) {
        self.init(transactionId: row.string("transaction_id") ?? "", orderId: row.string("order_id") ?? "",
                  storedEnvironment: row.string("environment") ?? "", attempts: row.count("attempts"),
                  claim: row.int("claim") ?? 0)
    }
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
    /// Whether the schema has the Finish Transaction queue (`apple_finishes`): a read-only status
    /// of an older ledger may not.
    var knowsAppleFinishes: Bool {
        get throws(LedgerError) {
            try schemaAtLeast(sqlite: AppleFinishJob.sqliteVersion, postgres: AppleFinishJob.postgresVersion)
        }
    }

    /// Due Finish Transaction calls, each claimed for `leaseSeconds` (a host that dies holding
    /// one leaves it to the others that much later).
    package func claimDueAppleFinishes(limit: Int, leaseSeconds: Int64, owner: LeaseOwner = .current) throws(LedgerError) -> [AppleFinishJob] {
        guard try knowsAppleFinishes else { return [] }
        let now = time.unixSeconds
        return try writing { db in
            try db.claimDue(AppleFinishJob.self, limit: limit, leaseSeconds: leaseSeconds, owner: owner, now: now)
        }
    }

    /// Gives a claimed call back untouched (the pass's time ran out, or Apple is down): due again at once.
    package func releaseAppleFinish(_ job: AppleFinishJob) throws(LedgerError) { try release([job]) }

    /// What one call concluded (`finished`, `pending` again at `nextAttemptAt`, `refused`,
    /// `not_sent`), with its line in the order's history. Nothing changes when the call was
    /// claimed again since (false). `countsAttempt`: false when Apple was not reached.
    @discardableResult
    package func recordAppleFinish(_ job: AppleFinishJob, state: String, error: String?, nextAttemptAt: Int64, countsAttempt: Bool,
                                   history: HistoryEntry) throws(LedgerError) -> Bool {
        try record(job, .outcome(state: state, nextAttemptAt: nextAttemptAt, error: error, attempts: countsAttempt ? 1 : 0),
                   history: history)
    }

    /// With Finish Transaction off (or no Server API), what is owed is set aside as `not_sent`,
    /// saying why, so it is neither shown as waiting nor sent later by surprise. Returns how many.
    @discardableResult
    package func setAsideAppleFinishes(why: String) throws(LedgerError) -> Int {
        guard try knowsAppleFinishes else { return 0 }
        let now = time.unixSeconds
        return try writing { db in
            // Counted by the engine, not returned row by row: a backlog of queued finishes would
            // otherwise be materialized in memory at the end of every pass just to be counted.
            try db.changedRows("""
                UPDATE apple_finishes SET state = 'not_sent', last_error = ?, updated_at = ? WHERE state = 'pending'
                """, [.text(why), .integer(now)])
        }
    }

    /// The Finish Transaction of one order, for `settle status`: nil when none was ever owed.
    package func appleFinish(orderId: String) throws(LedgerError) -> AppleFinishRecord? {
        guard try knowsAppleFinishes else { return nil }
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
        guard try knowsAppleFinishes else { return 0 }
        return try reading { db in
            Int(try db.query("SELECT count(*) AS n FROM apple_finishes WHERE state = 'refused'").first?.int("n") ?? 0)
        }
    }
}
