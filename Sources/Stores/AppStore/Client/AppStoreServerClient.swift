import Foundation
import SettleBase
import SettleModel

/// The App Store Server API over libcurl (Get Transaction Info here, Get Transaction History in
/// `AppStoreServerClient+History.swift`): production first, one hop to sandbox on 4040010 (not
/// found) or on 401 from production (an app not yet released).
/// https://developer.apple.com/documentation/appstoreserverapi/get-transaction-info
package struct AppStoreServerClient: Sendable {
    package var productionURL: String
    package var sandboxURL: String
    package var tokens: BearerTokenSource
    package var client: HTTPClient
    /// Told about every HTTP request: environment, a short outcome label, seconds (for metrics).
    package var observe: (@Sendable (_ environment: AppleEnvironment, _ outcome: String, _ seconds: Double) -> Void)?
    /// The process's pacer: every request takes a token from its endpoint's bucket first and
    /// reports a 429 to it. Nil sends unpaced.
    package var pacer: Pacer?

    package init(productionURL: String, sandboxURL: String, tokens: BearerTokenSource, client: HTTPClient) {
        self.productionURL = productionURL
        self.sandboxURL = sandboxURL
        self.tokens = tokens
        self.client = client
    }

    /// What Apple said about one transaction id.
    package enum Lookup: Sendable, Equatable {
        /// The signed transaction (still to be verified) and the environment that had it.
        case found(signedTransactionInfo: String, environment: AppleEnvironment)
        /// Neither environment knows the id.
        case notFound(String)
        /// Apple refused the id itself (e.g. 4000006 invalid transaction id).
        case invalidId(String)
        /// Anything else, classified as for any verification.
        case failed(VerificationOutcome)
    }

    /// One environment's answer to one request.
    package enum Answer<Body> {
        case found(Body)
        case notFound
        case unauthorized
        case failed(VerificationOutcome, answered: Bool)
        case invalidId(String)
        /// 400 with 4000014 (invalid pagination token) or 4000017 (expired): start paging again.
        case paginationExpired
    }

    /// Looks the transaction up, production first. `storeAnswered` is false when no answer
    /// came back at all (an outage).
    package func transactionInfo(_ transactionId: String) -> (lookup: Lookup, storeAnswered: Bool) {
        let (routed, answered) = route(transactionId) { environment in
            get("/inApps/v1/transactions/\(transactionId)", environment: environment) { json -> String? in
                guard case let .string(jws)? = json["signedTransactionInfo"] else { return nil }
                return jws
            }
        }
        switch routed {
        case let .found(jws, environment): return (.found(signedTransactionInfo: jws, environment: environment), answered)
        case let .notFound(message): return (.notFound(message), answered)
        case let .invalidId(message): return (.invalidId(message), answered)
        case let .failed(outcome): return (.failed(outcome), answered)
        }
    }

    /// Where an id was found, after Apple's environment rule.
    package enum Routed<Body> {
        case found(Body, environment: AppleEnvironment)
        case notFound(String)
        case invalidId(String)
        case failed(VerificationOutcome)
    }

    /// Apple's environment rule (apple-protocol.md 2.6): production first; sandbox on 4040010, or
    /// on 401 from production (an app not yet released); 401 from both is our configuration.
    package func route<Body>(_ transactionId: String, _ request: (AppleEnvironment) -> Answer<Body>) -> (Routed<Body>, storeAnswered: Bool) {
        // Transaction ids are digits; anything else would change the URL's meaning.
        guard !transactionId.isEmpty, transactionId.count <= 64,
              transactionId.allSatisfy({ $0.isASCII && ($0.isNumber || $0.isLetter) }) else {
            return (.invalidId("'\(transactionId.prefix(64))' is not an Apple transaction id"), true)
        }
        let production = request(.production)
        switch production {
        case let .found(body): return (.found(body, environment: .production), true)
        case let .invalidId(message): return (.invalidId(message), true)
        case let .failed(outcome, answered): return (.failed(outcome), answered)
        case .paginationExpired: return (.failed(.retry("the App Store Server API refused a pagination token twice")), true)
        case .notFound, .unauthorized:
            var productionRefused = false
            if case .unauthorized = production { productionRefused = true }
            let neither = "transaction \(transactionId) is not known to Apple in production or sandbox"
            switch request(.sandbox) {
            case let .found(body): return (.found(body, environment: .sandbox), true)
            case let .invalidId(message): return (.invalidId(message), true)
            case let .failed(outcome, answered): return (.failed(outcome), answered)
            case .paginationExpired: return (.failed(.retry("the App Store Server API refused a pagination token twice")), true)
            case .notFound:
                // Production refused to answer: "not in sandbox" says nothing about production,
                // so this is no "not found" (which may end in a rejection), only a retry.
                guard !productionRefused else {
                    return (.failed(.retry("the App Store Server API answered 401 in production and transaction \(transactionId) is not "
                                           + "known in sandbox: production could not be asked (check server_api.issuer_id, key_id, "
                                           + "private_key_file and bundle_id; an app not yet released answers 401 too)")), true)
                }
                return (.notFound(neither), true)
            case .unauthorized:
                guard productionRefused else { return (.notFound(neither), true) }
                return (.failed(.configurationFault(
                    "the App Store Server API answered 401 in production and sandbox: check server_api.issuer_id, key_id, private_key_file and bundle_id")), true)
            }
        }
    }

    /// One GET, timed for metrics. `path` must hold an id `route` has checked; `decode` reads a
    /// 200's JSON body, nil meaning it is not the expected answer.
    package func get<Body>(_ path: String, environment: AppleEnvironment, decode: (JSONValue) -> Body?) -> Answer<Body> {
        send("GET", path, body: Data(), environment: environment, decode: decode)
    }

    /// One request of any method, timed for metrics. A 2xx with an empty body is decoded from
    /// JSON null.
    /// Apple's errors that say a call about this transaction can never succeed, so it is not sent
    /// again. https://developer.apple.com/documentation/appstoreserverapi/familytransactionnotsupportederror
    package static let finalErrors: [Int: String] = [4000185: "FamilyTransactionNotSupportedError"]

    /// `finalReason`: what Apple's final refusal of the call means for the order; a call about a
    /// delivered purchase (Finish Transaction, consumption) says `store_finish_refused`, any other
    /// (a lookup, before anything was delivered) `store_refused`.
    package func send<Body>(_ method: String, _ path: String, body: Data, environment: AppleEnvironment,
                            finalReason: AttentionReason = .storeRefused, decode: (JSONValue) -> Body?) -> Answer<Body> {
        let started = DispatchTime.now()
        let (answer, label) = exchange(method, path, body: body, environment: environment, finalReason: finalReason, decode: decode)
        observe?(environment, label, Double(DispatchTime.now().uptimeNanoseconds - started.uptimeNanoseconds) / 1e9)
        return answer
    }

    private func exchange<Body>(_ method: String, _ path: String, body: Data, environment: AppleEnvironment,
                                finalReason: AttentionReason, decode: (JSONValue) -> Body?) -> (Answer<Body>, String) {
        let name = "\(environment.rawValue.lowercased()) App Store Server API"
        let key = pacerKey(method, path, environment: environment)
        if let refusal = pace(key) {
            return (.failed(.paced("\(refusal)"), answered: false), "paced")
        }
        let token: String
        do {
            token = try tokens.token()
        } catch {
            return (.failed(.configurationFault("cannot sign the App Store Server API token: \(error)"), answered: false), "token_error")
        }
        let base = environment == .production ? productionURL : sandboxURL
        let url = base.hasSuffix("/") ? String(base.dropLast()) : base
        var headers = [HTTPHeader("Authorization", "Bearer \(token)"), HTTPHeader("Accept", "application/json")]
        if !body.isEmpty { headers.append(HTTPHeader("Content-Type", "application/json")) }
        let request = HTTPRequest(method: method, url: "\(url)\(path)", headers: headers, body: body)
        let response: HTTPResponse
        do {
            response = try client.send(request)
        } catch {
            if error.kind == .responseTooLarge {
                return (.failed(.retry("\(name): \(error)"), answered: true), error.kind.rawValue)
            }
            return (.failed(.storeUnavailable("\(name): \(error)", retryAfter: nil), answered: false), error.kind.rawValue)
        }
        let errorCode = (try? JSONValue.parse(response.body))?["errorCode"]?.looseInt64.map { Int($0) }
        let atFloor = paced(key, response)
        switch response.status {
        case 200...299:
            // An empty 2xx (202 Accepted, Finish Transaction's 200) decodes as null, which only a
            // call that expects no body accepts.
            let json = response.body.isEmpty ? JSONValue.null : try? JSONValue.parse(response.body)
            guard let json, let body = decode(json) else {
                return (.failed(.storeUnavailable("\(name) sent a 200 that is not the expected answer (\(response.body.count) bytes)",
                                                  retryAfter: nil), answered: false), "garbage")
            }
            return (.found(body), "found")
        case 401:
            return (.unauthorized, "http_401")
        case 403:
            // Not one of Apple's documented answers: something refuses our credentials (a key
            // revoked for this app, a proxy). Every call would get it; the order is not at fault.
            return (.failed(.configurationFault("\(name) answered HTTP 403: check server_api.issuer_id, key_id, private_key_file and bundle_id"),
                            answered: true), "http_403")
        case 404 where errorCode == nil || errorCode == 4040010:
            return (.notFound, "not_found")
        case 404 where [4040002, 4040004, 4040006].contains(errorCode):
            return (.failed(.storeUnavailable("\(name): temporary error \(errorCode!)", retryAfter: nil), answered: false), "retryable_\(errorCode!)")
        case 429:
            let retryAfter = RetryAfter.seconds(response.header("Retry-After"), now: Date(timeIntervalSince1970: Double(tokens.time.unixSeconds)))
            // Above the bucket's floor the pacer was too fast: it lowered the bucket, the work
            // waits. At the floor (or unpaced) Apple refuses even a slow settle: Apple-wide.
            if atFloor == false, let bucket = pacer?.bucket(key) {
                return (.failed(.paced(Self.pacedBy429(key, bucket, retryAfter: retryAfter, who: name)), answered: false), "http_429")
            }
            return (.failed(.storeUnavailable("\(name) answered HTTP 429 (rate limited)", retryAfter: retryAfter), answered: false), "http_429")
        case 500...599:
            let code = errorCode.map { " (error \($0))" } ?? ""
            return (.failed(.storeUnavailable("\(name) answered HTTP \(response.status)\(code)", retryAfter: nil), answered: false), "http_5xx")
        case 400...499 where errorCode.flatMap { Self.finalErrors[$0] } != nil:
            // Apple will never take this call for this transaction: no retry can change it.
            let code = errorCode!
            return (.failed(.needsAttention(reason: finalReason,
                                            detail: "\(name) answered HTTP \(response.status) (error \(code) \(Self.finalErrors[code]!)): final"),
                            answered: true), "final_\(code)")
        case 400 where errorCode == 4000006:
            return (.invalidId("\(name): invalid transaction id (4000006)"), "invalid_id")
        case 400 where errorCode == 4000014 || errorCode == 4000017:
            return (.paginationExpired, "pagination_expired")
        default:
            let code = errorCode.map { " (error \($0))" } ?? ""
            return (.failed(.retry("\(name) answered HTTP \(response.status)\(code)"), answered: true), "http_4xx")
        }
    }

    // MARK: - Pacing

    /// The pacer's bucket for a request: Apple limits each endpoint per environment.
    package func pacerKey(_ method: String, _ path: String, environment: AppleEnvironment) -> PacerKey {
        PacerKey(store: Store.appStore.rawValue, group: AppStoreRateGroups.group(method: method, path: path),
                 environment: environment.rawValue)
    }

    /// Takes the request's token, waiting at most the HTTP client's whole-request timeout; the
    /// refusal when the wait would be longer.
    package func pace(_ key: PacerKey) -> Pacer.Exhausted? {
        do {
            try pacer?.acquire(key, priority: AppStoreRateGroups.priority(group: key.group), budget: client.configuration.totalTimeout)
            return nil
        } catch {
            return error
        }
    }

    /// Tells the pacer how Apple answered: a 429 lowers the bucket's rate until `Retry-After`.
    /// For a 429, whether the bucket was at its floor already (nil: not paced).
    @discardableResult
    package func paced(_ key: PacerKey, _ response: HTTPResponse) -> Bool? {
        guard let pacer else { return nil }
        if response.status == 429 {
            let now = Date(timeIntervalSince1970: Double(tokens.time.unixSeconds))
            return pacer.throttled(key, retryAfter: RetryAfter.seconds(response.header("Retry-After"), now: now))
        }
        pacer.succeeded(key)
        return nil
    }

    /// "paced: app_store transaction_info (Production) at 25/s (...)": a 429 the pacer took as its own.
    package static func pacedBy429(_ key: PacerKey, _ bucket: PacerBucket, retryAfter: Double?, who: String) -> String {
        let wait = retryAfter.map { ", Retry-After \(String(format: "%.1f", $0)) s" } ?? ""
        return "paced: \(key) at \(Pacer.formatRate(bucket.rate))/s (\(who) answered HTTP 429\(wait); the bucket was lowered)"
    }
}
