import Synchronization
import SettleEngine

/// Pub/Sub push tokens signed under a key id none of Google's keys settle could read has: a
/// forgery, or keys settle cannot refresh (check `google_play.push.jwks_url`)
/// (`settle_google_play_push_unknown_key_total`).
package final class PushKeyMetrics: StoreMetricFamilies {
    private let unknownKeys = Mutex(0)

    package init() {}

    package func observeUnknownKey() { unknownKeys.withLock { $0 += 1 } }

    package func render(app: String) -> String {
        let name = "settle_google_play_push_unknown_key_total"
        return Metrics.header(name, "counter", "Pub/Sub push tokens signed under a key id that no Google push key settle could read holds.")
            + "\(name){\(app)} \(unknownKeys.withLock { $0 })\n"
    }
}
