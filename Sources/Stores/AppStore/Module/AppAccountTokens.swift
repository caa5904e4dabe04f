import SettleBase
import SettleModel
import SettleLedger
import SettleEngine
import SettleAppStore

/// Set App Account Token for purchases a person assigned (`settle assign`), once the pass
/// verified each as its user's: the user's appAccountToken then rides on the purchase's renewals
/// and Apple's notifications of them, which bind by themselves. Temporary failures are retried
/// with the order backoff up to `max_attempts`; Apple's final 4xx (4000185 for a family member's
/// shared purchase, among others) is recorded once and never retried. The order is not touched:
/// a failure here never undoes the assignment nor the delivery.
package struct AppAccountTokens: Sendable {
    package let ledger: any SettleLedger
    package let api: AppStoreServerClient
    package let policy: RetryPolicy
    package let log: Log

    /// Most tokens set in one pass (Apple allows 20 a second); the rest wait for the next.
    package static let batch = 20
    package static let claimSeconds: Int64 = 900

    package init(ledger: any SettleLedger, api: AppStoreServerClient, policy: RetryPolicy, log: Log) {
        self.ledger = ledger
        self.api = api
        self.policy = policy
        self.log = log
    }

    /// Sets the due tokens the pass lends time for (`work`), the watchdog kicked after each call,
    /// as the other side queues do: Apple answering slowly (or not at all) holds the daemon for the
    /// lent time at most, never for a batch of timeouts. Once Apple cannot be reached, is paced,
    /// or the time is spent, the rest of the batch waits for the next pass. What Apple's answers
    /// say of Apple as a whole is returned for its breaker.
    @discardableResult
    package func run(_ work: SideWork) throws(LedgerError) -> SideWorkOutcome {
        guard !work.isSpent else { return .idle }
        var outcome = SideWorkOutcome.idle
        for (job, order) in try ledger.claimDueAccountTokens(limit: Self.batch, leaseSeconds: Self.claimSeconds) {
            let stop: String? = switch outcome {
            case .storeUnavailable, .configurationFault: "Apple did not answer this pass; waiting for the next"
            case let .paced(message): message
            case .idle, .answered: work.isSpent ? "the pass's time for Apple's side work is spent; waiting for the next" : nil
            }
            if let stop {
                // The rest of the batch waits for the next pass (claimable again at once).
                try ledger.deferAccountToken(job, why: stop, history: HistoryEntry(at: ledger.time.unixSeconds, kind: .assign,
                                                                                   outcome: outcome == .paced(stop) ? "paced" : "deferred",
                                                                                   detail: stop))
                continue
            }
            outcome = outcome.then(try call(job, order: order))
            work.progress()
        }
        return outcome
    }

    /// One Set App Account Token call and its record; what it says of Apple as a whole.
    private func call(_ job: AccountTokenJob, order: Order) throws(LedgerError) -> SideWorkOutcome {
        guard let original = order.verified?.originalTransactionId else { return .idle }
        let environment = order.environment.flatMap(AppleEnvironment.init(rawValue:)) ?? .production
        let now = ledger.time.unixSeconds
        let what = "Set App Account Token \(job.token) on original transaction \(original) (\(environment.rawValue))"
        var entry = HistoryEntry(at: now, kind: .assign, outcome: "", environment: environment.rawValue)
        switch api.setAppAccountToken(originalTransactionId: original, token: job.token, environment: environment) {
        case .set:
            entry.outcome = "account_token_set"
            entry.appleStatus = 200
            entry.detail = "\(what): its renewals now carry the user's token"
            try ledger.recordAccountToken(job, state: "set", appleStatus: 200, error: nil, nextAttemptAt: now, history: entry)
            log.info("order.account_token_set", ["order": order.orderId, "original_transaction": original])
            return .answered
        case let .refused(status, code, message):
            let apple = code.map { "error \($0)" } ?? "HTTP \(status)"
            let why = code == 4000185 ? "a family member's shared purchase: Apple sets no token on it; its renewals bind by the "
                + "member's appTransactionId (settle link), or a person assigns them" : message
            entry.outcome = "account_token_refused"
            entry.appleStatus = status
            entry.detail = "\(what): Apple refused (\(apple)): \(why); not retried"
            try ledger.recordAccountToken(job, state: "refused", appleStatus: status, error: "\(apple): \(why)", nextAttemptAt: now,
                                          history: entry)
            log.warning("order.account_token_refused", ["order": order.orderId, "apple_error": code ?? status])
            return .answered
        case let .temporary(message, retryAfter):
            try retry(job, order: order, entry: entry, what: what, message: message,
                      delay: retryAfter.map { max($0, policy.delay(afterAttempt: job.attempts + 1)) }
                          ?? policy.delay(afterAttempt: job.attempts + 1))
            return .storeUnavailable(message, retryAfter: retryAfter)
        case let .configurationFault(message):
            try retry(job, order: order, entry: entry, what: what, message: message, delay: policy.appleDelay(retryAfter: nil))
            return .configurationFault(message)
        case let .paced(message):
            entry.outcome = "paced"
            entry.detail = "\(what): \(message)"
            try ledger.deferAccountToken(job, why: message, history: entry)
            log.info("order.account_token_paced", ["order": order.orderId, "why": message])
            return .paced(message)
        }
    }

    private func retry(_ job: AccountTokenJob, order: Order, entry: HistoryEntry, what: String, message: String,
                       delay: Double) throws(LedgerError) {
        var entry = entry
        let exhausted = job.attempts + 1 >= policy.maxAttempts
        entry.outcome = exhausted ? "account_token_failed" : "account_token_retry"
        entry.detail = "\(what): \(message)"
            + (exhausted ? "; gave up after \(Plural.count(job.attempts + 1, "attempt"))" : "; retrying")
        try ledger.recordAccountToken(job, state: exhausted ? "failed" : "pending", appleStatus: nil, error: message,
                                      nextAttemptAt: entry.at + Int64(delay), history: entry)
        log.warning("order.account_token_failed", ["order": order.orderId, "attempt": job.attempts + 1, "error": message,
                                                   "retry": !exhausted])
    }
}
