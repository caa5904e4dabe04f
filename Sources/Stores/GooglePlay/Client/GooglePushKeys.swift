import Foundation
import Synchronization
import SettleBase

/// Where the keys that sign Pub/Sub push tokens come from, for `PushAuthenticator`.
package protocol PushKeys: Sendable {
    /// The keys to check a token with now; nil when none can be had.
    func current() -> JSONWebKeySet?
    /// The keys after a token named a key id `current()` lacks: read again if they can be (a key
    /// Google has just rotated in), nil when nothing new can be had now.
    func afterUnknownKey() -> JSONWebKeySet?
}

/// A fixed key set (a test's, the simulator's): nothing to read again.
extension JSONWebKeySet: PushKeys {
    package func current() -> JSONWebKeySet? { self }
    package func afterUnknownKey() -> JSONWebKeySet? { nil }
}

/// Google's published push signing keys (`google_play.push.jwks_url`, by default
/// https://www.googleapis.com/oauth2/v3/certs), read over libcurl and kept as HTTP caching says:
/// for the answer's `Cache-Control: max-age` less its `Age` (RFC 9111 4.2.1 and 4.2.3), an hour
/// when it says nothing, never longer than a day. Google rotates its keys every few days and
/// publishes the next one ahead, so a stale set still verifies and is kept when a refresh fails;
/// the operator's file (`jwks_file`) is the fallback while no set was ever read.
///
/// A token naming a key id the set lacks makes it read again at once (Google may have just
/// rotated), but never more than once every `minimumRefreshSeconds`, whoever sends such tokens,
/// and one read at a time: meanwhile the others check with what is there.
package final class GooglePushKeys: PushKeys {
    package let url: String
    package let fallback: JSONWebKeySet?
    package let client: HTTPClient
    package let time: any TimeSource
    package let log: Log
    private let state = Mutex(State())

    /// Kept this long when Google's answer carries no max-age.
    package static let defaultMaxAge: Int64 = 3600
    package static let maximumMaxAge: Int64 = 86_400
    /// Never read more often than this, whatever the answer or the tokens say.
    package static let minimumRefreshSeconds: Int64 = 60

    private struct State {
        var fetched: JSONWebKeySet?
        var freshUntil: Int64 = .min
        var lastAttempt: Int64?
        var reading = false
    }

    package init(url: String, fallback: JSONWebKeySet?, client: HTTPClient, time: any TimeSource, log: Log) {
        self.url = url
        self.fallback = fallback
        self.client = client
        self.time = time
        self.log = log
    }

    package func current() -> JSONWebKeySet? {
        refresh(unknownKey: false)
        return state.withLock { $0.fetched } ?? fallback
    }

    package func afterUnknownKey() -> JSONWebKeySet? {
        guard refresh(unknownKey: true) else { return nil }
        return state.withLock { $0.fetched }
    }

    /// Reads the set when it is stale (or a token named a key it lacks), unless it was tried less
    /// than `minimumRefreshSeconds` ago or another caller is reading it. True when a new set came.
    @discardableResult
    private func refresh(unknownKey: Bool) -> Bool {
        let now = time.unixSeconds
        let due = state.withLock { s -> Bool in
            guard !s.reading, unknownKey || now >= s.freshUntil else { return false }
            if let last = s.lastAttempt, now - last < Self.minimumRefreshSeconds { return false }
            s.reading = true
            s.lastAttempt = now
            return true
        }
        guard due else { return false }
        let read = fetch(now: now)
        state.withLock { s in
            s.reading = false
            if let read {
                s.fetched = read.keys
                s.freshUntil = now + read.maxAge
            }
        }
        return read != nil
    }

    private func fetch(now: Int64) -> (keys: JSONWebKeySet, maxAge: Int64)? {
        let response: HTTPResponse
        do {
            response = try client.send(HTTPRequest(method: "GET", url: url, headers: [HTTPHeader("Accept", "application/json")]))
        } catch {
            log.warning("google_play.push_keys_unavailable", ["error": "\(error)", "keeping": keeping])
            return nil
        }
        guard response.status == 200 else {
            log.warning("google_play.push_keys_unavailable", ["status": response.status, "keeping": keeping])
            return nil
        }
        do {
            let keys = try JSONWebKeySet(json: response.body)
            let maxAge = Self.maxAge(cacheControl: response.header("Cache-Control"), age: response.header("Age"))
            log.info("google_play.push_keys_read", ["keys": keys.keys.count, "fresh_seconds": maxAge])
            return (keys, maxAge)
        } catch {
            log.warning("google_play.push_keys_unreadable", ["error": "\(error)", "keeping": keeping])
            return nil
        }
    }

    /// What a failed read leaves the keys to, for the log.
    private var keeping: String {
        state.withLock { $0.fetched } != nil ? "the keys read before" : fallback != nil ? "google_play.push.jwks_file" : "none"
    }

    /// Seconds an answer stays fresh: `max-age` (`no-store`, `no-cache`: none) less `Age`, kept
    /// between `minimumRefreshSeconds` and `maximumMaxAge`.
    package static func maxAge(cacheControl: String?, age: String?) -> Int64 {
        var maxAge: Int64?
        for directive in (cacheControl ?? "").split(separator: ",") {
            let parts = directive.split(separator: "=", maxSplits: 1).map { $0.trimmingCharacters(in: .whitespaces).lowercased() }
            switch parts.first {
            case "no-store", "no-cache": maxAge = 0
            case "max-age" where parts.count == 2:
                if maxAge != 0, let seconds = Int64(parts[1].trimmingCharacters(in: CharacterSet(charactersIn: "\""))) { maxAge = seconds }
            default: break
            }
        }
        // Saturating: `max-age=-9223372036854775808` with an `Age` trapped.
        let aging = max(0, age.flatMap { Int64($0.trimmingCharacters(in: .whitespaces)) } ?? 0)
        let aged = (maxAge ?? defaultMaxAge).saturatingSubtracting(aging)
        return min(max(aged, minimumRefreshSeconds), maximumMaxAge)
    }
}
