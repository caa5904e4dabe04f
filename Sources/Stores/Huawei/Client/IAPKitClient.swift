import Foundation
import SettleBase
import SettleModel

/// HarmonyOS IAP Kit's server API over libcurl: every call a JSON POST with its own bearer JWT
/// (`IAPKitToken`, which digests the exact body), every answer `{responseCode, ...}`.
/// Reference: huawei-appgallery.md sections 1.1, 1.4 and 1.6.
///
/// Whether Huawei answers a business error with HTTP 200 and a non-zero `responseCode` or with a
/// 4xx is not documented (section 4, question 1): both are read, the code first wherever one is given.
package struct IAPKitClient: Sendable {
    package let baseURL: String
    package let token: IAPKitToken
    package let client: HTTPClient
    /// The process's pacer: a call takes a token of its group's bucket first.
    package var pacer: Pacer?
    /// Told of every call's outcome, for metrics: (call, outcome).
    package var observe: (@Sendable (String, String) -> Void)?

    package init(baseURL: String, token: IAPKitToken, client: HTTPClient) {
        self.baseURL = baseURL
        self.token = token
        self.client = client
    }

    /// The paths of the calls settle makes.
    package enum Call: String, Sendable, CaseIterable {
        case orderStatus = "/order/harmony/v1/application/order/status/query"
        case subscriptionStatus = "/subscription/harmony/v1/application/subscription/status/query"
        case orderShipped = "/order/harmony/v1/application/purchase/shipped/confirm"
        case subscriptionShipped = "/subscription/harmony/v1/application/purchase/shipped/confirm"
        case notificationHistory = "/harmony/v1/application/notifications/query"
        case refundResult = "/post-sales/harmony/v1/transactions/refund/result"

        /// How metrics and messages name it.
        package var name: String {
            switch self {
            case .orderStatus: "order_status"
            case .subscriptionStatus: "subscription_status"
            case .orderShipped: "order_shipped_confirm"
            case .subscriptionShipped: "subscription_shipped_confirm"
            case .notificationHistory: "notification_history"
            case .refundResult: "refund_result"
            }
        }

        package var group: String {
            switch self {
            case .orderStatus, .orderShipped: HuaweiRateGroups.orders
            case .subscriptionStatus, .subscriptionShipped: HuaweiRateGroups.subscriptions
            case .notificationHistory: HuaweiRateGroups.notificationHistory
            case .refundResult: HuaweiRateGroups.refundReviews
            }
        }
    }

    /// IAP Kit's result codes settle acts on (section 1.6).
    package enum Code {
        package static let ok = "0"
        package static let notActivated = "1001880005"
        package static let fatal = "1001880006"
        package static let notOwned = "1001880008"
        package static let alreadyConfirmed = "1001880009"
        package static let highRisk = "1001880010"
        package static let accountInvalid = "1001880011"
        package static let recordNotFound = "1001880012"
        package static let subscriptionAlreadyConfirmed = "1001880020"
    }

    /// Why a call gave no usable answer: `notFound` is 1001880012 (no such purchase);
    /// `configuration` HTTP 401, the JWT refused, IAP not activated; `refused` a high-risk
    /// account, not owned and the like; `unavailable` no answer, 5xx, 1001880006, garbage;
    /// `paced` held back by the pacer, or 429 above the bucket's floor; `code` is Huawei's
    /// `responseCode`, when it gave one.
    package typealias Failure = StoreCallFailure

    /// The order status query: the signed `jwsPurchaseOrder`, not yet verified.
    package func orderStatus(purchaseOrderId: String, purchaseToken: String) -> Result<String, Failure> {
        signed(.orderStatus, purchaseOrderId: purchaseOrderId, purchaseToken: purchaseToken, field: "jwsPurchaseOrder")
    }

    /// The subscription status query: the signed `jwsSubGroupStatus`, not yet verified.
    package func subscriptionStatus(purchaseOrderId: String, purchaseToken: String) -> Result<String, Failure> {
        signed(
            .subscriptionStatus, purchaseOrderId: purchaseOrderId, purchaseToken: purchaseToken,
            field: "jwsSubGroupStatus")
    }

    /// Shipped confirm: `confirmed` when Huawei says so now, or that it already was (1001880009,
    /// 1001880020: a confirm that reached Huawei before a crash is not a failure).
    package func confirmShipped(
        subscription: Bool, purchaseOrderId: String, purchaseToken: String
    ) -> Result<String, Failure> {
        let call: Call = subscription ? .subscriptionShipped : .orderShipped
        switch exchange(call, purchaseOrderId: purchaseOrderId, purchaseToken: purchaseToken) {
        case .success:
            return .success("shipped_confirmed")
        case let .failure(failure)
        where failure.code == Code.alreadyConfirmed || failure.code == Code.subscriptionAlreadyConfirmed:
            return .success("already_confirmed")
        case let .failure(failure):
            return .failure(failure)
        }
    }

    private func signed(
        _ call: Call, purchaseOrderId: String, purchaseToken: String, field: String
    ) -> Result<String, Failure> {
        exchange(call, purchaseOrderId: purchaseOrderId, purchaseToken: purchaseToken).flatMap { json in
            guard case let .string(jws)? = json[field], !jws.isEmpty else {
                return .failure(
                    Failure(
                        .unavailable,
                        "Huawei IAP Kit \(call.name) for order \(purchaseOrderId) answered code 0 without \(field)"))
            }
            return .success(jws)
        }
    }

    private func exchange(_ call: Call, purchaseOrderId: String, purchaseToken: String) -> Result<JSONValue, Failure> {
        let body = JSONValue.object([
            ("purchaseOrderId", .string(purchaseOrderId)), ("purchaseToken", .string(purchaseToken)),
        ])
        return exchange(call, body: body, what: "\(call.name) for order \(purchaseOrderId)", priority: .dueOrders)
    }

    /// One page of the notification history (section 1.8): the signed notifications Huawei sent
    /// (or failed to send) in `[startMs, endMs)`, and the token of the next page, if any.
    package func notificationHistory(
        startMs: Int64, endMs: Int64, continuationToken: String?
    )
        -> Result<(notifications: [String], next: String?), Failure>
    {
        var members: [(String, JSONValue)] = [("startTime", .number(startMs)), ("endTime", .number(endMs))]
        if let continuationToken { members.append(("continuationToken", .string(continuationToken))) }
        return exchange(
            .notificationHistory, body: .object(members), what: "notification_history", priority: .historyCatchUp
        ).map { json in
            let records = (json["notificationHistory"]?.arrayValue ?? []).compactMap {
                $0["jwsNotification"]?.looseString
            }
            let next = json["continuationToken"]?.looseString.flatMap { $0.isEmpty ? nil : $0 }
            return (records, next)
        }
    }

    /// Posts a refund review's decision (section 1.9).
    package func refundResult(_ body: JSONValue, batch: String) -> Result<Void, Failure> {
        exchange(.refundResult, body: body, what: "refund_result for batch \(batch)", priority: .refundDeadline).map {
            _ in ()
        }
    }

    private func exchange(
        _ call: Call, body: JSONValue, what: String, priority: PacerPriority
    ) -> Result<JSONValue, Failure> {
        let result = send(call, body: body.data, what: what, priority: priority)
        switch result {
        case .success: observe?(call.name, "ok")
        case let .failure(failure): observe?(call.name, Self.outcome(failure.kind))
        }
        return result
    }

    private static func outcome(_ kind: Failure.Kind) -> String {
        switch kind {
        case .notFound: "not_found"
        case .configuration: "configuration"
        case .refused: "refused"
        case .unavailable: "unavailable"
        case .paced: "paced"
        }
    }

    /// The token is a bearer secret: `what` names the order id, never the token.
    private func send(_ call: Call, body: Data, what: String, priority: PacerPriority) -> Result<JSONValue, Failure> {
        let bearer: String
        do {
            bearer = try token.token(for: body)
        } catch {
            return .failure(
                Failure(
                    .configuration, "cannot sign the Huawei IAP Kit request (huawei.private_key_file): \(error.message)"
                ))
        }
        let key = PacerKey(store: Store.huawei.rawValue, group: call.group, environment: "production")
        do {
            try pacer?.acquire(key, priority: priority, budget: client.configuration.totalTimeout)
        } catch {
            return .failure(Failure(.paced, "\(error) (\(what) not sent)", retryAfter: error.waitSeconds))
        }
        let request = HTTPRequest(
            method: "POST", url: baseURL + call.rawValue,
            headers: [
                HTTPHeader("Content-Type", "application/json;charset=UTF-8"),
                HTTPHeader("Accept", "application/json"), HTTPHeader("Authorization", "Bearer " + bearer),
            ],
            body: body)
        let response: HTTPResponse
        do {
            response = try client.send(request)
        } catch {
            return .failure(Failure(.unavailable, "Huawei IAP Kit \(what) did not answer: \(error)"))
        }
        var atFloor: Bool?
        let retryAfter = RetryAfter.seconds(response.header("Retry-After"), now: token.time.now)
        if response.status == 429 {
            atFloor = pacer?.throttled(key, retryAfter: retryAfter)
        } else {
            pacer?.succeeded(key)
        }
        let json = try? JSONValue.parse(response.body)
        let code = json?["responseCode"]?.looseString
        let said = Self.said(code: code, message: json?["responseMessage"]?.looseString)
        if let code, code != Code.ok {
            return .failure(Self.business(code, what: what, said: said, status: response.status))
        }
        switch response.status {
        case 200...299:
            guard let json, json.objectMembers != nil, code == Code.ok else {
                return .failure(
                    Failure(
                        .unavailable, "Huawei IAP Kit \(what) answered HTTP \(response.status) without a responseCode"))
            }
            return .success(json)
        case 401, 403:
            return .failure(
                Failure(
                    .configuration,
                    "Huawei IAP Kit \(what) answered HTTP \(response.status)\(said): Huawei refused settle's "
                        + "JWT; check huawei.issuer_id, key_id, app_id and private_key_file, and that this host's clock is right"
                ))
        case 429:
            if atFloor == false, let bucket = pacer?.bucket(key) {
                return .failure(
                    Failure(
                        .paced, "paced: \(key) at \(Pacer.formatRate(bucket.rate))/s (\(what) answered HTTP 429)",
                        retryAfter: retryAfter))
            }
            return .failure(
                Failure(.unavailable, "Huawei IAP Kit \(what) answered HTTP 429 (rate limited)", retryAfter: retryAfter)
            )
        case 500...599:
            return .failure(
                Failure(
                    .unavailable, "Huawei IAP Kit \(what) answered HTTP \(response.status)\(said)",
                    retryAfter: retryAfter))
        default:
            return .failure(Failure(.refused, "Huawei IAP Kit \(what) answered HTTP \(response.status)\(said)"))
        }
    }

    /// A non-zero `responseCode`, by what it means (section 1.6); a code settle does not know is
    /// Huawei refusing this purchase, which a person may look at, never a success.
    private static func business(_ code: String, what: String, said: String, status: Int) -> Failure {
        switch code {
        case Code.recordNotFound:
            return Failure(.notFound, "Huawei has no record of \(what)\(said)", code: code)
        case Code.notActivated:
            return Failure(
                .configuration,
                "Huawei IAP Kit \(what)\(said): IAP is not activated for huawei.app_id in AppGallery Connect",
                code: code)
        case Code.fatal:
            return Failure(.unavailable, "Huawei IAP Kit \(what) failed on Huawei's side\(said)", code: code)
        default:
            if status == 401 || code == "9999" || code == "1001880886" {
                return Failure(
                    .configuration,
                    "Huawei IAP Kit \(what)\(said): Huawei refused settle's JWT; check huawei.issuer_id, key_id, "
                        + "app_id and private_key_file, and that this host's clock is right", code: code)
            }
            if status >= 500 {
                return Failure(.unavailable, "Huawei IAP Kit \(what) answered HTTP \(status)\(said)", code: code)
            }
            return Failure(.refused, "Huawei IAP Kit refused \(what)\(said)", code: code)
        }
    }

    /// " (code N: message)", capped and escaped: the message is Huawei's text.
    private static func said(code: String?, message: String?) -> String {
        guard let code else { return "" }
        let text = message.map { ": " + PrintableText.escape(String($0.prefix(200))) } ?? ""
        return " (code \(PrintableText.escape(String(code.prefix(32))))\(text))"
    }
}
