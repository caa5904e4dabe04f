import SettleBase
import SettleModel
import SettleLedger
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

    /// Sets every due token. Returns how many Apple took.
    @discardableResult
    package func run() throws(LedgerError) -> Int {
        var set = 0
        var pacedBy: String?
        for (job, order) in try ledger.claimDueAccountTokens(limit: Self.batch, leaseSeconds: Self.claimSeconds) {
            if let pacedBy {
                // The bucket is spent: the rest of the batch waits for the next pass.
                try ledger.deferAccountToken(job, why: pacedBy, history: HistoryEntry(at: ledger.time.unixSeconds, kind: .assign,
                                                                                      outcome: "paced", detail: pacedBy))
                continue
            }
            guard let original = order.verified?.originalTransactionId else { continue }
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
                set += 1
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
            case let .temporary(message, retryAfter):
                try retry(job, order: order, entry: entry, what: what, message: message,
                          delay: retryAfter.map { max($0, policy.delay(afterAttempt: job.attempts + 1)) }
                              ?? policy.delay(afterAttempt: job.attempts + 1))
            case let .configurationFault(message):
                try retry(job, order: order, entry: entry, what: what, message: message, delay: policy.appleDelay(retryAfter: nil))
            case let .paced(message):
                entry.outcome = "paced"
                entry.detail = "\(what): \(message)"
                try ledger.deferAccountToken(job, why: message, history: entry)
                log.info("order.account_token_paced", ["order": order.orderId, "why": message])
                pacedBy = message
            }
        }
        return set
    }

    private func retry(_ job: AccountTokenJob, order: Order, entry: HistoryEntry, what: String, message: String,
                       delay: Double) throws(LedgerError) {
        var entry = entry
        let exhausted = job.attempts + 1 >= policy.maxAttempts
        entry.outcome = exhausted ? "account_token_failed" : "account_token_retry"
        entry.detail = "\(what): \(message)" + (exhausted ? "; gave up after \(job.attempts + 1) attempts" : "; retrying")
        try ledger.recordAccountToken(job, state: exhausted ? "failed" : "pending", appleStatus: nil, error: message,
                                      nextAttemptAt: entry.at + Int64(delay), history: entry)
        log.warning("order.account_token_failed", ["order": order.orderId, "attempt": job.attempts + 1, "error": message,
                                                   "retry": !exhausted])
    }
}
