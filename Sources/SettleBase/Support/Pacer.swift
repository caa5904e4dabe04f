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

/// The priority of the work a call is made for, bound around that work (a Play order near its
/// refund deadline, a consumption answer) so every call it makes takes it, whatever the call's
/// own name would give: a context the caller binds with `withValue`, not a global (a bound value
/// is seen only by the binding thread or task).
extension PacerPriority {
    @TaskLocal package static var work: PacerPriority?

    /// The priority a call is granted at: the work's when bound (a Play order near its deadline
    /// lends every call it makes `.refundDeadline`, the history catch-up lends `.historyCatchUp`),
    /// else the call's own. Support's lookups keep the reserve whatever work makes them.
    package static func forCall(_ own: PacerPriority) -> PacerPriority {
        guard let work, own != .supportLookup else { return own }
        return work
    }
}

/// One token bucket as a value: refilled at `rate` tokens a second up to `burst`, lowered by a
/// 429 and restored by successes. Time is a parameter, so it is tested without a clock.
///
/// `share` is this host's part of the store's rate when several hosts share one ledger (one
/// of N live daemons: 1/N): the ceiling, the floor and the burst are all of that share.
package struct PacerBucket: Sendable, Equatable {
    /// What a request may do now.
    package enum Decision: Sendable, Equatable {
        case granted
        /// Ask again after this many seconds.
        case wait(Double)
    }

    /// The rate the store grants (published or configured), requests a second, for all hosts.
    package let configuredRate: Double
    /// This host's part of it: 1 alone, 1/N with N live daemons on one PostgreSQL ledger.
    package private(set) var share: Double
    private let burstOverride: Double?
    /// The fraction of the bucket below which only support lookups are granted; each priority
    /// below that keeps one more such step free for those above it.
    package let reserve: Double
    package private(set) var rate: Double
    package private(set) var tokens: Double
    private var updated: Double
    /// No grant before this (a 429's `Retry-After`), seconds since the epoch.
    package private(set) var notBefore: Double = -Double.infinity
    /// 429s the store answered, and of those the ones that came at the floor rate.
    package private(set) var throttles = 0
    package private(set) var floorThrottles = 0
    /// Requests granted, and times a request was told to wait.
    package private(set) var granted = 0
    package private(set) var waits = 0
    /// 5xx answers that lowered a learning bucket's rate.
    package private(set) var overloads = 0
    /// For a rate the store publishes none for: how the bucket learns it (nil: a published rate).
    package private(set) var learning: PacerLearning?

    /// `burst` defaults to one second's worth of requests (at least one). `learns`: the store
    /// publishes no rate for the bucket, whose rate is a ceiling to learn under (`PacerLearning`).
    package init(rate: Double, burst: Double? = nil, reserve: Double = 0.1, share: Double = 1, learns: Bool = false,
                 now: Double) {
        configuredRate = rate
        self.share = share
        burstOverride = burst
        self.reserve = reserve
        self.rate = rate * share
        tokens = max(1, burst ?? rate * share)
        updated = now
        learning = learns ? PacerLearning() : nil
    }

    /// This host's ceiling: its share of the configured rate.
    package var ceilingRate: Double { configuredRate * share }
    /// The least a 429 lowers the rate to: an eighth of the ceiling (three halvings) of a
    /// published rate; a sixty-fourth of a learned one, whose ceiling is a guess, not a promise.
    package var floorRate: Double { ceilingRate / (learning == nil ? 8 : 64) }
    /// A second's worth of requests: at the ceiling, or at the rate now for a learning bucket,
    /// whose ceiling may be many times what the store grants (a second at the ceiling would be
    /// a burst the store refuses, and its reserve for support lookups seconds of no due work).
    package var burst: Double { max(1, burstOverride ?? (learning == nil ? ceilingRate : rate)) }
    /// The bucket is at its floor: a 429 now is the store refusing below its published rate.
    package var isAtFloor: Bool { rate <= floorRate * (1 + 1e-9) }

    /// The tokens that must stay in the bucket after a grant at `priority`.
    package func floor(_ priority: PacerPriority) -> Double {
        let steps = Double(PacerPriority.supportLookup.rawValue - priority.rawValue)
        return min(burst - 1, burst * reserve * steps)
    }

    package mutating func take(_ priority: PacerPriority, now: Double) -> Decision {
        refill(now)
        if now < notBefore {
            waits += 1
            return .wait(notBefore - now)
        }
        let floor = floor(priority)
        // A millionth of a token's slack and a millisecond's least wait: a clock read as a Date
        // (a tenth of a microsecond apart) must not leave a caller waiting ever smaller waits.
        if tokens - 1 >= floor - 1e-6 {
            tokens -= 1
            granted += 1
            return .granted
        }
        waits += 1
        return .wait(max(0.001, (floor + 1 - tokens) / rate))
    }

    /// A 429: halve the rate (not below the floor), empty the bucket and grant nothing before
    /// `retryAfter` seconds (without one, before one request's worth of time at the new rate).
    /// True when the bucket was at its floor already: the store refuses even an eighth of its
    /// rate, which is the store in trouble (its breaker hears of it), not settle too fast.
    ///
    /// A learning bucket (`PacerLearning`) lowers to half what the store granted lately, and a
    /// 429 to a request sent (`sentAt`) before its last decrease only waits out `retryAfter`.
    @discardableResult
    package mutating func throttled(retryAfter: Double?, now: Double, sentAt: Double? = nil) -> Bool {
        refill(now)
        throttles += 1
        tokens = 0
        // A learning bucket waits at most a minute whatever the store says: a Retry-After of a
        // day (garbage, or capped by `RetryAfter`) would stop the endpoint for that day.
        let retryAfter = learning == nil ? retryAfter : retryAfter.map { min($0, PacerLearning.longestWait) }
        if learning?.isStale(sentAt: sentAt) == true {
            notBefore = max(notBefore, now + (retryAfter ?? 0))
            return false
        }
        let atFloor = isAtFloor
        if atFloor { floorThrottles += 1 }
        if learning != nil {
            rate = learning!.throttled(rate: rate, floor: floorRate, now: now)
        } else {
            rate = max(floorRate, rate / 2)
        }
        notBefore = max(notBefore, now + (retryAfter ?? 1 / rate))
        return atFloor
    }

    /// A 5xx of a store whose rate the bucket learns: halve the rate (once for the requests in
    /// flight), so a struggling store is asked less before its breaker gives up on it. A
    /// published rate is the store's promise and stays (its breaker alone hears a 5xx).
    package mutating func overloaded(now: Double, sentAt: Double? = nil) {
        guard learning != nil, learning?.isStale(sentAt: sentAt) == false else { return }
        refill(now)
        overloads += 1
        rate = learning!.overloaded(rate: rate, floor: floorRate, now: now)
        tokens = min(tokens, 1)
    }

    /// A request the store answered: the rate climbs back by a hundredth of the ceiling, so a
    /// lowered bucket is back after a hundred successes, not at the first one. A learning
    /// bucket climbs by time instead (`PacerLearning`): per success, a fast worker pool would
    /// be back above the store's limit within a few dozen requests.
    package mutating func succeeded(now: Double) {
        refill(now)
        if learning != nil {
            rate = learning!.succeeded(rate: rate, ceiling: ceilingRate, now: now)
        } else {
            rate = min(ceilingRate, rate + ceilingRate / 100)
        }
    }

    /// A new share (the live hosts changed): the rate, lowered or not, scales with it, and the
    /// tokens stay within the new burst.
    package mutating func setShare(_ newShare: Double, now: Double) {
        guard newShare > 0, newShare != share else { return }
        refill(now)
        rate *= newShare / share
        share = newShare
        tokens = min(tokens, burst)
    }

    private mutating func refill(_ now: Double) {
        if now > updated { tokens = min(burst, tokens + (now - updated) * rate) }
        updated = max(updated, now)
    }
}

