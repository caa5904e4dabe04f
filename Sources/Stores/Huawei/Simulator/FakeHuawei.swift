import Foundation
import Synchronization
import SettleBase
import SettleHuawei

/// A stand-in for HarmonyOS IAP Kit's server API on loopback: the order and subscription status
/// queries and both shipped confirms, each refusing a request whose bearer JWT Huawei would
/// refuse (ES256 with the app's IAP key, `aud` iap-v1, the app's `aid`, at most an hour long, not
/// expired, the digest of the exact body), answering with payloads signed by the simulator's
/// chain (`HuaweiSimulatorChain`). Reference: huawei-appgallery.md sections 1.2 to 1.6.
package final class FakeHuawei: Sendable {
    package let appId: String
    package let time: any TimeSource
    private let publicKey: ES256PublicKey
    private let signer: ES256PrivateKey
    private let x5c: [String]

    /// One subscription: its token, its orders (the last is the current period), its status.
    package struct Subscription: Sendable {
        package var subscriptionId: String
        package var purchaseToken: String
        package var status: String
        package var expiresTimeMs: Int64
        package var orders: [JSONValue]

        package init(
            subscriptionId: String, purchaseToken: String, status: String, expiresTimeMs: Int64, orders: [JSONValue]
        ) {
            (self.subscriptionId, self.purchaseToken, self.status) = (subscriptionId, purchaseToken, status)
            (self.expiresTimeMs, self.orders) = (expiresTimeMs, orders)
        }
    }

    private struct State {
        var orders: [String: JSONValue] = [:]
        var subscriptions: [String: Subscription] = [:]
        var confirmed: [String] = []
        /// Every notification it signed, with when (ms): what the history query answers from.
        var sent: [(jws: String, atMs: Int64)] = []
        /// The refund reviews' decisions it was sent, as posted.
        var refundResults: [JSONValue] = []
        var calls: [String] = []
        /// Answer every query with this HTTP status (a drill: 503), nil to answer normally.
        var failing: Int?
    }

    private let state = Mutex(State())

    /// How a test makes the fake's signed answers untrustworthy, as an attacker between settle and
    /// Huawei would: another chain and key, or a payload changed after it was signed.
    package enum Forgery: Sendable {
        case signer(key: ES256PrivateKey, x5c: [String])
        case tamperedPayload
    }
    private let forgery = Mutex<Forgery?>(nil)

    package func forge(_ forgery: Forgery?) { self.forgery.withLock { $0 = forgery } }

    package init(appId: String, publicKey: ES256PublicKey, time: any TimeSource) throws {
        self.appId = appId
        self.publicKey = publicKey
        self.time = time
        signer = try ES256PrivateKey(pem: HuaweiSimulatorChain.leafKeyPEM)
        x5c = HuaweiSimulatorChain.x5c
    }

    /// A one-time purchase order as Huawei's PurchaseOrderPayload (its `purchaseOrderId` keys it).
    package func script(order: JSONValue) {
        guard let id = order["purchaseOrderId"]?.looseString else { return }
        state.withLock { $0.orders[id] = order }
    }

    package func script(subscription: Subscription) {
        state.withLock { $0.subscriptions[subscription.purchaseToken] = subscription }
    }

    /// Huawei revokes (refunds) an order: its payload then carries `revocationTime`.
    package func revoke(_ purchaseOrderId: String) {
        let now = JSONValue.number(Int64(time.now.timeIntervalSince1970 * 1000))
        state.withLock { s in
            if let order = s.orders[purchaseOrderId] {
                s.orders[purchaseOrderId] = Self.setting(
                    order,
                    [
                        ("revocationTime", now),
                        ("purchaseOrderRevocationReasonCode", .string("1")),
                    ])
            }
        }
    }

    package func fail(with status: Int?) { state.withLock { $0.failing = status } }

    /// The purchase orders confirmed as shipped, in order (a repeat is listed once).
    package var confirmed: [String] { state.withLock { $0.confirmed } }
    /// Every request, as "call purchaseOrderId".
    package var calls: [String] { state.withLock { $0.calls } }

    package func handle(_ request: HTTPServerRequest) -> HTTPServerResponse {
        let path = String(request.pathWithoutQuery)
        guard request.method == "POST", let call = IAPKitClient.Call(rawValue: path) else {
            return Self.answer(404, "1001880012", "no such API")
        }
        if let refusal = checkJWT(request) { return refusal }
        if call == .notificationHistory { return history(request.body) }
        if call == .refundResult { return refundResult(request.body) }
        guard let body = try? JSONValue.parse(request.body), let orderId = body["purchaseOrderId"]?.looseString,
            let token = body["purchaseToken"]?.looseString
        else {
            return Self.answer(400, "1001880001", "purchaseOrderId and purchaseToken are required")
        }
        let failing = state.withLock { s in
            s.calls.append("\(call.name) \(orderId)")
            return s.failing
        }
        if let failing { return Self.answer(failing, "1001880006", "simulated failure") }
        switch call {
        case .orderStatus: return orderStatus(orderId, token)
        case .subscriptionStatus: return subscriptionStatus(orderId, token)
        case .orderShipped, .subscriptionShipped:
            return confirm(orderId, token, subscription: call == .subscriptionShipped)
        case .notificationHistory: return history(request.body)
        case .refundResult: return refundResult(request.body)
        }
    }

    private func orderStatus(_ orderId: String, _ token: String) -> HTTPServerResponse {
        guard let order = state.withLock({ $0.orders[orderId] }), order["purchaseToken"]?.looseString == token else {
            return Self.answer(200, "1001880012", "record not exist")
        }
        return signedAnswer("jwsPurchaseOrder", order)
    }

    private func subscriptionStatus(_ orderId: String, _ token: String) -> HTTPServerResponse {
        guard let subscription = state.withLock({ $0.subscriptions[token] }),
            subscription.orders.contains(where: { $0["purchaseOrderId"]?.looseString == orderId }),
            let last = subscription.orders.last
        else {
            return Self.answer(200, "1001880012", "record not exist")
        }
        let status = JSONValue.object([
            ("subscriptionId", .string(subscription.subscriptionId)),
            ("purchaseToken", .string(subscription.purchaseToken)),
            ("status", .string(subscription.status)), ("expiresTime", .number(subscription.expiresTimeMs)),
            ("lastPurchaseOrder", last), ("recentPurchaseOrderList", .array(subscription.orders)),
        ])
        let group = JSONValue.object([
            ("environment", last["environment"] ?? .string("NORMAL")), ("applicationId", .string(appId)),
            ("subGroupId", last["subGroupId"] ?? .string("group")), ("lastSubscriptionStatus", status),
            ("signedTime", .number(Int64(time.now.timeIntervalSince1970 * 1000))),
        ])
        return signedAnswer("jwsSubGroupStatus", group)
    }

    private func confirm(_ orderId: String, _ token: String, subscription: Bool) -> HTTPServerResponse {
        let known = state.withLock { s -> Bool? in
            let owned =
                subscription
                ? s.subscriptions[token]?.orders.contains { $0["purchaseOrderId"]?.looseString == orderId } ?? false
                : s.orders[orderId]?["purchaseToken"]?.looseString == token
            guard owned else { return nil }
            if s.confirmed.contains(orderId) { return false }
            s.confirmed.append(orderId)
            if !subscription, let order = s.orders[orderId] {
                s.orders[orderId] = Self.setting(order, [("finishStatus", .string("1"))])
            }
            return true
        }
        switch known {
        case nil: return Self.answer(200, "1001880008", "item not owned")
        case false?: return Self.answer(200, subscription ? "1001880020" : "1001880009", "already confirmed")
        case true?: return Self.answer(200, "0", "consume success")
        }
    }

    /// Signs a key-event notification (v3) about a purchase as Huawei would send it, keeps it for
    /// the history query, and returns the request body to POST (`{"jwsNotification": ...}`).
    package func notification(
        type: String, subtype: String? = nil, purchaseOrderId: String?, purchaseToken: String?,
        productType: Int = 0, productId: String? = nil, requestId: String = UUID().uuidString
    ) -> Data {
        let nowMs = Int64(time.now.timeIntervalSince1970 * 1000)
        var meta: [(String, JSONValue)] = [
            ("environment", .string("NORMAL")), ("applicationId", .string(appId)),
            ("packageName", .string("com.example.game")), ("type", .number(productType)),
        ]
        if let productId { meta.append(("currentProductId", .string(productId))) }
        if let purchaseToken { meta.append(("purchaseToken", .string(purchaseToken))) }
        if let purchaseOrderId { meta.append(("purchaseOrderId", .string(purchaseOrderId))) }
        var payload: [(String, JSONValue)] = [("notificationType", .string(type))]
        if let subtype { payload.append(("notificationSubtype", .string(subtype))) }
        payload += [
            ("notificationRequestId", .string(requestId)), ("notificationMetaData", .object(meta)),
            ("notificationVersion", .string("v3")), ("signedTime", .number(nowMs)),
        ]
        let jws = sign(.object(payload)) ?? ""
        state.withLock { $0.sent.append((jws, nowMs)) }
        return JSONValue.object([("jwsNotification", .string(jws))]).data
    }

    /// The refund reviews' decisions it was sent.
    package var refundResults: [JSONValue] { state.withLock { $0.refundResults } }

    private func refundResult(_ data: Data) -> HTTPServerResponse {
        guard let body = try? JSONValue.parse(data), body["refundBatchNo"]?.looseString != nil,
            let type = body["reviewType"]?.looseInt64, type == 1 || type == 2,
            body["reviewResultList"]?.arrayValue != nil,
            type == 1 || !(body["remark"]?.looseString ?? "").isEmpty
        else {
            return Self.answer(
                400, "1001880001",
                "refundBatchNo, reviewType 1 or 2, reviewResultList (and a remark to reject) are required")
        }
        let failing = state.withLock { s in
            s.calls.append("refund_result \(body["refundBatchNo"]?.looseString ?? "")")
            if s.failing == nil { s.refundResults.append(body) }
            return s.failing
        }
        if let failing { return Self.answer(failing, "1001880006", "simulated failure") }
        return Self.answer(200, "0", "success")
    }

    /// Signs a refund review request (`REFUND_REQUEST`) for these purchase orders, amounts in fen.
    package func refundRequest(
        batch: String, orders: [(purchaseOrderId: String, payAmount: Int64)],
        requestId: String = UUID().uuidString
    ) -> Data {
        let nowMs = Int64(time.now.timeIntervalSince1970 * 1000)
        let data = JSONValue.object([
            ("refundReason", .string("UNINTENDED_PURCHASE")),
            ("applyAmount", .number(orders.reduce(Int64(0)) { $0 + $1.payAmount })),
            ("applyType", .number(1)), ("refundBatchNo", .string(batch)), ("currency", .string("CNY")),
            (
                "refundOrders",
                .array(
                    orders.map {
                        .object([
                            ("purchaseOrderId", .string($0.purchaseOrderId)),
                            ("purchaseToken", .string("tok")), ("payAmount", .number($0.payAmount)),
                        ])
                    })
            ),
        ])
        let payload = JSONValue.object([
            ("notificationType", .string("REFUND_REQUEST")), ("notificationRequestId", .string(requestId)),
            (
                "notificationMetaData",
                .object([
                    ("environment", .string("NORMAL")), ("applicationId", .string(appId)),
                    ("packageName", .string("com.example.game")), ("refundRequestData", data),
                ])
            ),
            ("notificationVersion", .string("v3")), ("signedTime", .number(nowMs)),
        ])
        let jws = sign(payload) ?? ""
        state.withLock { $0.sent.append((jws, nowMs)) }
        return JSONValue.object([("jwsNotification", .string(jws))]).data
    }

    /// The history query (section 1.8): what was signed in `[startTime, endTime)`, two a page.
    private func history(_ data: Data) -> HTTPServerResponse {
        guard let body = try? JSONValue.parse(data), let start = body["startTime"]?.looseInt64,
            let end = body["endTime"]?.looseInt64,
            end > start
        else {
            return Self.answer(400, "1001880001", "startTime and endTime are required, endTime after startTime")
        }
        let offset = body["continuationToken"]?.looseString.flatMap { Int($0) } ?? 0
        let (all, failing) = state.withLock { s in
            s.calls.append("notification_history \(start)-\(end)")
            return (s.sent.filter { $0.atMs >= start && $0.atMs < end }.map(\.jws), s.failing)
        }
        if let failing { return Self.answer(failing, "1001880006", "simulated failure") }
        let page = all.dropFirst(offset).prefix(2)
        var members: [(String, JSONValue)] = [
            ("responseCode", .string("0")),
            (
                "notificationHistory",
                .array(page.map { .object([("jwsNotification", .string($0)), ("sendResult", .number(0))]) })
            ),
        ]
        if offset + page.count < all.count {
            members.append(("continuationToken", .string(String(offset + page.count))))
        }
        return .json(200, JSONValue.object(members).data)
    }

    /// Huawei's checks of the bearer JWT (section 1.2); a refusal is HTTP 401, as the demo expects.
    private func checkJWT(_ request: HTTPServerRequest) -> HTTPServerResponse? {
        let refuse = Self.answer(401, "1001880886", "JWT verification failed!")
        guard let authorization = request.header("Authorization"), authorization.hasPrefix("Bearer ") else {
            return refuse
        }
        let token = authorization.dropFirst("Bearer ".count)
        let parts = token.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3, let headerData = Base64URL.decode(parts[0]),
            let claimsData = Base64URL.decode(parts[1]),
            let signature = Base64URL.decode(parts[2]), let header = try? JSONValue.parse(headerData),
            let claims = try? JSONValue.parse(claimsData), header["alg"] == .string("ES256"),
            ES256.verify(signature: signature, message: Data("\(parts[0]).\(parts[1])".utf8), publicKey: publicKey)
        else { return refuse }
        let now = time.unixSeconds
        guard claims["aud"] == .string(IAPKitToken.audience), claims["aid"]?.looseString == appId,
            let iat = claims["iat"]?.looseInt64, let exp = claims["exp"]?.looseInt64, exp > iat, exp - iat <= 3600,
            now <= exp,
            claims["digest"]?.looseString == SHA256.hex(request.body)
        else { return refuse }
        return nil
    }

    private func signedAnswer(_ field: String, _ payload: JSONValue) -> HTTPServerResponse {
        guard let jws = sign(payload) else { return Self.answer(500, "1001880006", "cannot sign") }
        return .json(
            200,
            JSONValue.object([
                ("responseCode", .string("0")), ("responseMessage", .string("success")), (field, .string(jws)),
            ]).data)
    }

    /// `payload` as a compact JWS under the simulator's chain (or the forgery a test set).
    private func sign(_ payload: JSONValue) -> String? {
        var (key, chain) = (signer, x5c)
        let forgery = self.forgery.withLock { $0 }
        if case let .signer(other, otherChain)? = forgery { (key, chain) = (other, otherChain) }
        let header = JSONValue.object([
            ("alg", .string("ES256")), ("typ", .string("JWT")), ("x5c", .array(chain.map(JSONValue.string))),
        ])
        guard var jws = try? CompactJWS.sign(header: header, payload: payload, key: key) else { return nil }
        if case .tamperedPayload? = forgery {
            // A hundred times the goods, under the signature of the original.
            let parts = jws.split(separator: ".")
            let changed = Self.setting(payload, [("quantity", .number(100))])
            jws = "\(parts[0]).\(Base64URL.encode(changed.data)).\(parts[2])"
        }
        return jws
    }

    private static func answer(_ status: Int, _ code: String, _ message: String) -> HTTPServerResponse {
        .json(status, JSONValue.object([("responseCode", .string(code)), ("responseMessage", .string(message))]).data)
    }

    /// `object` with `changes` set (replacing members of the same name).
    package static func setting(_ object: JSONValue, _ changes: [(String, JSONValue)]) -> JSONValue {
        var members = (object.objectMembers ?? []).filter { member in !changes.contains { $0.0 == member.0 } }
        members += changes
        return .object(members)
    }
}
