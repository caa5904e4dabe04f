import SettleBase
import SettleModel
import SettleLedger

/// Set App Account Token owed to Apple for an order a person assigned (`settle assign`): the
/// buyer's appAccountToken on the purchase, so its renewals and notifications bind by themselves.
package struct AccountTokenJob: Sendable, Equatable {
    package var orderId: String
    package var token: String
    /// `pending`, `set`, `refused` (a final 4xx), `failed` (attempts ran out) or `cancelled`
    /// (the purchase was never verified as the user's).
    package var state: String
    package var attempts: Int
    package var appleStatus: Int?
    package var lastError: String?
    /// The claim it was handed out under, as for `RevocationJob.claim`.
    package var claim: Int64 = 0
}

/// Account tokens owed to Apple, written once for both engines. A job waits until its order's
/// purchase is verified as the user's (the order delivering or finished: Apple confirmed it and
/// the binding granted it), so a token is never set on a purchase settle did not give the user.
/// A failure never undoes the assignment: it is recorded in the order's history.
extension TransactionalLedger {
    package func claimDueAccountTokens(limit: Int, leaseSeconds: Int64, owner: LeaseOwner = .current) throws(LedgerError) -> [(AccountTokenJob, Order)] {
        let now = time.unixSeconds
        return try writing { db in
            // An assigned purchase that ended rejected is not the user's: nothing to tell Apple.
            let abandoned = try db.query("""
                UPDATE account_token_updates SET state = 'cancelled', updated_at = ?,
                       last_error = 'the order was rejected: its purchase is not verified as the user''s'
                WHERE state = 'pending' AND order_id IN (SELECT order_id FROM orders WHERE state = 'rejected')
                RETURNING order_id
                """, [.integer(now)])
            for row in abandoned {
                if let id = row.string("order_id") {
                    try db.appendHistory(id, HistoryEntry(at: now, kind: .assign, outcome: "account_token_cancelled",
                                                          detail: "Set App Account Token not sent: the order was rejected"))
                }
            }
            let verified = " AND o.state IN ('delivering','finished') AND o.original_transaction_id IS NOT NULL"
            return try db.claimDue(AccountTokenJob.self, limit: limit, leaseSeconds: leaseSeconds, owner: owner, now: now,
                                   joining: " JOIN orders o ON o.order_id = q.order_id", where: verified)
                .compactMap { job in try db.order(job.orderId).map { (job, $0) } }
        }
    }

    /// The call was held back to stay within Apple's rate limit: due again now, no attempt used.
    package func deferAccountToken(_ job: AccountTokenJob, why: String, history: HistoryEntry) throws(LedgerError) {
        try record(job, .hold(why: why), history: history)
    }

    /// What an attempt concluded: `set`, `refused`, `failed`, or `pending` (again at
    /// `nextAttemptAt`). Nothing changes when the job was claimed again since (false).
    @discardableResult
    package func recordAccountToken(_ job: AccountTokenJob, state: String, appleStatus: Int?, error: String?, nextAttemptAt: Int64,
                                    history: HistoryEntry) throws(LedgerError) -> Bool {
        try record(job, .outcome(state: state, nextAttemptAt: nextAttemptAt, error: error,
                                 also: [("apple_status", .from(appleStatus))]), history: history)
    }

    package func accountTokenUpdate(orderId: String) throws(LedgerError) -> AccountTokenJob? {
        try reading { db in
            try db.query("SELECT * FROM account_token_updates WHERE order_id = ?", [.text(orderId)]).first.map(AccountTokenJob.init(row:))
        }
    }
}

extension AccountTokenJob: SideQueueJob {
    package static let queue = SideQueue(table: "account_token_updates", key: ["order_id"], order: ["next_attempt_at"])
    package var queueKey: [LedgerValue] { [.text(orderId)] }

    package init(row: any LedgerRow) {
        self.init(orderId: row.string("order_id") ?? "", token: row.string("app_account_token") ?? "", state: row.string("state") ?? "",
                  attempts: row.count("attempts"), appleStatus: row.int("apple_status").map { Int($0) },
                  lastError: row.string("last_error"), claim: row.int("claim") ?? 0)
    }
}
