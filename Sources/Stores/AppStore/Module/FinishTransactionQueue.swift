import SettleBase
import SettleModel
import SettleLedger
import SettleEngine
import SettleAppStore

/// Tells Apple that delivered App Store transactions are finished (Finish Transaction, API
/// 1.20), as an app's `Transaction.finish()` would: an app that died before finishing is
/// otherwise offered the transaction again by StoreKit, and its own flow may grant it twice.
/// The order was `finished` before this runs (the ledger queued the call in that very
/// transition); a call that fails is retried with the order backoff, one Apple refuses for good
/// is recorded and shown, and neither changes the order. Runs after the pass, while the App
/// Store's breaker lets its orders be claimed.
package struct FinishTransactionQueue: Sendable {
    package var ledger: any SettleLedger
    /// nil: no `server_api`, or `server_api.finish_transactions` is false; `offWhy` says which.
    package var api: AppStoreServerClient?
    package var offWhy: String
    package var policy: RetryPolicy
    package var log: Log

    /// Most calls made after one pass; the rest wait for the next.
    package static let batch = 100
    /// How long a claimed call is this host's: longer than an Apple call takes.
    package static let claimSeconds: Int64 = 900

    package init(ledger: any SettleLedger, api: AppStoreServerClient?, offWhy: String, policy: RetryPolicy, log: Log) {
        self.ledger = ledger
        self.api = api
        self.offWhy = offWhy
        self.policy = policy
        self.log = log
    }

    /// Makes the due calls the pass lends time for (`work`), the watchdog kicked after each.
    /// What Apple's answers say of Apple as a whole goes to its breaker; once Apple cannot be
    /// reached, or the time is spent, the rest wait for the next pass.
    package func work(_ work: SideWork) throws(LedgerError) -> SideWorkOutcome {
        guard let api else {
            let setAside = try ledger.setAsideAppleFinishes(why: offWhy)
            if setAside > 0 { log.info("apple.finish_not_sent", ["transactions": setAside, "why": offWhy]) }
            return .idle
        }
        var outcome = SideWorkOutcome.idle
        for job in try ledger.claimDueAppleFinishes(limit: Self.batch, leaseSeconds: Self.claimSeconds) {
            switch outcome {
            case .storeUnavailable, .configurationFault, .paced:
                try ledger.releaseAppleFinish(job)
                continue
            case .idle, .answered:
                guard !work.isSpent else {
                    try ledger.releaseAppleFinish(job)
                    continue
                }
            }
            outcome = outcome.then(try call(api, job))
            work.progress()
        }
        return outcome
    }

    /// One Finish Transaction call and its record.
    private func call(_ api: AppStoreServerClient, _ job: AppleFinishJob) throws(LedgerError) -> SideWorkOutcome {
        let now = ledger.time.unixSeconds
        var entry = HistoryEntry(at: now, kind: .delivery, outcome: "", environment: job.storedEnvironment,
                                 detail: "Finish Transaction \(job.transactionId)")
        guard let environment = job.environment else {
            let why = "the ledger holds environment '\(job.storedEnvironment)', which is not Apple's"
            entry.outcome = "store_finish_refused"
            entry.detail = (entry.detail ?? "") + ": not sent: \(why)"
            try ledger.recordAppleFinish(job, state: "refused", error: "not sent: \(why)", nextAttemptAt: now, countsAttempt: false,
                                         history: entry)
            return .idle
        }
        // Re-checked at the last moment: one host makes the call.
        guard try ledger.holds(job) else {
            log.warning("apple.finish_lease_lost", ["transaction": job.transactionId, "order": job.orderId])
            return .idle
        }
        switch api.finishTransaction(transactionId: job.transactionId, environment: environment) {
        case .ok:
            entry.outcome = "store_finished"
            entry.detail = (entry.detail ?? "") + ": Apple knows the transaction is finished"
            try ledger.recordAppleFinish(job, state: "finished", error: nil, nextAttemptAt: now, countsAttempt: true, history: entry)
            log.info("apple.finished", ["transaction": job.transactionId, "order": job.orderId])
            return .answered
        case let .failed(.storeUnavailable(message, retryAfter), _):
            // Apple as a whole, not this transaction: no attempt used, and the breaker hears of it.
            try ledger.recordAppleFinish(job, state: "pending", error: message,
                                         nextAttemptAt: now + Int64(policy.appleDelay(retryAfter: retryAfter)),
                                         countsAttempt: false, history: retryEntry(entry, message))
            log.warning("apple.finish_failed", ["transaction": job.transactionId, "error": message, "retry": true])
            return .storeUnavailable(message, retryAfter: retryAfter)
        case let .failed(.paced(message), _):
            // settle's own pace: due again at once, no attempt used, the breaker hears nothing.
            var paced = entry
            paced.outcome = "paced"
            paced.detail = (entry.detail ?? "") + ": \(message)"
            try ledger.recordAppleFinish(job, state: "pending", error: message, nextAttemptAt: now, countsAttempt: false, history: paced)
            log.info("apple.finish_paced", ["transaction": job.transactionId, "why": message])
            return .paced(message)
        case let .failed(.configurationFault(message), _):
            try ledger.recordAppleFinish(job, state: "pending", error: message,
                                         nextAttemptAt: now + Int64(policy.appleDelay(retryAfter: nil)),
                                         countsAttempt: false, history: retryEntry(entry, message))
            log.error("apple.finish_failed", ["transaction": job.transactionId, "error": message, "retry": true])
            return .configurationFault(message)
        case let .failed(failure, _):
            let (final, message) = NotificationInbox.failure(failure)
            let exhausted = job.attempts + 1 >= policy.maxAttempts
            guard final || exhausted else {
                try ledger.recordAppleFinish(job, state: "pending", error: message,
                                             nextAttemptAt: now + Int64(policy.delay(afterAttempt: job.attempts + 1)),
                                             countsAttempt: true, history: retryEntry(entry, message))
                log.warning("apple.finish_failed", ["transaction": job.transactionId, "attempt": job.attempts + 1, "error": message,
                                                    "retry": true])
                return .answered
            }
            entry.outcome = "store_finish_refused"
            entry.detail = (entry.detail ?? "") + ": " + (final ? "Apple refused it for good" : "attempts exhausted") + ": \(message)"
            try ledger.recordAppleFinish(job, state: "refused", error: message, nextAttemptAt: now, countsAttempt: true, history: entry)
            log.error("apple.finish_refused", ["transaction": job.transactionId, "order": job.orderId, "error": message,
                                               "effect": "the order stays finished; StoreKit may offer the transaction to the app again"])
            return .answered
        case .paginationExpired:
            return .answered
        }
    }

    private func retryEntry(_ entry: HistoryEntry, _ message: String) -> HistoryEntry {
        var retry = entry
        retry.outcome = "store_finish_failed"
        retry.detail = (entry.detail ?? "") + ": \(message); tried again later"
        return retry
    }
}
