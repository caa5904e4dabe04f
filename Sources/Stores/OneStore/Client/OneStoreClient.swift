import Foundation
import Synchronization
import SettleBase
import SettleModel
import SettleConfig

/// ONE store's IAP server API V7 (one-store.md sections 2 to 4) over libcurl: an access token
/// by client credentials, reused until ten minutes before it ends (ONE store issues a new one from
/// then on) and dropped when refused; purchase details, acknowledge and consume, each with the
/// configured `x-market-code`, on the commercial or the sandbox host (separate ledgers).
package final class OneStoreClient: Sendable {
    package enum Host: String, Sendable {
        case commercial
        case sandbox
    }

    /// Why a call gave no usable answer: `notFound` is 404 `NoSuchData` (no such purchase here,
    /// under this product and market code); `configuration` credentials refused; `refused` 409
    /// `InvalidPurchaseState` and the like; `unavailable` unreachable, 5xx, 429, garbage; `paced`
    /// held back by the pacer (`one_store.rate_limits`).
    package typealias Failure = StoreCallFailure

    package let settings: Configuration.OneStoreConfiguration
    package let http: HTTPClient
    package let time: any TimeSource
    private let secret: Secret
    private let cached = Mutex<[String: (token: String, renewAt: Int64)]>([:])
    private let observe: (@Sendable (String, String) -> Void)?
    private let pacer: Pacer?

    /// ONE store issues a new token once fewer than 600 seconds are left.
    static let renewBeforeSeconds: Int64 = 600

    package init(
        _ settings: Configuration.OneStoreConfiguration, http: HTTPClient, time: any TimeSource, pacer: Pacer? = nil,
        observe: (@Sendable (String, String) -> Void)? = nil
    ) throws(ConfigError) {
        (self.settings, self.http, self.time, self.observe, self.pacer) = (settings, http, time, observe, pacer)
        secret = try settings.clientSecretFile.read()
    }

    package func root(_ host: Host) -> String { host == .commercial ? settings.apiURL : settings.sandboxURL }

    /// Purchase details, under `market` (the configured code unless asked otherwise).
    package func purchase(
        _ proof: OneStoreProof, on host: Host, market: String? = nil
    ) -> Result<OneStorePurchase, Failure> {
        let path =
            "/v7/apps/\(Self.segment(settings.packageName))/purchases/inapp/products/\(Self.segment(proof.productId))/\(Self.segment(proof.purchaseToken))"
        return call(
            "purchase", method: "GET", url: root(host) + path, body: nil,
            market: market ?? settings.marketCode.rawValue,
            what: "purchase details of \(proof.purchaseId)"
        ).flatMap { json in
            do throws(OneStorePurchase.Invalid) {
                return .success(try OneStorePurchase(json: json))
            } catch {
                return .failure(
                    Failure(.unavailable, "ONE store's purchase details of \(proof.purchaseId): \(error.message)"))
            }
        }
    }

    /// Acknowledge (every kind, `purchases/all`) or consume (consumables), after the grant.
    package func finish(
        _ proof: OneStoreProof, consume: Bool, on host: Host, developerPayload: String?
    ) -> Result<Void, Failure> {
        let kind = consume ? "inapp" : "all", verb = consume ? "consume" : "acknowledge"
        let path =
            "/v7/apps/\(Self.segment(settings.packageName))/purchases/\(kind)/products/\(Self.segment(proof.productId))/\(Self.segment(proof.purchaseToken))/\(verb)"
        let body = JSONValue.object([("developerPayload", .string(String((developerPayload ?? "").prefix(200))))])
        return call(
            verb, method: "POST", url: root(host) + path, body: body, market: settings.marketCode.rawValue,
            what: "\(verb) of \(proof.purchaseId)"
        ).map { _ in () }
    }

    /// How a token appears in a request's path, for tests that match requests to purchases.
    package static func segmentForTests(_ text: String) -> String { segment(text) }

    /// A path segment, every byte but the unreserved ones percent-encoded (tokens hold `+`, `=`, `%`).
    static func segment(_ text: String) -> String {
        text.addingPercentEncoding(
            withAllowedCharacters: CharacterSet(
                charactersIn: "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-._~")) ?? ""
    }

    private func call(
        _ name: String, method: String, url: String, body: JSONValue?, market: String,
        what: String
    ) -> Result<JSONValue, Failure> {
        // ONE store publishes no limits: its groups are paced only at a configured `rate_limits`.
        let key = PacerKey(
            store: Store.oneStore.rawValue,
            group: name == "purchase" ? OneStoreRateGroups.purchases : OneStoreRateGroups.finishes,
            environment: url.hasPrefix(settings.sandboxURL) ? "sandbox" : "production")
        do {
            try pacer?.acquire(key, priority: .dueOrders, budget: http.configuration.totalTimeout)
        } catch {
            return .failure(Failure(.paced, "\(error) (\(what) not sent)", retryAfter: error.waitSeconds))
        }
        let result = exchange(method: method, url: url, body: body, market: market, what: what)
        if case let .failure(failure) = result, failure.code == "429" {
            _ = pacer?.throttled(key, retryAfter: failure.retryAfter)
        } else {
            pacer?.succeeded(key)
        }
        switch result {
        case .success: observe?(name, "ok")
        case let .failure(failure):
            observe?(name, "\(failure.kind)".replacingOccurrences(of: "notFound", with: "not_found"))
        }
        return result
    }

    private func exchange(
        method: String, url: String, body: JSONValue?, market: String, what: String
    ) -> Result<JSONValue, Failure> {
        var refreshed = false
        while true {
            let token: String
            switch accessToken(url: url, market: market) {
            case let .success(value): token = value
            case let .failure(failure): return .failure(failure)
            }
            let request = HTTPRequest(
                method: method, url: url,
                headers: [
                    HTTPHeader("Content-Type", "application/json"), HTTPHeader("Authorization", "Bearer " + token),
                    HTTPHeader("x-market-code", market),
                ],
                body: body?.data ?? Data())
            let response: HTTPResponse
            do {
                response = try http.send(request)
            } catch {
                return .failure(Failure(.unavailable, "ONE store \(what) did not answer: \(error)"))
            }
            let json = try? JSONValue.parse(response.body)
            let code = json?["error"]?["code"]?.looseString
            let said =
                code.map {
                    " (\(PrintableText.escape(String($0.prefix(64))))"
                        + (json?["error"]?["message"]?.looseString.map {
                            ": " + PrintableText.escape(String($0.prefix(200)))
                        } ?? "") + ")"
                } ?? ""
            if response.status == 401 && !refreshed {
                cached.withLock { $0[Self.tokenKey(url: url, market: market)] = nil }
                refreshed = true
                continue
            }
            let retryAfter = RetryAfter.seconds(response.header("Retry-After"), now: time.now)
            switch response.status {
            case 200...299:
                guard let json else {
                    return .failure(
                        Failure(.unavailable, "ONE store \(what) answered HTTP \(response.status) with no JSON"))
                }
                return .success(json)
            case 404 where code == "NoSuchData":
                return .failure(
                    Failure(.notFound, "ONE store has no \(what) under this product and market code\(said)", code: code)
                )
            case 404 where json == nil:
                return .failure(
                    Failure(
                        .refused,
                        "ONE store's front server refused \(what) (HTTP 404 without JSON: the request never reached the API)"
                    ))
            case 401, 403:
                return .failure(
                    Failure(
                        .configuration,
                        "ONE store \(what) answered HTTP \(response.status)\(said): check one_store.client_id and client_secret_file",
                        code: code))
            case 429:
                return .failure(
                    Failure(
                        .unavailable, "ONE store \(what) answered HTTP 429\(said)", code: "429", retryAfter: retryAfter)
                )
            case 500...599:
                return .failure(
                    Failure(
                        .unavailable, "ONE store \(what) answered HTTP \(response.status)\(said)", code: code,
                        retryAfter: retryAfter))
            default:
                return .failure(
                    Failure(.refused, "ONE store \(what) answered HTTP \(response.status)\(said)", code: code))
            }
        }
    }

    private static func tokenKey(url: String, market: String) -> String {
        (URLComponents(string: url)?.host ?? "") + ":" + String(URLComponents(string: url)?.port ?? 0) + "|" + market
    }

    /// A token for the host `url` is on (commercial and sandbox are separate), under `market`.
    private func accessToken(url: String, market: String) -> Result<String, Failure> {
        let key = Self.tokenKey(url: url, market: market)
        let now = time.unixSeconds
        if let cached = cached.withLock({ $0[key] }), now < cached.renewAt { return .success(cached.token) }
        guard var components = URLComponents(string: url) else {
            return .failure(Failure(.configuration, "not a URL: one_store.api_url"))
        }
        // The token endpoint sits at the host's root; a configured URL with a path prefix (a test's) keeps it.
        let prefix = components.path.components(separatedBy: "/v7/").first ?? ""
        components.path = prefix + "/v7/oauth/token"
        components.query = nil
        let token: String, lifetime: Int64
        switch ClientCredentials.exchange(
            url: components.string ?? url, clientId: settings.clientId, secret: secret.value,
            headers: [HTTPHeader("x-market-code", market)], http: http)
        {
        case let .success(answer): (token, lifetime) = answer
        case let .failure(.refused(status)):
            return .failure(
                Failure(
                    .configuration,
                    "ONE store refused the app's client credentials (HTTP \(status)): "
                        + "check one_store.client_id and client_secret_file"))
        case let .failure(.unavailable(why)):
            return .failure(Failure(.unavailable, "ONE store's token endpoint \(why)"))
        }
        cached.withLock { $0[key] = (token, now + max(30, lifetime - Self.renewBeforeSeconds)) }
        return .success(token)
    }
}
