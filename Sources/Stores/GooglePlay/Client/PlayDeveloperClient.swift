import Dispatch
import Foundation
import SettleBase
import SettleModel
import SettleConfig

/// The purchases part of the Google Play Developer API (Android Publisher v3) over libcurl.
/// https://developers.google.com/android-publisher/api-ref/rest/v3/purchases
///
/// Every failure is a `PlayAPIError` of one of four kinds. A 401 drops the access token and the
/// call is made once more with a fresh one; a second 401 is a configuration fault. Purchase
/// tokens go into the URL path percent-encoded and never into an error message: errors name the
/// token by its fingerprint.
package struct PlayDeveloperClient: Sendable {
    package static let defaultBaseURL = Configuration.GooglePlayConfiguration.defaultAPIURL

    package var packageName: String
    package var baseURL: String
    package var tokens: GoogleAccessTokenSource
    package var client: HTTPClient
    /// Told about every HTTP exchange: the call (`products.get`, ...), a short outcome label, seconds.
    package var observe: (@Sendable (_ call: String, _ outcome: String, _ seconds: Double) -> Void)?
    /// The process's pacer: every call takes a token from its quota bucket first and reports a
    /// 429 to it. Nil sends unpaced.
    package var pacer: Pacer?

    package init(packageName: String, baseURL: String = PlayDeveloperClient.defaultBaseURL, tokens: GoogleAccessTokenSource,
                client: HTTPClient) {
        self.packageName = packageName
        self.baseURL = baseURL
        self.tokens = tokens
        self.client = client
    }

    /// What a call needs to read, for telling an operator which Play Console permission is missing.
    package enum Permission: String {
        case viewFinancialData = "View financial data, orders, and cancellation survey responses"
        case manageOrders = "Manage orders and subscriptions"
    }

    /// One API call: its name for metrics and messages, and the pieces of its URL.
    package struct Call {
        package var name: String
        package var method: String
        /// Segments after `/applications/{packageName}/`, each encoded on its own.
        package var segments: [String]
        /// Appended to the last segment as is: the `:acknowledge` / `:consume` custom verbs.
        package var verb: String = ""
        package var query: [(String, String)] = []
        package var permission: Permission
        package var token: PurchaseToken?
        /// The Google order id a call is about (the Orders API): a 404 then means Google knows no such order.
        package var orderId: String? = nil
        /// A JSON body (Review Refund); nil sends none.
        package var body: JSONValue? = nil
    }

    package func productPurchase(productId: String, token: PurchaseToken) throws(PlayAPIError) -> ProductPurchase {
        try read(Call(name: "products.get", method: "GET", segments: ["purchases", "products", productId, "tokens", token.value],
                      permission: .viewFinancialData, token: token), as: ProductPurchase.init(json:))
    }

    /// A one-time purchase with the purchase option and offer it was bought under (rentals and
    /// pre-orders included): `purchases.productsv2.getproductpurchasev2`, which needs no product id.
    package func productPurchaseV2(token: PurchaseToken) throws(PlayAPIError) -> ProductPurchaseV2 {
        try read(Call(name: "productsv2.get", method: "GET", segments: ["purchases", "productsv2", "tokens", token.value],
                      permission: .viewFinancialData, token: token), as: ProductPurchaseV2.init(json:))
    }

    package func subscriptionPurchase(token: PurchaseToken) throws(PlayAPIError) -> SubscriptionPurchaseV2 {
        try read(Call(name: "subscriptionsv2.get", method: "GET", segments: ["purchases", "subscriptionsv2", "tokens", token.value],
                      permission: .viewFinancialData, token: token), as: SubscriptionPurchaseV2.init(json:))
    }

    /// One read: the answer as `T`, or garbage when it is not one.
    private func read<T>(_ call: Call, as parse: (JSONValue) -> T?) throws(PlayAPIError) -> T {
        let json = try send(call)
        guard let value = parse(json) else { throw garbage(call) }
        return value
    }

    /// Acknowledges a one-time product (non-consumables): what keeps Google from refunding it after three days.
    package func acknowledgeProduct(productId: String, token: PurchaseToken) throws(PlayAPIError) {
        _ = try send(Call(name: "products.acknowledge", method: "POST", segments: ["purchases", "products", productId, "tokens", token.value],
                          verb: ":acknowledge", permission: .manageOrders, token: token))
    }

    /// Consumes a consumable, which also acknowledges it and lets the customer buy it again.
    package func consumeProduct(productId: String, token: PurchaseToken) throws(PlayAPIError) {
        _ = try send(Call(name: "products.consume", method: "POST", segments: ["purchases", "products", productId, "tokens", token.value],
                          verb: ":consume", permission: .manageOrders, token: token))
    }

    /// `accountId`: the buyer's obfuscated account id in the app, sent as
    /// `externalAccountIds.obfuscatedAccountId` (accepted since 2025-11-19): Google then shows it
    /// on the purchase and its renewals. Nil sends no body.
    /// https://developers.google.com/android-publisher/api-ref/rest/v3/purchases.subscriptions/acknowledge
    package func acknowledgeSubscription(subscriptionId: String, token: PurchaseToken,
                                         accountId: String? = nil) throws(PlayAPIError) {
        let body = accountId.map { id in
            JSONValue.object([("externalAccountIds", .object([("obfuscatedAccountId", .string(id))]))])
        }
        _ = try send(Call(name: "subscriptions.acknowledge", method: "POST",
                          segments: ["purchases", "subscriptions", subscriptionId, "tokens", token.value],
                          verb: ":acknowledge", permission: .manageOrders, token: token, body: body))
    }

    /// One page of voided purchases, one-time products and subscriptions both (`type=1`), each
    /// named by its order id (one period of a subscription), quantity-based partial refunds
    /// included (`voidedQuantity`; Google lists them only when asked).
    /// `startTime` (epoch ms, at most 30 days back) is ignored by Google once `pageToken` is set.
    package func voidedPurchases(startTime: Int64?, pageToken: String?, maxResults: Int? = nil) throws(PlayAPIError) -> VoidedPurchasePage {
        var query: [(String, String)] = [("type", "1"), ("includeQuantityBasedPartialRefund", "true")]
        if let startTime { query.append(("startTime", String(startTime))) }
        if let maxResults { query.append(("maxResults", String(maxResults))) }
        if let pageToken { query.append(("token", pageToken)) }
        let call = Call(name: "voidedpurchases.list", method: "GET", segments: ["purchases", "voidedpurchases"], query: query,
                        permission: .viewFinancialData)
        let json = try send(call)
        guard json.objectMembers != nil else { throw garbage(call) }
        let entries = json["voidedPurchases"]?.arrayValue ?? []
        let purchases = entries.compactMap(VoidedPurchase.init(json:))
        let next = json["tokenPagination"]?["nextPageToken"]?.looseString.flatMap { $0.isEmpty ? nil : $0 }
        return VoidedPurchasePage(purchases: purchases, nextPageToken: next, unreadable: entries.count - purchases.count)
    }

    /// `orders.get`: the order a customer's receipt e-mail names (`GPA.…`), with its purchase token.
    /// https://developers.google.com/android-publisher/api-ref/rest/v3/orders/get
    package func order(_ orderId: String) throws(PlayAPIError) -> PlayOrder {
        let call = Call(name: "orders.get", method: "GET", segments: ["orders", orderId], permission: .viewFinancialData, orderId: orderId)
        let json = try send(call)
        guard let order = PlayOrder(json: json) else { throw garbage(call) }
        return order
    }

    /// `orders.reviewrefund`: the answer to a pending refund review (the body of `PlayRefundReview`).
    /// Google keeps the first answer to a review and answers OK to any later one.
    /// https://developers.google.com/android-publisher/api-ref/rest/v3/orders/reviewrefund
    package func reviewRefund(orderId: String, body: JSONValue) throws(PlayAPIError) {
        _ = try send(Call(name: "orders.reviewrefund", method: "POST", segments: ["orders", orderId], verb: ":reviewrefund",
                          permission: .manageOrders, orderId: orderId, body: body))
    }

    // MARK: - Exchange

    package func url(_ call: Call) -> String {
        let base = baseURL.hasSuffix("/") ? String(baseURL.dropLast()) : baseURL
        let path = (["androidpublisher", "v3", "applications", packageName] + call.segments).map(PlayPath.encode).joined(separator: "/")
        let query = call.query.map { "\(PlayPath.encode($0.0))=\(PlayPath.encode($0.1))" }.joined(separator: "&")
        return "\(base)/\(path)\(call.verb)" + (query.isEmpty ? "" : "?" + query)
    }

    /// Performs `call`, refreshing the access token once on a 401; the JSON of a 2xx (null when empty).
    package func send(_ call: Call) throws(PlayAPIError) -> JSONValue {
        var refreshed = false
        while true {
            let accessToken = try tokens.accessToken()
            let started = DispatchTime.now()
            let result = exchange(call, accessToken: accessToken)
            let label: String
            switch result {
            case .success: label = "ok"
            case .failure(.unauthorized): label = "http_401"
            case let .failure(.failed(error)): label = error.status.map { "http_\($0)" } ?? error.kind.rawValue
            }
            observe?(call.name, label, Double(DispatchTime.now().uptimeNanoseconds - started.uptimeNanoseconds) / 1e9)
            switch result {
            case let .success(json):
                return json
            case .failure(.unauthorized):
                tokens.invalidate(accessToken)
                if !refreshed {
                    refreshed = true
                    continue
                }
                throw PlayAPIError(.configuration,
                                   "the Google Play Developer API refused \(tokens.key)'s access token twice (HTTP 401): check the key is current and the Google Play Android Developer API is enabled in its Google Cloud project",
                                   status: 401)
            case let .failure(.failed(error)):
                throw error.redacting(call.token)
            }
        }
    }

    package enum Failure: Error {
        case unauthorized
        case failed(PlayAPIError)
    }

    private func exchange(_ call: Call, accessToken: String) -> Result<JSONValue, Failure> {
        var headers = [HTTPHeader("Authorization", "Bearer \(accessToken)"), HTTPHeader("Accept", "application/json")]
        if call.body != nil { headers.append(HTTPHeader("Content-Type", "application/json")) }
        let request = HTTPRequest(method: call.method, url: url(call), headers: headers, body: call.body?.data ?? Data())
        let what = call.token.map { "\(call.name) for \($0.fingerprint)" } ?? call.orderId.map { "\(call.name) for order \($0)" } ?? call.name
        let key = PacerKey(store: Store.googlePlay.rawValue, group: PlayRateGroups.group(call: call.name), environment: "production")
        do {
            try pacer?.acquire(key, priority: PlayRateGroups.priority(call: call.name), budget: client.configuration.totalTimeout)
        } catch {
            return .failure(.failed(PlayAPIError(.paced, "\(error) (\(what) not sent)", retryAfter: error.waitSeconds)))
        }
        let response: HTTPResponse
        do {
            response = try client.send(request)
        } catch {
            return .failure(.failed(PlayAPIError(.unavailable, "Google Play Developer API \(what) did not answer: \(error)")))
        }
        var atFloor: Bool?
        if response.status == 429 {
            atFloor = pacer?.throttled(key, retryAfter: RetryAfter.seconds(response.header("Retry-After"), now: tokens.time.now))
        } else {
            pacer?.succeeded(key)
        }
        let json = response.body.isEmpty ? JSONValue.null : (try? JSONValue.parse(response.body))
        if (200...299).contains(response.status) {
            guard let json else { return .failure(.failed(garbage(call))) }
            return .success(json)
        }
        let google = GoogleErrorBody(json)
        let said = google.summary.map { " (\($0))" } ?? ""
        let status = response.status
        func fail(_ kind: PlayAPIError.Kind, _ message: String, retryAfter: Double? = nil) -> Result<JSONValue, Failure> {
            .failure(.failed(PlayAPIError(kind, message, status: status, reason: google.reason, retryAfter: retryAfter)))
        }
        switch status {
        case 401:
            return .failure(.unauthorized)
        case 403:
            return fail(.configuration, "Google Play Developer API \(what) answered HTTP 403\(said): in Play Console, Users and permissions, give \(tokens.key.clientEmail) \"\(call.permission.rawValue)\" for \(packageName)")
        case 404 where google.reason == "applicationNotFound":
            return fail(.configuration, "Google Play knows no app \(packageName) (HTTP 404\(said)): check google_play.package_name")
        case 404 where call.orderId != nil:
            return fail(.purchaseNotFound, "Google Play knows no order \(call.orderId ?? "") (HTTP 404\(said))")
        case 404 where call.token == nil:
            return fail(.configuration, "Google Play Developer API \(what) answered HTTP 404\(said): check google_play.package_name and api_url")
        case 404, 410:
            return fail(.purchaseNotFound, "Google Play does not know or no longer honours \(what) (HTTP \(status)\(said))")
        case 400 where call.token != nil && GoogleErrorBody.tokenReasons.contains(google.reason ?? ""):
            return fail(.purchaseNotFound, "Google Play refused the purchase token of \(what) (HTTP 400\(said))")
        case 429:
            let retryAfter = RetryAfter.seconds(response.header("Retry-After"), now: tokens.time.now)
            // Above the bucket's floor settle was too fast: the bucket was lowered, the work
            // waits. At the floor (or unpaced) Google refuses even a slow settle: Google-wide.
            if atFloor == false, let bucket = pacer?.bucket(key) {
                let wait = retryAfter.map { ", Retry-After \(String(format: "%.1f", $0)) s" } ?? ""
                return fail(.paced, "paced: \(key) at \(Pacer.formatRate(bucket.rate))/s (\(what) answered HTTP 429\(wait); the bucket was lowered)",
                            retryAfter: retryAfter)
            }
            return fail(.unavailable, "Google Play Developer API \(what) answered HTTP 429 (rate limited)", retryAfter: retryAfter)
        case 500...599:
            // A 503 may say when to come back (RFC 9110, 10.2.3): Google's breaker waits that long.
            return fail(.unavailable, "Google Play Developer API \(what) answered HTTP \(status)\(said)",
                        retryAfter: RetryAfter.seconds(response.header("Retry-After"), now: tokens.time.now))
        default:
            return fail(.refused, "Google Play Developer API \(what) answered HTTP \(status)\(said)")
        }
    }

    private func garbage(_ call: Call) -> PlayAPIError {
        let what = call.token.map { "\(call.name) for \($0.fingerprint)" } ?? call.name
        return PlayAPIError(.unavailable, "Google Play Developer API \(what) sent a 2xx that is not the expected answer", status: 200)
    }
}

/// Google's error document: `{"error": {"code", "message", "status", "errors": [{"reason", ...}]}}`.
/// https://cloud.google.com/apis/design/errors
package struct GoogleErrorBody {
    package var reason: String?
    package var message: String?

    /// `errors[].reason` values that mean the purchase token itself is no good.
    package static let tokenReasons: Set<String> = ["purchaseTokenInvalid", "purchaseTokenNotFound", "purchaseTokenNoLongerValid",
                                            "purchaseTokenDoesNotMatchProductId", "purchaseTokenDoesNotMatchSubscriptionId"]

    package init(_ json: JSONValue?) {
        let error = json?["error"]
        reason = error?["errors"]?.arrayValue?.first?["reason"]?.looseString ?? error?["status"]?.looseString
        message = error?["message"]?.looseString
    }

    /// "reason: message", short, for an operator; the caller scrubs it of the token.
    package var summary: String? {
        let text = [reason, message.map { String($0.prefix(200)) }].compactMap { $0 }.joined(separator: ": ")
        return text.isEmpty ? nil : text
    }
}
