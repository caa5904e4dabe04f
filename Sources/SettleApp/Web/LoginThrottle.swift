import SettleBase
import Synchronization

/// Failed logins, counted per client address and per user name. A client with `limit` failures
/// within `windowSeconds` is refused (429 with Retry-After) until the oldest leaves the window;
/// a user name with `userLimit` failures (from anywhere) is refused to every client that has
/// itself failed lately, so guessing one user's password from many addresses is slowed too.
/// A client with no failures of its own is always heard: a correct password is never refused
/// because of other people's failures. Behind a proxy the client is the forwarded address
/// (`ClientAddress`). The clock is injected, so the tests turn it rather than wait.
final class LoginThrottle: Sendable {
    let limit: Int
    let userLimit: Int
    let windowSeconds: Int64
    private let time: any TimeSource
    private let clients = Mutex<[String: [Int64]]>([:])
    private let users = Mutex<[String: [Int64]]>([:])

    init(limit: Int = 5, userLimit: Int = 20, windowSeconds: Int64 = 300, time: any TimeSource) {
        self.limit = limit
        self.userLimit = userLimit
        self.windowSeconds = windowSeconds
        self.time = time
    }

    /// Seconds until `client` may try again (for `user`, when the request names one); nil when it may now.
    func retryAfter(client: String, user: String?) -> Int64? {
        let now = time.unixSeconds
        let own = recent(clients, client, now)
        if own.count >= limit, let oldest = own.first { return max(1, oldest + windowSeconds - now) }
        guard !own.isEmpty, let user else { return nil }
        let guessed = recent(users, user, now)
        guard guessed.count >= userLimit, let oldest = guessed.first else { return nil }
        return max(1, oldest + windowSeconds - now)
    }

    func recordFailure(client: String, user: String) {
        let now = time.unixSeconds
        record(clients, client, now)
        if !user.isEmpty { record(users, user, now) }
    }

    private func recent(_ table: borrowing Mutex<[String: [Int64]]>, _ key: String, _ now: Int64) -> [Int64] {
        table.withLock { entries in
            let recent = (entries[key] ?? []).filter { $0 > now - windowSeconds }
            entries[key] = recent.isEmpty ? nil : recent
            return recent
        }
    }

    private func record(_ table: borrowing Mutex<[String: [Int64]]>, _ key: String, _ now: Int64) {
        table.withLock { entries in
            // Bounded: a flood from many addresses or names forgets the quiet ones first, and at
            // worst starts afresh; memory never grows with the attacker's supply of names.
            if entries.count >= 10_000 { entries = entries.filter { $0.value.last ?? 0 > now - windowSeconds } }
            if entries.count >= 10_000 { entries.removeAll() }
            var times = entries[key, default: []]
            times.append(now)
            entries[key] = Array(times.suffix(max(limit, userLimit)))
        }
    }
}
