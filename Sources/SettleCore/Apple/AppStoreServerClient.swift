import Foundation

/// The App Store Server API's Get Transaction Info over libcurl: production first, one hop to
/// sandbox on 4040010 (not found) or on 401 from production (an app not yet released).
/// https://developer.apple.com/documentation/appstoreserverapi/get-transaction-info
public struct AppStoreServerClient: Sendable {
    public var productionURL: String
    public var sandboxURL: String
    public var tokens: BearerTokenSource
    public var client: HTTPClient
    /// Told about every HTTP request: environment, a short outcome label, seconds (for metrics).
    public var observe: (@Sendable (_ environment: String, _ outcome: String, _ seconds: Double) -> Void)?

    public init(productionURL: String, sandboxURL: String, tokens: BearerTokenSource, client: HTTPClient) {
        self.productionURL = productionURL
        self.sandboxURL = sandboxURL
        self.tokens = tokens
        self.client = client
    }

    /// What Apple said about one transaction id.
    public enum Lookup: Sendable, Equatable {
        /// The signed transaction (still to be verified) and the environment that had it.
        case found(signedTransactionInfo: String, environment: String)
        /// Neither environment knows the id.
        case notFound(String)
        /// Apple refused the id itself (e.g. 4000006 invalid transaction id).
        case invalidId(String)
        /// Anything else, classified as for any verification.
        case failed(VerificationOutcome)
    }

    /// One environment's answer.
    enum Answer {
        case found(String)
        case notFound
        case unauthorized
        case failed(VerificationOutcome, answered: Bool)
        case invalidId(String)
    }

    /// Looks the transaction up, production first. `appleAnswered` is false when no answer
    /// came back at all (an outage).
    public func transactionInfo(_ transactionId: String) -> (lookup: Lookup, appleAnswered: Bool) {
        let production = get(transactionId, environment: "Production")
        switch production {
        case let .found(jws): return (.found(signedTransactionInfo: jws, environment: "Production"), true)
        case let .invalidId(message): return (.invalidId(message), true)
        case let .failed(outcome, answered): return (.failed(outcome), answered)
        case .notFound, .unauthorized:
            var productionRefused = false
            if case .unauthorized = production { productionRefused = true }
            let neither = "transaction \(transactionId) is not known to Apple in production or sandbox"
            switch get(transactionId, environment: "Sandbox") {
            case let .found(jws): return (.found(signedTransactionInfo: jws, environment: "Sandbox"), true)
            case let .invalidId(message): return (.invalidId(message), true)
            case let .failed(outcome, answered): return (.failed(outcome), answered)
            case .notFound:
                return (.notFound(productionRefused
                    ? "transaction \(transactionId) is not known to Apple in sandbox (production answered 401: app not yet released?)"
                    : neither), true)
            case .unauthorized:
                guard productionRefused else { return (.notFound(neither), true) }
                return (.failed(.configurationFault(
                    "the App Store Server API answered 401 in production and sandbox: check server_api.issuer_id, key_id, private_key_file and bundle_id")), true)
            }
        }
    }

    private func get(_ transactionId: String, environment: String) -> Answer {
        let started = DispatchTime.now()
        let (answer, label) = exchange(transactionId, environment: environment)
        observe?(environment, label, Double(DispatchTime.now().uptimeNanoseconds - started.uptimeNanoseconds) / 1e9)
        return answer
    }

    private func exchange(_ transactionId: String, environment: String) -> (Answer, String) {
        let name = "\(environment.lowercased()) App Store Server API"
        // Transaction ids are digits; anything else would change the URL's meaning.
        guard !transactionId.isEmpty, transactionId.count <= 64, transactionId.allSatisfy({ $0.isASCII && ($0.isNumber || $0.isLetter) }) else {
            return (.invalidId("'\(transactionId.prefix(64))' is not an Apple transaction id"), "invalid_id")
        }
        let token: String
        do {
            token = try tokens.token()
        } catch {
            return (.failed(.configurationFault("cannot sign the App Store Server API token: \(error)"), answered: false), "token_error")
        }
        let base = environment == "Production" ? productionURL : sandboxURL
        let url = base.hasSuffix("/") ? String(base.dropLast()) : base
        let request = HTTPRequest(method: "GET", url: "\(url)/inApps/v1/transactions/\(transactionId)",
                                  headers: [HTTPHeader("Authorization", "Bearer \(token)"), HTTPHeader("Accept", "application/json")])
        let response: HTTPResponse
        do {
            response = try client.send(request)
        } catch {
            if error.kind == .responseTooLarge {
                return (.failed(.retry("\(name): \(error)"), answered: true), error.kind.rawValue)
            }
            return (.failed(.appleUnavailable("\(name): \(error)", retryAfter: nil), answered: false), error.kind.rawValue)
        }
        let errorCode = (try? JSONValue.parse(response.body))?["errorCode"]?.looseInt64.map { Int($0) }
        switch response.status {
        case 200:
            guard let json = try? JSONValue.parse(response.body), case let .string(jws)? = json["signedTransactionInfo"] else {
                return (.failed(.appleUnavailable("\(name) sent a 200 without signedTransactionInfo (\(response.body.count) bytes)",
                                                  retryAfter: nil), answered: false), "garbage")
            }
            return (.found(jws), "found")
        case 401:
            return (.unauthorized, "http_401")
        case 404 where errorCode == nil || errorCode == 4040010:
            return (.notFound, "not_found")
        case 404 where [4040002, 4040004, 4040006].contains(errorCode):
            return (.failed(.appleUnavailable("\(name): temporary error \(errorCode!)", retryAfter: nil), answered: false), "retryable_\(errorCode!)")
        case 429:
            let retryAfter = RetryAfter.seconds(response.header("Retry-After"), now: Date(timeIntervalSince1970: Double(tokens.time.unixSeconds)))
            return (.failed(.appleUnavailable("\(name) answered HTTP 429 (rate limited)", retryAfter: retryAfter), answered: false), "http_429")
        case 500...599:
            let code = errorCode.map { " (error \($0))" } ?? ""
            return (.failed(.appleUnavailable("\(name) answered HTTP \(response.status)\(code)", retryAfter: nil), answered: false), "http_5xx")
        case 400 where errorCode == 4000006:
            return (.invalidId("\(name): invalid transaction id (4000006)"), "invalid_id")
        default:
            let code = errorCode.map { " (error \($0))" } ?? ""
            return (.failed(.retry("\(name) answered HTTP \(response.status)\(code)"), answered: true), "http_4xx")
        }
    }
}
