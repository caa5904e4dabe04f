/// How a bucket learns a rate its store publishes none for (verifyReceipt, issue 38): additive
/// increase, multiplicative decrease, with the rate the store last refused at remembered.
///
/// A 429 takes the rate to half of what the store was granting in the second before it (its
/// successes, not the bucket's rate, which may be far above what the workers could send), and
/// remembers that as the learned rate. Successes bring the rate back to just under the learned
/// rate within a fraction of a second (halving is the signal the store asked for; staying at
/// half would drain a backlog at three quarters of the limit), then climb slowly past it, a
/// hundredth of it a second, so the store's next 429 comes tens of seconds later, not at once.
///
/// Replies to requests sent before the last decrease were sent at the old rate: they do not
/// lower it again, so the requests in flight when the first 429 came cost one halving, not one
/// each. A 5xx lowers the rate too (the store is struggling: slow down before giving up) but
/// teaches nothing about its limit.
package struct PacerLearning: Sendable, Equatable {
    /// The factor a 429 or a 5xx multiplies the rate by.
    package static let decrease = 0.5
    /// The share of the learned rate successes bring the rate back to at once.
    package static let recovery = 0.97
    /// Above that, the climb: this fraction of the learned rate (or of an eighth of the ceiling,
    /// when the learned rate is lower) a second.
    package static let climbPerSecond = 0.01
    /// The longest `Retry-After` a learning bucket waits out, seconds.
    package static let longestWait = 60.0

    /// What the store granted in the second before its last 429 (at least the floor); nil
    /// until it refused once.
    package private(set) var learnedRate: Double?
    /// When the rate was last lowered: a reply to a request sent before then is stale.
    package private(set) var lastDecrease = -Double.infinity
    private var lastSuccess: Double?
    private var successes = SuccessWindow()

    package init() {}

    /// True for a reply to a request sent before the last decrease (nil: unknown, never stale).
    package func isStale(sentAt: Double?) -> Bool {
        guard let sentAt else { return false }
        return sentAt < lastDecrease
    }

    /// A 429: the rate after it, learning the store's rate from its recent successes.
    package mutating func throttled(rate: Double, floor: Double, now: Double) -> Double {
        let estimate = min(rate, successes.rate(now: now) ?? rate)
        learnedRate = max(floor, estimate)
        lastDecrease = now
        return max(floor, estimate * Self.decrease)
    }

    /// A 5xx: the rate after it; what was learned of the limit stays.
    package mutating func overloaded(rate: Double, floor: Double, now: Double) -> Double {
        lastDecrease = now
        return max(floor, rate * Self.decrease)
    }

    /// A success: the rate after it, back near the learned rate quickly, then climbing slowly.
    package mutating func succeeded(rate: Double, ceiling: Double, now: Double) -> Double {
        successes.count(now)
        let seconds = min(1, max(0, now - (lastSuccess ?? now)))
        lastSuccess = now
        let learned = learnedRate ?? ceiling
        let target = min(ceiling, learned * Self.recovery)
        if rate < target { return min(target, rate + learned * 4 * seconds) }
        return min(ceiling, rate + max(learned, ceiling / 8) * Self.climbPerSecond * seconds)
    }
}

/// Successes in the last second, counted in two one-second windows (the earlier one weighted by
/// how much of it is still within the last second): constant memory at any rate.
struct SuccessWindow: Sendable, Equatable {
    private var first: Double?
    private var start = 0.0
    private var current = 0
    private var previous = 0

    mutating func count(_ now: Double) {
        roll(now)
        current += 1
    }

    /// Successes a second over the last second; nil before a whole second was watched.
    func rate(now: Double) -> Double? {
        guard let first, now - first >= 1 else { return nil }
        let elapsed = now - start
        if elapsed >= 2 { return 0 }
        if elapsed >= 1 { return Double(current) * (2 - elapsed) }
        return Double(previous) * (1 - elapsed) + Double(current)
    }

    private mutating func roll(_ now: Double) {
        guard first != nil else {
            first = now
            start = now
            return
        }
        let elapsed = now - start
        if elapsed >= 2 {
            (previous, current, start) = (0, 0, now)
        } else if elapsed >= 1 {
            (previous, current, start) = (current, 0, start + 1)
        }
    }
}
