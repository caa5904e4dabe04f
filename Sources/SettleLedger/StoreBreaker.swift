
/// The circuit breaker for one store as a whole (the App Store, Google Play): a value-type state
/// machine, persisted in the ledger per store so that it spans passes, restarts, hosts and
/// `settle status`.
///
/// It opens after `threshold` consecutive store-wide failures or at once when the store asks us
/// to back off (429 / Retry-After). While open nothing of that store is claimed and no attempt
/// is used; the other store's orders go on. When the cool-down has passed, one probe is let
/// through: an answer from the store closes it, another failure re-opens it with the cool-down
/// doubled, up to `backoff_max_seconds`.
package struct StoreBreaker: Sendable, Equatable {
    package enum State: String, Sendable { case closed, open }

    package var state: State = .closed
    package var consecutiveFailures = 0
    /// The cool-down of the current (or last) opening; 0 when it never opened.
    package var cooldownSeconds: Int64 = 0
    package var retryAt: Int64?
    package var lastError: String?
    /// When `lastError` happened, so support can tell an old hiccup from an outage now.
    package var lastErrorAt: Int64?

    package static let threshold = 5

    package init() {}

    package init(state: State, consecutiveFailures: Int, cooldownSeconds: Int64, retryAt: Int64?, lastError: String?,
                lastErrorAt: Int64? = nil) {
        (self.lastErrorAt, self.state, self.consecutiveFailures, self.cooldownSeconds) = (lastErrorAt, state, consecutiveFailures, cooldownSeconds)
        (self.retryAt, self.lastError) = (retryAt, lastError)
    }

    /// What a pass may do now.
    package enum Permission: Sendable, Equatable {
        case claim
        /// The cool-down is over: one order may be tried to see whether the store is back.
        case probe
        case wait(until: Int64)
    }

    package func permission(now: Int64) -> Permission {
        guard state == .open, let retryAt else { return .claim }
        return now >= retryAt ? .probe : .wait(until: retryAt)
    }

    /// The store answered (whatever it said): the breaker closes and the last error is history.
    package mutating func recordAnswer() {
        lastError = nil
        lastErrorAt = nil
        state = .closed
        consecutiveFailures = 0
        cooldownSeconds = 0
        retryAt = nil
    }

    /// Our side is wrong for this store (Apple rejected the shared secret, Google the service
    /// account): not the store's outage, but asking again at once cannot help. The breaker
    /// opens (the cool-down doubling as for an outage), so that store alone waits while the
    /// other's orders go on, and its probe tells when the fix is in; the fault is kept for
    /// `settle status` until the store answers.
    package mutating func recordConfigurationFault(_ message: String, now: Int64, baseSeconds: Double, maxSeconds: Double) {
        let previous = Double(cooldownSeconds)
        let cooldown = state == .open && previous > 0 ? min(maxSeconds, previous * 2) : min(maxSeconds, baseSeconds)
        cooldownSeconds = Int64(saturating: cooldown.rounded())
        state = .open
        retryAt = now.saturatingAdding(cooldownSeconds)
        lastError = StoreBreaker.configurationFaultPrefix + message
        lastErrorAt = now
    }

    /// A fault of settle's own (the delivery hook cannot start) kept for `settle status`; the
    /// breaker stays as it is.
    package mutating func noteConfigurationFault(_ message: String, now: Int64) {
        lastError = StoreBreaker.configurationFaultPrefix + message
        lastErrorAt = now
    }

    /// Open because settle's configuration for the store was wrong, not because the store was
    /// down: a reload (which may carry the fix) lets its probe through at once.
    package var isOpenForConfigurationFault: Bool {
        state == .open && lastError?.hasPrefix(StoreBreaker.configurationFaultPrefix) == true
    }

    package static let configurationFaultPrefix = "configuration fault: "

    /// The store as a whole failed. Returns true when this failure opened (or re-opened) the breaker.
    @discardableResult
    package mutating func recordFailure(_ message: String, retryAfter: Double?, now: Int64,
                                       baseSeconds: Double, maxSeconds: Double) -> Bool {
        consecutiveFailures += 1
        lastError = message
        lastErrorAt = now
        let probeFailed = state == .open
        guard probeFailed || consecutiveFailures >= StoreBreaker.threshold || retryAfter != nil else { return false }
        let previous = Double(cooldownSeconds)
        let cooldown = probeFailed && previous > 0 ? min(maxSeconds, previous * 2) : min(maxSeconds, baseSeconds)
        cooldownSeconds = Int64(saturating: cooldown.rounded())
        state = .open
        // Retry-After comes from outside: saturate rather than trap on a huge or NaN value.
        retryAt = now.saturatingAdding(max(cooldownSeconds, Int64(saturating: (retryAfter ?? 0).rounded(.up))))
        return true
    }
}

extension StoreBreaker {
    /// The schema has one `last_error` column; its time rides in front as "@<unix seconds> "
    /// until a migration gives it a column of its own. Rows written before carry no time.
    package var storedLastError: String? {
        lastError.map { message in lastErrorAt.map { "@\($0) \(message)" } ?? message }
    }

    package static func storedError(_ text: String?) -> (message: String?, at: Int64?) {
        guard let text, text.hasPrefix("@"), let space = text.firstIndex(of: " "),
              let at = Int64(text[text.index(after: text.startIndex)..<space]) else { return (text, nil) }
        return (String(text[text.index(after: space)...]), at)
    }
}