/// One bucket as `settle status` and the metrics show it (a row of `pacer_buckets` per host).
package struct PacerSnapshot: Sendable, Equatable {
    package var key: PacerKey
    /// Requests a second now, this host's ceiling, and the rate configured for all hosts.
    package var rate: Double
    package var ceilingRate: Double
    package var configuredRate: Double
    package var share: Double
    /// Since the process started: requests granted, 429s, 429s at the floor rate, waits.
    package var granted: Int
    package var throttles: Int
    package var floorThrottles: Int
    package var waits: Int
    /// For a bucket that learns its rate: the rate the store last refused at (its ceiling until
    /// it refused once); nil for a published rate.
    package var learnedRate: Double?

    package init(key: PacerKey, rate: Double, ceilingRate: Double, configuredRate: Double, share: Double, granted: Int,
                 throttles: Int, floorThrottles: Int, waits: Int, learnedRate: Double? = nil) {
        self.key = key
        self.rate = rate
        self.ceilingRate = ceilingRate
        self.configuredRate = configuredRate
        self.share = share
        self.granted = granted
        self.throttles = throttles
        self.floorThrottles = floorThrottles
        self.waits = waits
        self.learnedRate = learnedRate
    }

    package init(_ key: PacerKey, _ bucket: PacerBucket) {
        self.init(key: key, rate: bucket.rate, ceilingRate: bucket.ceilingRate, configuredRate: bucket.configuredRate,
                  share: bucket.share, granted: bucket.granted, throttles: bucket.throttles, floorThrottles: bucket.floorThrottles,
                  waits: bucket.waits, learnedRate: bucket.learning.map { $0.learnedRate ?? bucket.ceilingRate })
    }
}

