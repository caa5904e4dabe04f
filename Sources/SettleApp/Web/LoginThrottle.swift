import SettleBase
import Synchronization

/// Failed logins per client address: after `limit` failures within `windowSeconds`, that
/// address is refused (429 with Retry-After) until the oldest failure leaves the window. The
/// clock is injected, so the tests turn it rather than wait.
final class LoginThrottle: Sendable {
    let limit: Int
    let windowSeconds: Int64
    private let time: any TimeSource
    private let failures = Mutex<[String: [Int64]]>([:])

    init(limit: Int = 5, windowSeconds: Int64 = 300, time: any TimeSource) {
        self.limit = limit
        self.windowSeconds = windowSeconds
        self.time = time
    }

    /// Seconds until `client` may try again; nil when it may now.
    func retryAfter(_ client: String) -> Int64? {
        let now = time.unixSeconds
        return failures.withLock { table in
            let recent = (table[client] ?? []).filter { $0 > now - windowSeconds }
            table[client] = recent.isEmpty ? nil : recent
            guard recent.count >= limit, let oldest = recent.first else { return nil }
            return max(1, oldest + windowSeconds - now)
        }
    }

    func recordFailure(_ client: String) {
        let now = time.unixSeconds
        failures.withLock { table in
            // The table is bounded: a flood from many addresses forgets the quietest first.
            if table.count >= 10_000 { table = table.filter { $0.value.last ?? 0 > now - windowSeconds } }
            table[client, default: []].append(now)
        }
    }
}
