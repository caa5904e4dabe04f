import Foundation
import SettleConfig

/// When a failed order is tried again: `min(max, base * 2^(attempt-1))` with +-10 % jitter,
/// so that orders that failed together do not all come back in the same second.
package struct RetryPolicy: Sendable {
    package var baseSeconds: Double
    package var maxSeconds: Double
    package var maxAttempts: Int
    /// A number in [0, 1); injected so tests are deterministic.
    package var random: @Sendable () -> Double

    package init(baseSeconds: Double, maxSeconds: Double, maxAttempts: Int,
                random: @escaping @Sendable () -> Double = { Double.random(in: 0..<1) }) {
        self.baseSeconds = baseSeconds
        self.maxSeconds = maxSeconds
        self.maxAttempts = maxAttempts
        self.random = random
    }

    package init(_ schedule: Configuration.Schedule, random: @escaping @Sendable () -> Double = { Double.random(in: 0..<1) }) {
        self.init(baseSeconds: schedule.backoffBaseSeconds, maxSeconds: schedule.backoffMaxSeconds,
                  maxAttempts: schedule.maxAttempts, random: random)
    }

    /// Seconds to wait after the `attempt`-th failed attempt (1-based).
    package func delay(afterAttempt attempt: Int) -> Double {
        let exponent = Double(max(0, min(attempt - 1, 60)))
        let plain = min(maxSeconds, baseSeconds * pow(2, exponent))
        let jitter = 1 + (random() * 0.2 - 0.1)
        return max(1, (plain * jitter).rounded())
    }

    /// Seconds to wait after a failure of Apple as a whole (no attempt used): the base
    /// delay, or Apple's Retry-After when it asked for longer.
    package func appleDelay(retryAfter: Double?) -> Double {
        // `min` would pass a NaN through; only a finite Retry-After counts.
        let asked = retryAfter.flatMap { $0.isFinite ? $0 : nil } ?? 0
        return max(delay(afterAttempt: 1), min(maxSeconds, asked))
    }
}
