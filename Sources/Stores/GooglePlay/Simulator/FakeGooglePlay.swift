import Foundation
import Synchronization
import SettleBase
import SettleGooglePlay
import SettleSimulator

/// A local stand-in for Google on loopback, for tests and (later) `settle simulator`/`demo`:
/// the OAuth token endpoint (`POST /token`) and the purchases calls of the Google Play Developer
/// API under `/androidpublisher/v3/applications/{packageName}/purchases/`, over scripted
/// purchases and failures. It also signs Pub/Sub push tokens with a key of its own
/// (`FakeGooglePlay+Push.swift`).
///
/// It is a request-to-response handler, `handle(_:)`, that knows nothing of the server it is
/// mounted on: `LoopbackHTTPServer { fake.handle($0) }` today, any other server later.
/// The token endpoint checks each assertion's RS256 signature against the service account's
/// public key and its claims; the API answers 401 to any access token it did not issue.
package final class FakeGooglePlay: Sendable {
    /// One API request as the fake saw it (the full path, token included: this is the test's view).
    package struct Call: Sendable, Equatable {
        package var method: String
        package var path: String
        package var authorization: String?
    }

    /// What the next API request gets instead of its normal answer.
    package enum Failure: Sendable, Equatable {
        /// An HTTP status with Google's error document; `reason` goes into `errors[0].reason`.
        case status(Int, reason: String? = nil, retryAfter: String? = nil)
        /// A 200 whose body is not JSON.
        case garbage
        /// The answer comes `seconds` late: on a `ManualTimeSource` the fake moves the clock on
        /// (a test never sleeps), on a real clock it waits; then `then`, or the normal answer.
        indirect case slow(Double, then: Failure? = nil)
    }

    package let packageName: String
    package let serviceAccountEmail: String
    package let serviceAccountKeys: JSONWebKeySet
    package let pushKey: RSAPrivateKey
    package let pushKeyId: String
    package let time: any TimeSource
    package let state = Mutex(State())
    /// Holds every API answer while the test says so (a slow Google, for as long as it needs).
    package let hold = SimulatedHold()
    /// The quota each Play Developer API bucket enforces, nil for none (`limit(_:)`).
    package let rateLimit = Mutex<SimulatedRateLimit?>(nil)

    package struct State {
        package var products: [String: ProductPurchase] = [:]
        package var subscriptions: [String: SubscriptionPurchaseV2] = [:]
        package var voided: [VoidedPurchase] = []
        /// What productsv2 adds to a scripted one-time purchase, by token: its purchase option, and whether it is a rental.
        package var purchaseOptions: [String: (option: String, rental: Bool)] = [:]
        /// Orders API: by Google order id (`FakeGooglePlay+Orders.swift`).
        package var orders: [String: PlayOrder] = [:]
        /// Review Refund answers as received, by order id, in order (the first is the one Google keeps).
        package var refundReviews: [String: [JSONValue]] = [:]
        /// Subscription acknowledge bodies as received, by token, in order (`FakeGooglePlay+Acknowledge.swift`).
        package var acknowledgeBodies: [String: [JSONValue]] = [:]
        /// Answers 400 to an acknowledge carrying `externalAccountIds` (as for an id Google takes for personal data).
        package var refusesAccountIds = false
        package var voidedPageSize = 2
        package var apiFailures: [Failure] = []
        package var tokenFailures: [Failure] = []
        package var issuedAccessTokens: Set<String> = []
        package var accessTokenLifetime: Int64 = 3600
        package var tokenURL: String?
        package var calls: [Call] = []
        package var tokenRequests = 0
        package var refusedAssertions: [String] = []
        package var acceptedAssertions: [RS256JWT.Verified] = []
        /// Keys published at `/oauth2/v3/certs` besides the push key, as after a rotation.
        package var rotatedPushKeys: [(id: String, key: RSAPublicKey)] = []
        package var certsCacheControl = "public, max-age=19923, must-revalidate, no-transform"
        package var certsFailures: [Failure] = []
        package var certsRequests = 0
    }

    /// `serviceAccount` is the key settle holds: the fake keeps only its public half and names.
    package init(packageName: String, serviceAccount: ServiceAccountKey, pushKey: RSAPrivateKey, pushKeyId: String = "fake-push-key",
                time: any TimeSource) {
        self.packageName = packageName
        serviceAccountEmail = serviceAccount.clientEmail
        serviceAccountKeys = JSONWebKeySet(keys: [serviceAccount.privateKeyId: serviceAccount.privateKey.publicKey])
        self.pushKey = pushKey
        self.pushKeyId = pushKeyId
        self.time = time
    }

    // MARK: Scripting

    package func script(product token: String, _ purchase: ProductPurchase) { state.withLock { $0.products[token] = purchase } }
    /// The purchase option a scripted one-time purchase was bought under, as productsv2 shows it.
    package func script(purchaseOption option: String, rental: Bool = false, for token: String) {
        state.withLock { $0.purchaseOptions[token] = (option, rental) }
    }
    package func script(subscription token: String, _ purchase: SubscriptionPurchaseV2) { state.withLock { $0.subscriptions[token] = purchase } }
    package func script(voided: [VoidedPurchase], pageSize: Int = 2) {
        state.withLock { $0.voided = voided; $0.voidedPageSize = max(1, pageSize) }
    }
    /// Answers for the next API requests, one each, in order.
    package func failNextAPICalls(_ failures: Failure...) { state.withLock { $0.apiFailures += failures } }
    package func failNextTokenRequests(_ failures: Failure...) { state.withLock { $0.tokenFailures += failures } }
    /// Forgets every access token issued so far, as if they expired: the next API call gets a 401.
    package func revokeAccessTokens() { state.withLock { $0.issuedAccessTokens.removeAll() } }
    /// The URL the assertions' `aud` must name; until set, any URL whose path is `/token`.
    package func expectTokenURL(_ url: String) { state.withLock { $0.tokenURL = url } }

    package func product(_ token: String) -> ProductPurchase? { state.withLock { $0.products[token] } }
    package func subscription(_ token: String) -> SubscriptionPurchaseV2? { state.withLock { $0.subscriptions[token] } }
    package var calls: [Call] { state.withLock { $0.calls } }
    package var tokenRequests: Int { state.withLock { $0.tokenRequests } }
    /// Why assertions were refused, in order (empty when all were good).
    package var refusedAssertions: [String] { state.withLock { $0.refusedAssertions } }
    /// The header and claims of every assertion that got an access token.
    package var acceptedAssertions: [RS256JWT.Verified] { state.withLock { $0.acceptedAssertions } }

    // MARK: Handling

    /// Enforces `limit` on the API's quota buckets from now on (issue 27's benchmark); its
    /// counts are served at `GET /simulator/rate_limits`.
    package func limit(_ limit: SimulatedRateLimit) { rateLimit.withLock { $0 = limit } }

    package func handle(_ request: HTTPServerRequest) -> HTTPServerResponse {
        if request.path == "/token" { return tokenEndpoint(request) }
        if request.method == "GET", request.path == SimulatedRateLimit.countsPath, let limit = rateLimit.withLock({ $0 }) {
            return .json(200, limit.json.data)
        }
        if request.path == Self.certsPath { return certs() }
        let prefix = "/androidpublisher/v3/applications/\(packageName)/purchases/"
        let ordersPrefix = "/androidpublisher/v3/applications/\(packageName)/orders/"
        guard request.path.hasPrefix(prefix) || request.path.hasPrefix(ordersPrefix) else {
            return Self.error(404, reason: "applicationNotFound", "No application was found.")
        }
        if let limit = rateLimit.withLock({ $0 }),
           let group = SimulatedRateLimit.googleGroup(path: request.path, packageName: packageName),
           let refusal = SimulatedRateLimit.googleRefusal(limit.admit(group), group: group) {
            return refusal
        }
        let (failure, known): (Failure?, Bool) = state.withLock { s in
            s.calls.append(Call(method: request.method, path: request.path, authorization: request.header("Authorization")))
            let bearer = request.header("Authorization").flatMap { $0.hasPrefix("Bearer ") ? String($0.dropFirst(7)) : nil }
            return (s.apiFailures.isEmpty ? nil : s.apiFailures.removeFirst(), bearer.map(s.issuedAccessTokens.contains) ?? false)
        }
        hold.pass()
        if let failure = late(failure) { return Self.respond(failure) }
        guard known else { return Self.error(401, reason: "authError", "Invalid Credentials") }
        if request.path.hasPrefix(ordersPrefix) { return orders(request, rest: String(request.path.dropFirst(ordersPrefix.count))) }
        let rest = String(request.path.dropFirst(prefix.count))
        let (route, query) = rest.firstIndex(of: "?").map { (String(rest[..<$0]), String(rest[rest.index(after: $0)...])) } ?? (rest, "")
        let segments = route.split(separator: "/", omittingEmptySubsequences: false)
        return purchases(request.method, segments: segments, query: query, body: request.body)
    }

    private func purchases(_ method: String, segments raw: [Substring], query: String,
                           body: Data) -> HTTPServerResponse {
        // The custom verb's colon is literal; one inside an id arrives encoded as %3A.
        var segments = raw
        var verb = ""
        if let last = segments.last, let colon = last.lastIndex(of: ":") {
            verb = String(last[last.index(after: colon)...])
            segments[segments.count - 1] = last[..<colon]
        }
        let parts = segments.compactMap { PlayPath.decode($0) }
        guard parts.count == segments.count else { return Self.error(400, reason: "invalid", "Invalid Value") }
        switch (method, parts.count, parts.first) {
        case ("GET", 1, "voidedpurchases"):
            return voidedPage(query)
        case (_, 4, "products") where parts[2] == "tokens", (_, 4, "subscriptions") where parts[2] == "tokens",
             (_, 3, "subscriptionsv2") where parts[1] == "tokens", ("GET", 3, "productsv2") where parts[1] == "tokens":
            break
        default:
            return Self.error(404, reason: "notFound", "Not Found")
        }
        let token = parts[parts.count - 1]
        return state.withLock { s -> HTTPServerResponse in
            switch (method, parts[0], verb) {
            case ("GET", "products", ""):
                guard let p = s.products[token], p.productId ?? parts[1] == parts[1] else { return Self.tokenInvalid }
                return .json(200, p.json.data)
            case ("POST", "products", "acknowledge"):
                guard s.products[token] != nil else { return Self.tokenInvalid }
                s.products[token]!.rawAcknowledgementState = 1
                return HTTPServerResponse(status: 200)
            case ("POST", "products", "consume"):
                guard let p = s.products[token] else { return Self.tokenInvalid }
                guard p.consumptionState != .consumed else { return Self.error(400, reason: "productNotOwnedByUser", "The product is not owned by the user.") }
                s.products[token]!.rawConsumptionState = 1
                s.products[token]!.rawAcknowledgementState = 1
                return HTTPServerResponse(status: 200)
            case ("GET", "productsv2", ""):
                guard let p = s.products[token] else { return Self.tokenInvalid }
                let option = s.purchaseOptions[token]
                return .json(200, ProductPurchaseV2(p, productId: p.productId ?? "", purchaseOptionId: option?.option,
                                                    rental: option?.rental ?? false).json.data)
            case ("GET", "subscriptionsv2", ""):
                guard let p = s.subscriptions[token] else { return Self.tokenInvalid }
                return .json(200, p.json.data)
            case ("POST", "subscriptions", "acknowledge"):
                guard s.subscriptions[token]?.lineItems.contains(where: { $0.productId == parts[1] }) == true else { return Self.tokenInvalid }
                return Self.acknowledgeSubscription(&s, token: token, body: body)
            default:
                return Self.error(404, reason: "notFound", "Not Found")
            }
        }
    }

    private func voidedPage(_ query: String) -> HTTPServerResponse {
        let fields = Self.form(query)
        return state.withLock { s in
            let start = fields["token"].flatMap { $0.hasPrefix("page-") ? Int($0.dropFirst(5)) : nil } ?? 0
            let since = fields["token"] == nil ? fields["startTime"].flatMap { Int64($0) } ?? 0 : 0
            // As Google: quantity-based partial refunds are listed only to a caller that asks for them.
            let partial = fields["includeQuantityBasedPartialRefund"] == "true"
            let matching = s.voided.filter { ($0.voidedTimeMillis ?? 0) >= since && (partial || $0.voidedQuantity == nil) }
            let page = Array(matching.dropFirst(start).prefix(s.voidedPageSize))
            var members: [(String, JSONValue)] = [("voidedPurchases", .array(page.map(\.json)))]
            if start + page.count < matching.count {
                members.insert(("tokenPagination", .object([("nextPageToken", .string("page-\(start + page.count)"))])), at: 0)
            }
            return .json(200, JSONValue.object(members).data)
        }
    }

    // MARK: Answers

    package static let tokenInvalid = error(400, reason: "purchaseTokenInvalid", "The purchase token is invalid.")

    package static func error(_ status: Int, reason: String?, _ message: String, headers: [HTTPHeader] = []) -> HTTPServerResponse {
        var error: [(String, JSONValue)] = [("code", .number(status)), ("message", .string(message))]
        if let reason { error.append(("errors", .array([.object([("message", .string(message)), ("domain", .string("androidpublisher")),
                                                                 ("reason", .string(reason))])]))) }
        return HTTPServerResponse(status: status, headers: [HTTPHeader("Content-Type", "application/json")] + headers,
                                  body: JSONValue.object([("error", .object(error))]).data)
    }

    /// A `slow` failure's time taken (the test clock moved on, a real one waited out), and what
    /// is left of it: the failure to answer with, nil for the normal answer.
    package func late(_ failure: Failure?) -> Failure? {
        guard case let .slow(seconds, then)? = failure else { return failure }
        if let manual = time as? ManualTimeSource {
            manual.advance(by: seconds)
        } else {
            Thread.sleep(forTimeInterval: seconds)
        }
        return late(then)
    }

    package static func respond(_ failure: Failure) -> HTTPServerResponse {
        switch failure {
        case let .slow(_, then):
            // Only reached without `late`: the time is not taken, the answer is what follows it.
            return respond(then ?? .status(500, reason: "backendError"))
        case let .status(status, reason, retryAfter):
            return error(status, reason: reason, "scripted failure", headers: retryAfter.map { [HTTPHeader("Retry-After", $0)] } ?? [])
        case .garbage:
            return HTTPServerResponse(status: 200, headers: [HTTPHeader("Content-Type", "text/html")], body: Data("<html>oops".utf8))
        }
    }

    /// `a=1&b=2` with percent-escapes decoded (`+` as a space, as forms send it).
    package static func form(_ text: String) -> [String: String] {
        var fields: [String: String] = [:]
        for pair in text.split(separator: "&") {
            let kv = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            guard let key = PlayPath.decode(kv[0]) else { continue }
            fields[key] = kv.count == 2 ? PlayPath.decode(Substring(kv[1].replacingOccurrences(of: "+", with: " "))) : ""
        }
        return fields
    }
}
