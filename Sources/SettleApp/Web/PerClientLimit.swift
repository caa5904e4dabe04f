import Synchronization

/// At most `limit` requests being answered at once per client key; the rest are refused (503)
/// rather than queued, so one client cannot take every thread.
final class PerClientLimit: Sendable {
    let limit: Int
    private let counts = Mutex<[String: Int]>([:])

    init(limit: Int) { self.limit = limit }

    /// False when the client already has `limit` requests in flight.
    func enter(_ client: String) -> Bool {
        counts.withLock { table in
            let now = table[client, default: 0]
            guard now < limit else { return false }
            table[client] = now + 1
            return true
        }
    }

    func leave(_ client: String) {
        counts.withLock { table in
            let now = table[client, default: 0] - 1
            table[client] = now > 0 ? now : nil
        }
    }
}
