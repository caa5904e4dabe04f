import Foundation
import Synchronization

/// Which work a request is for, most urgent last: when a bucket runs low, a lower priority waits
/// while a higher one is still granted, so work that cannot wait gets the budget first (issue 27).
package enum PacerPriority: Int, Sendable, Comparable, CaseIterable {
    case historyCatchUp
    case dueOrders
    case consumptionAnswers
    case refundDeadline
    /// Support's lookups: the only work that may take the reserve at the bottom of a bucket.
    case supportLookup

    package static func < (a: PacerPriority, b: PacerPriority) -> Bool { a.rawValue < b.rawValue }
}

/// One rate limit a store enforces: store, endpoint group and environment.
package struct PacerKey: Hashable, Sendable, CustomStringConvertible {
    package var store: String
    package var group: String
    package var environment: String

    package init(store: String, group: String, environment: String) {
        self.store = store
        self.group = group
        self.environment = environment
    }

    package var description: String { "\(store) \(group) (\(environment))" }
}

/// One token bucket as a value: refilled at `rate` tokens a second up to `burst`, lowered by a
/// 429 and restored by successes. Time is a parameter, so it is tested without a clock.
package struct PacerBucket: Sendable, Equatable {
    /// What a request may do now.
    package enum Decision: Sendable, Equatable {
        case granted
        /// Ask again after this many seconds.
        case wait(Double)
    }

    /// The rate the store grants, requests a second.
    package let configuredRate: Double
    /// The least a 429 lowers the rate to: an eighth of the configured rate (three halvings).
    package let floorRate: Double
    package let burst: Double
    /// The fraction of the bucket below which only support lookups are granted; each priority
    /// below that keeps one more such step free for those above it.
    package let reserve: Double
    package private(set) var rate: Double
    package private(set) var tokens: Double
    private var updated: Double
    /// No grant before this (a 429's `Retry-After`), seconds since the epoch.
    package private(set) var notBefore: Double = -Double.infinity
    package private(set) var throttles = 0

    /// `burst` defaults to one second's worth of requests (at least one).
    package init(rate: Double, burst: Double? = nil, reserve: Double = 0.1, now: Double) {
        configuredRate = rate
        floorRate = rate / 8
        self.burst = max(1, burst ?? rate)
        self.reserve = reserve
        self.rate = rate
        tokens = self.burst
        updated = now
    }

    /// The tokens that must stay in the bucket after a grant at `priority`.
    package func floor(_ priority: PacerPriority) -> Double {
        let steps = Double(PacerPriority.supportLookup.rawValue - priority.rawValue)
        return min(burst - 1, burst * reserve * steps)
    }

    package mutating func take(_ priority: PacerPriority, now: Double) -> Decision {
        refill(now)
        if now < notBefore { return .wait(notBefore - now) }
        let floor = floor(priority)
        // A millionth of a token's slack and a millisecond's least wait: a clock read as a Date
        // (a tenth of a microsecond apart) must not leave a caller waiting ever smaller waits.
        if tokens - 1 >= floor - 1e-6 {
            tokens -= 1
            return .granted
        }
        return .wait(max(0.001, (floor + 1 - tokens) / rate))
    }

    /// A 429: halve the rate (not below the floor), empty the bucket and grant nothing before
    /// `retryAfter` seconds (without one, before one request's worth of time at the new rate).
    package mutating func throttled(retryAfter: Double?, now: Double) {
        refill(now)
        throttles += 1
        rate = max(floorRate, rate / 2)
        tokens = 0
        notBefore = max(notBefore, now + (retryAfter ?? 1 / rate))
    }

    /// A request the store answered: the rate climbs back by a hundredth of the configured
    /// rate, so a lowered bucket is back after a hundred successes, not at the first one.
    package mutating func succeeded(now: Double) {
        refill(now)
        rate = min(configuredRate, rate + configuredRate / 100)
    }

    private mutating func refill(_ now: Double) {
        if now > updated { tokens = min(burst, tokens + (now - updated) * rate) }
        updated = max(updated, now)
    }
}

/// The process's token buckets, one per store, endpoint group and environment, shared by
/// everything that calls a store (passes, history catch-up, consumption answers, finishes,
/// support lookups). Hosts on one PostgreSQL ledger pace independently for now.
package final class Pacer: Sendable {
    /// Why a request was not sent: the wait for its bucket is longer than the call may take.
    package struct Exhausted: Error, Sendable, CustomStringConvertible {
        package var key: PacerKey
        package var waitSeconds: Double
        package var description: String {
            "the pacer for \(key) would make the call wait \(String(format: "%.1f", waitSeconds)) s, longer than its timeout"
        }
    }

    private let time: any TimeSource
    private let rates: @Sendable (PacerKey) -> Double?
    private let sleep: @Sendable (Double) -> Void
    private let buckets = Mutex<[PacerKey: PacerBucket]>([:])

    /// `rates` gives each key's requests a second (nil: that key is not paced); `sleep` is how a
    /// caller waits for its token (tests pass one that moves a `ManualTimeSource`).
    package init(time: any TimeSource, rates: @escaping @Sendable (PacerKey) -> Double?,
                 sleep: @escaping @Sendable (Double) -> Void = { seconds in usleep(UInt32(min(seconds, 3600) * 1e6)) }) {
        self.time = time
        self.rates = rates
        self.sleep = sleep
    }

    private var now: Double { time.now.timeIntervalSince1970 }

    /// One request's token, or how long to wait for it; an unpaced key is always granted.
    package func take(_ key: PacerKey, priority: PacerPriority) -> PacerBucket.Decision {
        guard let rate = rates(key) else { return .granted }
        let now = now
        return buckets.withLock { buckets in
            var bucket = buckets[key] ?? PacerBucket(rate: rate, now: now)
            defer { buckets[key] = bucket }
            return bucket.take(priority, now: now)
        }
    }

    /// Waits for a token, at most `budget` seconds in all: a longer wait throws at once, so the
    /// caller fails fast (the store is "unavailable") instead of hanging.
    package func acquire(_ key: PacerKey, priority: PacerPriority, budget: Double) throws(Exhausted) {
        var waited = 0.0
        while case let .wait(seconds) = take(key, priority: priority) {
            guard waited + seconds <= budget else { throw Exhausted(key: key, waitSeconds: waited + seconds) }
            sleep(seconds)
            waited += seconds
        }
    }

    package func throttled(_ key: PacerKey, retryAfter: Double?) {
        update(key) { $0.throttled(retryAfter: retryAfter, now: $1) }
    }

    package func succeeded(_ key: PacerKey) {
        update(key) { $0.succeeded(now: $1) }
    }

    /// A copy of a key's bucket, for status and tests.
    package func bucket(_ key: PacerKey) -> PacerBucket? {
        buckets.withLock { $0[key] }
    }

    private func update(_ key: PacerKey, _ change: (inout PacerBucket, Double) -> Void) {
        guard let rate = rates(key) else { return }
        let now = now
        buckets.withLock { buckets in
            var bucket = buckets[key] ?? PacerBucket(rate: rate, now: now)
            change(&bucket, now)
            buckets[key] = bucket
        }
    }
}
