import Foundation
import SettleBase
import SettleModel

/// verifyReceipt through the pacer (issue 38). Apple publishes no limit for it, so its bucket
/// (`verify_receipt`, per environment) learns one: a 429 above the floor lowers the rate and the
/// order waits with no attempt used; a 429 at the floor, after the rate came down as far as it
/// goes, is Apple refusing a slow settle, and its breaker hears it as before. A 5xx lowers the
/// rate too, so a struggling Apple is asked less while the breaker counts its failures.
extension ReceiptVerifier {
    /// verifyReceipt's bucket in `environment`.
    package func pacerKey(_ environment: AppleEnvironment) -> PacerKey {
        PacerKey(store: Store.appStore.rawValue, group: AppStoreRateGroups.verifyReceipt,
                 environment: environment.rawValue)
    }

    /// Takes the request's token, waiting at most the HTTP client's whole-request timeout; the
    /// refusal when the wait would be longer.
    func pace(_ key: PacerKey) -> Pacer.Exhausted? {
        do {
            try pacer?.acquire(key, priority: .dueOrders, budget: client.configuration.totalTimeout)
            return nil
        } catch {
            return error
        }
    }

    /// Tells the pacer how Apple answered. For a 429 the pacer took as its own (the bucket was
    /// above its floor), the "paced: ..." message the order waits with; nil otherwise.
    func paced(_ key: PacerKey, _ response: HTTPResponse, sentAt: Double?, retryAfter: Double?,
               who: String) -> String? {
        guard let pacer else { return nil }
        switch response.status {
        case 429:
            // Asked for more than a minute of quiet, Apple is not telling settle to slow down but
            // to stop: the rate is lowered all the same, and the breaker holds the store (at most
            // a day, `RetryAfter`) as it did before verifyReceipt was paced.
            if let retryAfter, retryAfter > PacerLearning.longestWait {
                pacer.throttled(key, retryAfter: nil, sentAt: sentAt)
                return nil
            }
            guard pacer.throttled(key, retryAfter: retryAfter, sentAt: sentAt) == false,
                  let bucket = pacer.bucket(key) else { return nil }
            let wait = retryAfter.map { ", Retry-After \(String(format: "%.1f", $0)) s" } ?? ""
            return "paced: \(key) at \(Pacer.formatRate(bucket.rate))/s "
                + "(\(who) answered HTTP 429\(wait); the learned rate was lowered)"
        case 500...599:
            pacer.overloaded(key, sentAt: sentAt)
        default:
            pacer.succeeded(key)
        }
        return nil
    }
}