/// The process's token buckets, one per store, endpoint group and environment, shared by
/// everything that calls a store (passes, history catch-up, consumption answers, finishes,
/// support lookups).
///
/// Hosts on one PostgreSQL ledger each take their share: the rate over the live daemons the
/// ledger's heartbeats list, refreshed each pass (`setHosts`). No request waits on a round trip
/// to the ledger, a dead host's share comes back within the live window, and a 429 still
/// lowers each host's bucket on its own.
package final class Pacer: Sendable {
    /// Why a request was not sent: the wait for its bucket is longer than the call may take.
    package struct Exhausted: Error, Sendable, CustomStringConvertible {
        package var key: PacerKey
        package var waitSeconds: Double
        /// The bucket's rate when it refused, requests a second.
        package var rate: Double
        package var description: String {
            "paced: \(key) at \(Pacer.formatRate(rate))/s (the wait of \(String(format: "%.1f", waitSeconds)) s is longer than the call may take)"
        }
    }

    private struct State {
        var buckets: [PacerKey: PacerBucket] = [:]
        var share = 1.0
    }

    private let time: any TimeSource
    private let rates: @Sendable (PacerKey) -> Double?
    private let learns: @Sendable (PacerKey) -> Bool
    private let sleep: @Sendable (Double) -> Void
    private let state = Mutex(State())

    /// `rates` gives each key's requests a second (nil: that key is not paced); `sleep` is how a
    /// caller waits for its token (tests pass one that moves a `ManualTimeSource`); `learns` says
    /// which keys' rates are ceilings to learn under (`PacerLearning`), not published limits.
    package init(time: any TimeSource, rates: @escaping @Sendable (PacerKey) -> Double?,
                 learns: @escaping @Sendable (PacerKey) -> Bool = { _ in false },
                 sleep: @escaping @Sendable (Double) -> Void = Pacer.sleep(seconds:)) {
        self.time = time
        self.rates = rates
        self.learns = learns
        self.sleep = sleep
    }

    /// Waits `seconds`, at most an hour; a wait that is negative or NaN (computed from a store's
    /// Retry-After) is none: `UInt32(-1e6)` trapped.
    package static func sleep(seconds: Double) {
        usleep(UInt32(max(0, min(seconds, 3600)) * 1e6))
    }

    /// The pacer's clock, seconds since the epoch: a request's `sentAt`.
    package var now: Double { time.now.timeIntervalSince1970 }

    /// "50", "12.5", "0.83": a rate as status and messages print it.
    package static func formatRate(_ rate: Double) -> String {
        // Saturating: the rate shown may be summed from ledger rows (`pacer_buckets`) a backend wrote.
        if rate >= 100 || rate == rate.rounded() { return String(Int(saturating: rate.rounded())) }
        return rate >= 1 ? String(format: "%.1f", rate) : String(format: "%.2f", rate)
    }

    /// One request's token, or how long to wait for it; an unpaced key is always granted.
    package func take(_ key: PacerKey, priority: PacerPriority) -> PacerBucket.Decision {
        guard let rate = rates(key) else { return .granted }
        let now = now
        return state.withLock { s in
            var bucket = s.buckets[key] ?? PacerBucket(rate: rate, share: s.share, learns: learns(key), now: now)
            defer { s.buckets[key] = bucket }
            return bucket.take(PacerPriority.forCall(priority), now: now)
        }
    }

    /// Waits for a token, at most `budget` seconds in all: a longer wait throws at once, so the
    /// caller defers its work ("paced") instead of hanging.
    package func acquire(_ key: PacerKey, priority: PacerPriority, budget: Double) throws(Exhausted) {
        var waited = 0.0
        while case let .wait(seconds) = take(key, priority: priority) {
            guard waited + seconds <= budget else {
                throw Exhausted(key: key, waitSeconds: waited + seconds, rate: bucket(key)?.rate ?? 0)
            }
            sleep(seconds)
            waited += seconds
        }
    }

    /// A 429 from the store: true when it came at the bucket's floor rate (see `PacerBucket`),
    /// nil for a key that is not paced.
    /// `sentAt` (the pacer's `now` when the request went) lets a learning bucket tell the 429s
    /// of requests already in flight from new ones.
    @discardableResult
    package func throttled(_ key: PacerKey, retryAfter: Double?, sentAt: Double? = nil) -> Bool? {
        update(key) { $0.throttled(retryAfter: retryAfter, now: $1, sentAt: sentAt) }
    }

    /// A 5xx from the store: a learning bucket slows down (`PacerBucket.overloaded`).
    package func overloaded(_ key: PacerKey, sentAt: Double? = nil) {
        update(key) { $0.overloaded(now: $1, sentAt: sentAt) }
    }

    package func succeeded(_ key: PacerKey) {
        update(key) { $0.succeeded(now: $1) }
    }

    /// This host is one of `hosts` live daemons sharing the stores' rates: every bucket (and
    /// every bucket made later) takes 1/`hosts` of its configured rate.
    package func setHosts(_ hosts: Int) {
        let share = 1 / Double(max(1, hosts))
        let now = now
        state.withLock { s in
            s.share = share
            for key in s.buckets.keys { s.buckets[key]?.setShare(share, now: now) }
        }
    }

    /// This host's share of each rate now.
    package var share: Double { state.withLock { $0.share } }

    /// A copy of a key's bucket, for status and tests.
    package func bucket(_ key: PacerKey) -> PacerBucket? {
        state.withLock { $0.buckets[key] }
    }

    /// Every bucket used so far, in a stable order.
    package func snapshots() -> [PacerSnapshot] {
        state.withLock { s in
            s.buckets.map { PacerSnapshot($0.key, $0.value) }
                .sorted { ($0.key.store, $0.key.group, $0.key.environment) < ($1.key.store, $1.key.group, $1.key.environment) }
        }
    }

    private func update<T>(_ key: PacerKey, _ change: (inout PacerBucket, Double) -> T) -> T? {
        guard let rate = rates(key) else { return nil }
        let now = now
        return state.withLock { s in
            var bucket = s.buckets[key] ?? PacerBucket(rate: rate, share: s.share, learns: learns(key), now: now)
            defer { s.buckets[key] = bucket }
            return change(&bucket, now)
        }
    }
}
