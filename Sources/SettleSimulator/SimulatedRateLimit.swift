import Foundation
import Synchronization
import SettleBase

/// A store's rate limit as the simulators enforce it (issue 27's benchmark): a token bucket per
/// endpoint group, refilled at `rate` requests a second up to one second's worth, and what it
/// granted and refused, so a benchmark can tell settle's drained throughput and its 429s. An
/// optional outage window answers every request with a 5xx instead, as a store that is down.
///
/// Times are read from `time` (a `ManualTimeSource` in tests) and kept relative to the first
/// request the limit saw, the start of a run.
package final class SimulatedRateLimit: Sendable {
    /// What a request gets.
    package enum Decision: Sendable, Equatable {
        case granted
        /// Over the limit: the next token comes in this many seconds.
        case limited(retryAfter: Double)
        /// Inside the outage window: the store is down.
        case outage
    }

    /// One group's record.
    package struct Counts: Sendable, Equatable {
        package var granted = 0
        package var refused = 0
        /// Refusals more than a second after the run's first request: past any start-up burst.
        package var refusedAfterFirstSecond = 0
        package var outage = 0
        /// Grants in each whole second since the run's first request.
        package var grantsPerSecond: [Int] = []
        /// Refusals (429s) in each whole second since the run's first request.
        package var refusalsPerSecond: [Int] = []

        fileprivate static func count(_ second: Int, in bins: inout [Int]) {
            if bins.count <= second { bins += Array(repeating: 0, count: second + 1 - bins.count) }
            bins[second] += 1
        }
    }

    private struct Bucket {
        var tokens: Double
        var updated: Double
    }

    private struct State {
        var start: Double?
        var buckets: [String: Bucket] = [:]
        var counts: [String: Counts] = [:]
    }

    /// Where a simulator with a limit serves `json`.
    package static let countsPath = "/simulator/rate_limits"

    package let rate: Double
    /// Per-group rates that differ from `rate` (as a store's own table would, for groups it limits lower).
    package let groupRates: [String: Double]
    /// Seconds after the first request during which the store is down, `[from, to)`.
    package let outage: Range<Double>?
    /// The clock the buckets refill by; a store's refusal reads it too (a `Retry-After` in clock time).
    package let time: any TimeSource
    private let state = Mutex(State())

    package init(rate: Double, groupRates: [String: Double] = [:], outage: Range<Double>? = nil, time: any TimeSource) {
        precondition(rate > 0, "a rate limit needs a positive rate")
        self.rate = rate
        self.groupRates = groupRates
        self.outage = outage
        self.time = time
    }

    package func rate(of group: String) -> Double { groupRates[group] ?? rate }

    /// Takes a token from `group`'s bucket, or says why not, and counts the answer. `limited`
    /// false: a call the store publishes no limit for, refused only in an outage.
    package func admit(_ group: String, limited: Bool = true) -> Decision {
        let now = time.now.timeIntervalSince1970
        let rate = rate(of: group)
        return state.withLock { s -> Decision in
            let start = s.start ?? now
            s.start = start
            let elapsed = now - start
            var counts = s.counts[group] ?? Counts()
            defer { s.counts[group] = counts }
            if let outage, outage.contains(elapsed) {
                counts.outage += 1
                return .outage
            }
            if limited {
                // One second's worth of burst: the most a store lets through at once.
                var bucket = s.buckets[group] ?? Bucket(tokens: rate, updated: now)
                bucket.tokens = min(rate, bucket.tokens + max(0, now - bucket.updated) * rate)
                bucket.updated = max(bucket.updated, now)
                defer { s.buckets[group] = bucket }
                guard bucket.tokens >= 1 else {
                    counts.refused += 1
                    if elapsed > 1 { counts.refusedAfterFirstSecond += 1 }
                    Counts.count(max(0, Int(elapsed)), in: &counts.refusalsPerSecond)
                    return .limited(retryAfter: (1 - bucket.tokens) / rate)
                }
                bucket.tokens -= 1
            }
            counts.granted += 1
            Counts.count(max(0, Int(elapsed)), in: &counts.grantsPerSecond)
            return .granted
        }
    }

    /// Every group's record so far.
    package var counts: [String: Counts] { state.withLock { $0.counts } }

    /// The record as JSON, for a benchmark reading it from another process:
    /// `{"rate": 200, "groups": {"transaction_info": {"granted": ..., "refused": ...,
    /// "refused_after_first_second": ..., "outage": ..., "grants_per_second": [...]}}}`.
    package var json: JSONValue {
        let groups = counts.sorted { $0.key < $1.key }.map { group, c -> (String, JSONValue) in
            (group, .object([
                ("rate", .number(rate(of: group))),
                ("granted", .number(c.granted)), ("refused", .number(c.refused)),
                ("refused_after_first_second", .number(c.refusedAfterFirstSecond)), ("outage", .number(c.outage)),
                ("grants_per_second", .array(c.grantsPerSecond.map { .number($0) })),
                ("refusals_per_second", .array(c.refusalsPerSecond.map { .number($0) })),
            ]))
        }
        return .object([("rate", .number(rate)), ("groups", .object(groups))])
    }
}
