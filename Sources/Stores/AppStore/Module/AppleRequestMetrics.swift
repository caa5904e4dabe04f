import Synchronization
import SettleModel
import SettleAppStore
import SettleEngine

/// Apple's requests by environment and outcome, and how long Apple took to answer
/// (`settle_apple_requests_total`, `settle_apple_request_duration_seconds`).
package final class AppleRequestMetrics: StoreMetricFamilies {
    private struct Counts {
        var requests: [String: Int] = [:]          // "environment|outcome" -> count
        var durationBuckets = [Int](repeating: 0, count: Metrics.buckets.count)
        var durationCount = 0
        var durationSum = 0.0
    }

    private let counts = Mutex(Counts())

    package init() {}

    /// One HTTP request to Apple: where it went, how it ended (a short, bounded label), how long it took.
    package func observe(environment: AppleEnvironment, outcome: String, seconds: Double) {
        counts.withLock { c in
            c.requests["\(environment.rawValue)|\(outcome)", default: 0] += 1
            for (i, bound) in Metrics.buckets.enumerated() where seconds <= bound { c.durationBuckets[i] += 1 }
            c.durationCount += 1
            c.durationSum += seconds
        }
    }

    package func render(app: String) -> String {
        let c = counts.withLock { $0 }
        var out = Metrics.header("settle_apple_requests_total", "counter", "HTTP requests to Apple by environment and outcome.")
        out += Metrics.counterSamples("settle_apple_requests_total", c.requests, app: app, labels: ["environment", "outcome"])
        let name = "settle_apple_request_duration_seconds"
        out += Metrics.header(name, "histogram", "Duration of HTTP requests to Apple.")
        for (i, bound) in Metrics.buckets.enumerated() {
            out += "\(name)_bucket{\(app),le=\"\(Metrics.format(bound))\"} \(c.durationBuckets[i])\n"
        }
        out += "\(name)_bucket{\(app),le=\"+Inf\"} \(c.durationCount)\n"
        out += "\(name)_sum{\(app)} \(Metrics.format(c.durationSum))\n"
        out += "\(name)_count{\(app)} \(c.durationCount)\n"
        return out
    }
}
