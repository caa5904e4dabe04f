import Dispatch
import Foundation
import Synchronization
import SettleBase
import SettleModel

/// OAuth 2.0 access tokens for a service account: a JWT assertion signed RS256 with the
/// account's key, exchanged at the token endpoint, and reused until shortly before it expires.
/// https://developers.google.com/identity/protocols/oauth2/service-account#httprest
///
/// One source is shared by every worker: at most one exchange is in flight, and callers that
/// arrive meanwhile wait for its result instead of starting their own (a pass with 64 workers
/// starting at once asks Google once). `invalidate(_:)` drops a token the API refused, so the
/// next caller fetches a fresh one. A failed exchange is remembered for `failureCoolDown` (or
/// Google's Retry-After, when longer): callers meanwhile get its error without asking Google,
/// so a pass of many orders and pushes does not ask a failing endpoint once for each.
package final class GoogleAccessTokenSource: Sendable {
    package let key: ServiceAccountKey
    /// Where the assertion is posted, and therefore its `aud`.
    package let tokenURL: String
    package let client: HTTPClient
    package let time: any TimeSource
    private let state = Mutex(State())

    /// The one scope settle needs: the Google Play Android Developer API.
    package static let scope = "https://www.googleapis.com/auth/androidpublisher"
    /// Google refuses assertions whose `exp` is more than an hour after `iat`.
    package static let assertionLifetime: Int64 = 3600
    /// A token this close to its end is replaced, so none expires in flight (at most half its life).
    package static let renewBefore: Int64 = 5 * 60
    /// Seconds a failed exchange answers for itself; the store's breaker paces longer outages.
    package static let failureCoolDown: Int64 = 10

    private struct State {
        var cached: (token: String, renewAt: Int64)?
        var inFlight: Exchange?
        var failed: (error: PlayAPIError, until: Int64)?
    }

    /// One exchange with the token endpoint, whose result every waiting caller shares.
    private final class Exchange: Sendable {
        let finished = DispatchSemaphore(value: 0)
        let result = Mutex<Result<String, PlayAPIError>?>(nil)
        let waiters = Mutex(0)
    }

    package init(key: ServiceAccountKey, tokenURL: String? = nil, client: HTTPClient, time: any TimeSource) {
        self.key = key
        self.tokenURL = tokenURL ?? key.tokenURI
        self.client = client
        self.time = time
    }

    /// A valid access token: the cached one, the one another caller is fetching, or a new one.
    package func accessToken() throws(PlayAPIError) -> String {
        enum Step { case cached(String), failed(PlayAPIError), wait(Exchange), fetch(Exchange) }
        let now = time.unixSeconds
        let step = state.withLock { state -> Step in
            if let cached = state.cached, now < cached.renewAt { return .cached(cached.token) }
            if let failed = state.failed, now < failed.until { return .failed(failed.error) }
            if let exchange = state.inFlight {
                exchange.waiters.withLock { $0 += 1 }
                return .wait(exchange)
            }
            let exchange = Exchange()
            state.inFlight = exchange
            return .fetch(exchange)
        }
        switch step {
        case let .cached(token):
            return token
        case let .failed(error):
            throw error
        case let .wait(exchange):
            exchange.finished.wait()
            // Set before the semaphore is signalled, so it is there once the wait returns.
            return try exchange.result.withLock { $0 }!.get()
        case let .fetch(exchange):
            let result: Result<(token: String, renewAt: Int64), PlayAPIError>
            do {
                result = .success(try fetch(now: now))
            } catch {
                result = .failure(error)
            }
            state.withLock { state in
                switch result {
                case let .success(fresh):
                    state.cached = fresh
                    state.failed = nil
                case let .failure(error):
                    let coolDown = max(Self.failureCoolDown, Int64(saturating: (error.retryAfter ?? 0).rounded(.up)))
                    state.failed = (error, now.saturatingAdding(coolDown))
                }
                state.inFlight = nil
            }
            let shared = result.map(\.token)
            exchange.result.withLock { $0 = shared }
            // One signal per caller that registered while the exchange was in flight; none can
            // register any more, since it is no longer `inFlight`.
            for _ in 0..<exchange.waiters.withLock({ $0 }) { exchange.finished.signal() }
            return try shared.get()
        }
    }

    /// Callers waiting for the exchange in flight (0 when none is): lets a test see that they queued.
    package var waitingCallers: Int {
        state.withLock { $0.inFlight?.waiters.withLock { $0 } ?? 0 }
    }

    /// Forgets `rejected` if it is still the cached token (the API answered 401 to it). A token
    /// another caller already replaced is left alone, so concurrent 401s cause one refresh.
    package func invalidate(_ rejected: String) {
        state.withLock { state in
            if state.cached?.token == rejected { state.cached = nil }
        }
    }

    private func fetch(now: Int64) throws(PlayAPIError) -> (token: String, renewAt: Int64) {
        let assertion: String
        do {
            assertion = try RS256JWT.sign(
                header: .object([("alg", .string("RS256")), ("typ", .string("JWT")), ("kid", .string(key.privateKeyId))]),
                claims: .object([("iss", .string(key.clientEmail)), ("scope", .string(Self.scope)), ("aud", .string(tokenURL)),
                                 ("iat", .number(now)), ("exp", .number(now + Self.assertionLifetime))]),
                key: key.privateKey)
        } catch {
            throw PlayAPIError(.configuration, "cannot sign the token request with \(key): \(error)")
        }
        let body = "grant_type=" + PlayPath.formEncode("urn:ietf:params:oauth:grant-type:jwt-bearer")
            + "&assertion=" + PlayPath.formEncode(assertion)
        let request = HTTPRequest(method: "POST", url: tokenURL,
                                  headers: [HTTPHeader("Content-Type", "application/x-www-form-urlencoded"),
                                            HTTPHeader("Accept", "application/json")],
                                  body: Data(body.utf8))
        let response: HTTPResponse
        do {
            response = try client.send(request)
        } catch {
            throw PlayAPIError(.unavailable, "the Google token endpoint did not answer: \(error)")
        }
        let json = try? JSONValue.parse(response.body)
        switch response.status {
        case 200:
            guard case let .string(token)? = json?["access_token"], !token.isEmpty,
                  json?["token_type"].map({ $0.looseString?.lowercased() == "bearer" }) ?? true else {
                throw PlayAPIError(.unavailable, "the Google token endpoint sent a 200 without a bearer access token",
                                   status: 200)
            }
            // RFC 6749 5.1 makes expires_in optional; Google's tokens live an hour.
            let lifetime = min(max(json?["expires_in"]?.looseInt64 ?? 3600, 0), 86_400)
            return (token, now + lifetime - min(Self.renewBefore, lifetime / 2))
        case 429, 500...599:
            let retryAfter = RetryAfter.seconds(response.header("Retry-After"), now: time.now)
            throw PlayAPIError(.unavailable, "the Google token endpoint answered HTTP \(response.status)",
                               status: response.status, retryAfter: retryAfter)
        default:
            // OAuth errors (RFC 6749 5.2) are a code and a short sentence from Google; neither holds
            // the assertion, but it is cut out should it ever be echoed.
            let code = json?["error"]?.looseString
            let detail = [code, json?["error_description"]?.looseString].compactMap { $0 }.joined(separator: ": ")
            let said = detail.isEmpty ? "" : " (\(String(detail.prefix(200))))"
            throw PlayAPIError(.configuration,
                               "the Google token endpoint refused \(key) with HTTP \(response.status)\(said): check the key file is current and the account is not disabled"
                                   .replacingOccurrences(of: assertion, with: "<assertion>"),
                               status: response.status, reason: code)
        }
    }
}
