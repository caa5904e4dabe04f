import Foundation
import Synchronization
import SettleBase
import SettleModel
import SettleConfig

/// HMS IAP's server API (Android AppGallery, huawei-appgallery.md section 2): an app-level
/// access token by OAuth client credentials, cached and renewed before it ends (Huawei allows
/// 1,000 token requests in 5 minutes), then `tokens/verify`, `v2/purchases/confirm` and
/// `v2/purchases/cancelledList` on the order service of the purchase's site (an AppTouch
/// account's, `accountFlag` 1, is its own), authorized `Basic base64("APPAT:" + token)`.
package final class HMSClient: Sendable {
    package let appId: String
    package let settings: Configuration.HuaweiConfiguration.HMS
    package let http: HTTPClient
    package let time: any TimeSource
    private let secret: Secret
    private let cached = Mutex<(token: String, renewAt: Int64)?>(nil)
    package let publicKey: RSAPublicKey
    /// Told of every call's outcome, for metrics: (call, outcome).
    private let observe: (@Sendable (String, String) -> Void)?

    /// A token this close to its end is replaced, so none expires in flight.
    static let renewBeforeSeconds: Int64 = 300

    package typealias Failure = IAPKitClient.Failure

    package init(
        _ appId: String, _ settings: Configuration.HuaweiConfiguration.HMS, http: HTTPClient, time: any TimeSource,
        observe: (@Sendable (String, String) -> Void)? = nil
    ) throws(ConfigError) {
        (self.appId, self.settings, self.http, self.time, self.observe) = (appId, settings, http, time, observe)
        secret = try settings.clientSecretFile.read()
        publicKey = try settings.loadPublicKey()
    }

    /// The order service's root for an account flag.
    package func orderRoot(accountFlag: Int?) -> String {
        accountFlag == 1 ? settings.appTouchOrderURL : settings.orderURL
    }

    /// `tokens/verify`: the signed purchase data Huawei holds for the token (not yet verified).
    package func verifyToken(
        _ proof: HMSProof
    ) -> Result<(data: String, signature: String, algorithm: String?), Failure> {
        post(
            orderRoot(accountFlag: proof.accountFlag) + "/applications/purchases/tokens/verify",
            body: .object([("purchaseToken", .string(proof.purchaseToken)), ("productId", .string(proof.productId))]),
            what: "tokens/verify for product \(proof.productId)"
        ).flatMap { json in
            guard case let .string(data)? = json["purchaseTokenData"],
                case let .string(signature)? = json["dataSignature"]
            else {
                return .failure(
                    Failure(
                        .unavailable, "HMS tokens/verify answered code 0 without purchaseTokenData and dataSignature"))
            }
            return .success((data, signature, json["signatureAlgorithm"]?.looseString))
        }
    }

    /// `sub/applications/v2/purchases/get`: a subscription's signed purchase data (section 2.8).
    package func subscription(
        _ proof: HMSProof, subscriptionId: String
    ) -> Result<(data: String, signature: String, algorithm: String?), Failure> {
        let root = proof.accountFlag == 1 ? settings.appTouchSubscriptionURL : settings.subscriptionURL
        return post(
            root + "/sub/applications/v2/purchases/get",
            body: .object([
                ("subscriptionId", .string(subscriptionId)), ("purchaseToken", .string(proof.purchaseToken)),
            ]),
            what: "purchases/get for subscription \(subscriptionId)"
        ).flatMap { json in
            guard case let .string(data)? = json["inappPurchaseData"],
                case let .string(signature)? = json["dataSignature"]
            else {
                return .failure(
                    Failure(
                        .unavailable, "HMS purchases/get answered code 0 without inappPurchaseData and dataSignature"))
            }
            return .success((data, signature, json["signatureAlgorithm"]?.looseString))
        }
    }

    /// `v2/purchases/confirm`: delivered; code 9 (already confirmed) is done too.
    package func confirm(_ proof: HMSProof) -> Result<String, Failure> {
        let result = post(
            orderRoot(accountFlag: proof.accountFlag) + "/applications/v2/purchases/confirm",
            body: .object([("purchaseToken", .string(proof.purchaseToken)), ("productId", .string(proof.productId))]),
            what: "confirm for order \(proof.orderId ?? "of product " + proof.productId)")
        switch result {
        case .success: return .success("confirmed")
        case let .failure(failure) where failure.code == "9": return .success("already_confirmed")
        case let .failure(failure): return .failure(failure)
        }
    }

    /// One page of `v2/purchases/cancelledList` (both sites settle knows of are read by the
    /// caller): cancelled and refunded purchases, subscriptions included, in `[startMs, endMs]`.
    package func cancelled(
        root: String, startMs: Int64, endMs: Int64, continuationToken: String?
    )
        -> Result<(purchases: [HMSCancelledPurchase], next: String?), Failure>
    {
        var members: [(String, JSONValue)] = [
            ("startAt", .number(startMs)), ("endAt", .number(endMs)), ("maxRows", .number(1000)),
            ("type", .number(1)),
        ]
        if let continuationToken { members.append(("continuationToken", .string(continuationToken))) }
        return post(root + "/applications/v2/purchases/cancelledList", body: .object(members), what: "cancelledList")
            .flatMap { json in
                // The list is a JSON string inside the answer.
                let listed =
                    json["cancelledPurchaseList"]?.looseString.flatMap { try? JSONValue.parse($0) }?.arrayValue ?? []
                let purchases = listed.compactMap { entry -> HMSCancelledPurchase? in
                    guard let orderId = entry["orderId"]?.looseString, !orderId.isEmpty else { return nil }
                    return HMSCancelledPurchase(
                        orderId: orderId, purchaseToken: entry["purchaseToken"]?.looseString,
                        cancelledTimeMs: entry["cancelledTime"]?.looseInt64,
                        source: entry["cancelledSource"]?.looseString.flatMap { Int($0) },
                        reason: entry["cancelledReason"]?.looseString.flatMap { Int($0) })
                }
                return .success((purchases, json["continuationToken"]?.looseString.flatMap { $0.isEmpty ? nil : $0 }))
            }
    }

    // MARK: - The exchange

    private func post(_ url: String, body: JSONValue, what: String) -> Result<JSONValue, Failure> {
        let result = send(url, body: body, what: what)
        let call = "hms_" + url.split(separator: "/").suffix(2).joined(separator: "_")
        switch result {
        case .success: observe?(call, "ok")
        case let .failure(failure):
            observe?(call, "\(failure.kind)".replacingOccurrences(of: "notFound", with: "not_found"))
        }
        return result
    }

    private func send(_ url: String, body: JSONValue, what: String) -> Result<JSONValue, Failure> {
        var refreshed = false
        while true {
            let token: String
            switch accessToken() {
            case let .success(value): token = value
            case let .failure(failure): return .failure(failure)
            }
            let authorization = "Basic " + Data("APPAT:\(token)".utf8).base64EncodedString()
            let request = HTTPRequest(
                method: "POST", url: url,
                headers: [
                    HTTPHeader("Content-Type", "application/json;charset=UTF-8"),
                    HTTPHeader("Authorization", authorization),
                ], body: body.data)
            let response: HTTPResponse
            do {
                response = try http.send(request)
            } catch {
                return .failure(Failure(.unavailable, "HMS \(what) did not answer: \(error)"))
            }
            if response.status == 401 && !refreshed {
                // The token may have been revoked early: one fresh one, then it is settle's setup.
                cached.withLock { $0 = nil }
                refreshed = true
                continue
            }
            let json = try? JSONValue.parse(response.body)
            let code = json?["responseCode"]?.looseString.map { $0.trimmingCharacters(in: .whitespaces) }
            let said =
                code.map {
                    " (code \(PrintableText.escape(String($0.prefix(16))))"
                        + (json?["responseMessage"]?.looseString.map {
                            ": " + PrintableText.escape(String($0.prefix(200)))
                        } ?? "") + ")"
                } ?? ""
            let retryAfter = RetryAfter.seconds(response.header("Retry-After"), now: time.now)
            switch (response.status, code) {
            case (200...299, "0"?):
                guard let json else { return .failure(Failure(.unavailable, "HMS \(what) answered garbage")) }
                return .success(json)
            case (401, _), (403, _):
                return .failure(
                    Failure(
                        .configuration,
                        "HMS \(what) answered HTTP \(response.status)\(said): Huawei refused the app's "
                            + "access token; check huawei.app_id and huawei.hms.client_secret_file"))
            case (429, _), (500...599, _), (_, "6"?):
                return .failure(
                    Failure(
                        .unavailable, "HMS \(what) answered HTTP \(response.status)\(said)", code: code,
                        retryAfter: retryAfter))
            case (_, "12"?):
                return .failure(
                    Failure(
                        .notFound,
                        "Huawei has no such purchase, or not as the latest of its product, for \(what)\(said)",
                        code: code))
            case (_, "5"?):
                return .failure(
                    Failure(
                        .refused,
                        "HMS refused \(what) as invalid\(said): check the purchase and the app's IAP settings",
                        code: code))
            case (_, _?):
                return .failure(Failure(.refused, "HMS refused \(what)\(said)", code: code))
            case (_, nil):
                return .failure(
                    Failure(.unavailable, "HMS \(what) answered HTTP \(response.status) without a responseCode"))
            }
        }
    }

    /// The app-level access token: cached until shortly before it ends.
    private func accessToken() -> Result<String, Failure> {
        let now = time.unixSeconds
        if let cached = cached.withLock({ $0 }), now < cached.renewAt { return .success(cached.token) }
        let token: String, lifetime: Int64
        switch ClientCredentials.exchange(url: settings.tokenURL, clientId: appId, secret: secret.value, http: http) {
        case let .success(answer): (token, lifetime) = answer
        case let .failure(.refused(status)):
            return .failure(
                Failure(
                    .configuration,
                    "the HMS token endpoint refused the app's client credentials (HTTP \(status)): "
                        + "check huawei.app_id and huawei.hms.client_secret_file"))
        case let .failure(.unavailable(why)):
            return .failure(Failure(.unavailable, "the HMS token endpoint \(why)"))
        }
        cached.withLock { $0 = (token, now + max(30, lifetime - Self.renewBeforeSeconds)) }
        return .success(token)
    }
}
