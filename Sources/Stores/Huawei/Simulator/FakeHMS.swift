import Foundation
import Synchronization
import SettleBase
import SettleHuawei

/// A stand-in for HMS IAP's server API (huawei-appgallery.md section 2) on loopback: the OAuth
/// token endpoint (client credentials of one app), and under any site root `tokens/verify`,
/// `v2/purchases/confirm` and `v2/purchases/cancelledList`, refusing a request without the
/// `Basic APPAT:` token it issued. Purchase data is signed with the app's RSA IAP key, as Huawei
/// signs it (PKCS#1 v1.5, or PSS when asked by `HW-IAP-APPINFO`).
package final class FakeHMS: Sendable {
    package let appId: String
    package let key: RSAPrivateKey
    private let clientSecret: String
    package let time: any TimeSource

    private struct State {
        /// Purchase data (InAppPurchaseData) by token, as JSON objects.
        var purchases: [String: JSONValue] = [:]
        var confirmed: [String] = []
        var cancelled: [(orderId: String, token: String, atMs: Int64)] = []
        var tokens: Set<String> = []
        var calls: [String] = []
    }
    private let state = Mutex(State())

    package init(appId: String, clientSecret: String, key: RSAPrivateKey, time: any TimeSource) {
        (self.appId, self.clientSecret, self.key, self.time) = (appId, clientSecret, key, time)
    }

    /// A purchase as the client gets it (`inAppPurchaseData` fields); its `purchaseToken` keys it.
    package func script(purchase: JSONValue) {
        guard let token = purchase["purchaseToken"]?.looseString else { return }
        state.withLock { $0.purchases[token] = purchase }
    }

    /// The client's signed purchase data for `token`, as the app would send it to its backend.
    package func clientData(token: String) -> (data: String, signature: String)? {
        guard let purchase = state.withLock({ $0.purchases[token] }) else { return nil }
        let data = purchase.serialized()
        guard let signature = try? key.sign(Data(data.utf8)) else { return nil }
        return (data, signature.base64EncodedString())
    }

    /// Huawei cancels or refunds a purchase: listed by `cancelledList`, and its state 2.
    package func cancel(token: String) {
        let nowMs = Int64(time.now.timeIntervalSince1970 * 1000)
        state.withLock { s in
            guard let purchase = s.purchases[token], let orderId = purchase["orderId"]?.looseString else { return }
            s.purchases[token] = FakeHuawei.setting(purchase, [("purchaseState", .number(2))])
            s.cancelled.append((orderId, token, nowMs))
        }
    }

    package var confirmed: [String] { state.withLock { $0.confirmed } }
    /// Every call, as "<root path> <operation>".
    package var calls: [String] { state.withLock { $0.calls } }

    /// Its answer, or nil for a path that is not HMS's.
    package func handle(_ request: HTTPServerRequest) -> HTTPServerResponse? {
        let path = String(request.pathWithoutQuery)
        if path.hasSuffix("/oauth2/v3/token") { return token(request) }
        guard let range = path.range(of: "/applications/") else { return nil }
        let root = String(path[..<range.lowerBound]), operation = String(path[range.lowerBound...])
        state.withLock { $0.calls.append("\(root) \(operation)") }
        guard let authorization = request.header("Authorization"), authorization.hasPrefix("Basic "),
            let decoded = Data(base64Encoded: String(authorization.dropFirst(6))).map({
                String(decoding: $0, as: UTF8.self)
            }),
            decoded.hasPrefix("APPAT:"), state.withLock({ $0.tokens.contains(String(decoded.dropFirst(6))) })
        else {
            return .json(401, Data(#"{"responseCode": "1001", "responseMessage": "unauthorized"}"#.utf8))
        }
        let body = (try? JSONValue.parse(request.body)) ?? .null
        switch operation {
        case "/applications/purchases/tokens/verify":
            return verify(body, pss: request.header("HW-IAP-APPINFO")?.contains("PSS") == true)
        case "/applications/v2/purchases/confirm": return confirm(body)
        case "/applications/v2/purchases/cancelledList": return cancelledList(body)
        case "/applications/v2/purchases/get": return subscription(body)
        default: return Self.answer("5", "unknown API")
        }
    }

    private func token(_ request: HTTPServerRequest) -> HTTPServerResponse {
        var form: [String: String] = [:]
        for pair in String(decoding: request.body, as: UTF8.self).split(separator: "&") {
            let parts = pair.split(separator: "=", maxSplits: 1).map { String($0).removingPercentEncoding ?? "" }
            if parts.count == 2 { form[parts[0]] = parts[1] }
        }
        guard form["grant_type"] == "client_credentials", form["client_id"] == appId,
            form["client_secret"] == clientSecret
        else {
            return .json(401, Data(#"{"error": 1101, "error_description": "invalid client"}"#.utf8))
        }
        let issued = "hms-at-" + UUID().uuidString
        state.withLock { _ = $0.tokens.insert(issued) }
        return .json(
            200,
            JSONValue.object([
                ("access_token", .string(issued)), ("expires_in", .number(3600)),
                ("token_type", .string("Bearer")),
            ]).data)
    }

    private func verify(_ body: JSONValue, pss: Bool) -> HTTPServerResponse {
        guard let token = body["purchaseToken"]?.looseString, let product = body["productId"]?.looseString else {
            return Self.answer("5", "purchaseToken and productId are required")
        }
        let found = state.withLock { s -> JSONValue? in
            guard let purchase = s.purchases[token], purchase["productId"]?.looseString == product else { return nil }
            // Once delivery is confirmed the token no longer verifies.
            return s.confirmed.contains(token) ? nil : purchase
        }
        guard let purchase = found else { return Self.answer("12", "order does not exist") }
        let data = purchase.serialized()
        guard let signature = try? (pss ? key.signPSS(Data(data.utf8)) : key.sign(Data(data.utf8))) else {
            return Self.answer("6", "cannot sign")
        }
        return .json(
            200,
            JSONValue.object([
                ("responseCode", .string("0")), ("purchaseTokenData", .string(data)),
                ("dataSignature", .string(signature.base64EncodedString())),
                ("signatureAlgorithm", .string(pss ? "SHA256WithRSA/PSS" : "SHA256WithRSA")),
            ]).data)
    }

    /// `sub/applications/v2/purchases/get`: the subscription's current data, signed.
    private func subscription(_ body: JSONValue) -> HTTPServerResponse {
        guard let token = body["purchaseToken"]?.looseString, let id = body["subscriptionId"]?.looseString else {
            return Self.answer("5", "subscriptionId and purchaseToken are required")
        }
        guard let purchase = state.withLock({ $0.purchases[token] }), purchase["subscriptionId"]?.looseString == id
        else {
            return Self.answer("12", "subscription does not exist")
        }
        let data = purchase.serialized()
        guard let signature = try? key.sign(Data(data.utf8)) else { return Self.answer("6", "cannot sign") }
        return .json(
            200,
            JSONValue.object([
                ("responseCode", .string("0")), ("inappPurchaseData", .string(data)),
                ("dataSignature", .string(signature.base64EncodedString())),
            ]).data)
    }

    private func confirm(_ body: JSONValue) -> HTTPServerResponse {
        guard let token = body["purchaseToken"]?.looseString else {
            return Self.answer("5", "purchaseToken is required")
        }
        let code = state.withLock { s -> String in
            guard s.purchases[token] != nil else { return "8" }
            if s.confirmed.contains(token) { return "9" }
            s.confirmed.append(token)
            return "0"
        }
        return Self.answer(code, code == "0" ? "success" : "not confirmed")
    }

    private func cancelledList(_ body: JSONValue) -> HTTPServerResponse {
        guard let start = body["startAt"]?.looseInt64, let end = body["endAt"]?.looseInt64 else {
            return Self.answer("5", "startAt and endAt are required")
        }
        let listed = state.withLock { s in s.cancelled.filter { $0.atMs >= start && $0.atMs <= end } }
        let list = JSONValue.array(
            listed.map { entry in
                .object([
                    ("orderId", .string(entry.orderId)), ("purchaseToken", .string(entry.token)),
                    ("cancelledTime", .number(entry.atMs)),
                    ("cancelledSource", .number(0)), ("cancelledReason", .number(1)),
                ])
            })
        return .json(
            200,
            JSONValue.object([("responseCode", .string("0")), ("cancelledPurchaseList", .string(list.serialized()))])
                .data)
    }

    private static func answer(_ code: String, _ message: String) -> HTTPServerResponse {
        .json(200, JSONValue.object([("responseCode", .string(code)), ("responseMessage", .string(message))]).data)
    }
}
