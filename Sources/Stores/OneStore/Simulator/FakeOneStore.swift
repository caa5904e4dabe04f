import Foundation
import Synchronization
import SettleBase
import SettleOneStore

/// A stand-in for ONE store's IAP server API V7 (one-store.md) on loopback: the token endpoint
/// (one app's client credentials) and purchase details, acknowledge and consume, under two roots,
/// `/commercial` and `/sandbox` (separate ledgers, as ONE store's hosts are); a purchase is known
/// only under its market code (`x-market-code`; absent means `MKT_ONE`) and its product. It signs
/// PNS messages with the app's license key (`SHA512withRSA` over the message without `signature`).
package final class FakeOneStore: Sendable {
    package let clientId: String
    package let packageName: String
    package let licenseKey: RSAPrivateKey
    package let time: any TimeSource
    private let clientSecret: String

    package struct Purchase: Sendable {
        package var host: String
        package var market: String
        package var productId: String
        package var token: String
        package var purchaseId: String
        package var purchaseState = 0
        package var consumptionState = 0
        package var acknowledgeState = 0
        package var quantity = 1
        package var purchaseTimeMs: Int64
        package var developerPayload: String?

        package init(
            host: String = "commercial", market: String = "MKT_ONE", productId: String, token: String,
            purchaseId: String,
            purchaseTimeMs: Int64, developerPayload: String?, quantity: Int = 1
        ) {
            (self.host, self.market, self.productId, self.token, self.purchaseId) = (
                host, market, productId, token, purchaseId
            )
            (self.purchaseTimeMs, self.developerPayload, self.quantity) = (purchaseTimeMs, developerPayload, quantity)
        }
    }

    private struct State {
        var purchases: [String: Purchase] = [:]
        var tokens: Set<String> = []
        var calls: [String] = []
        var finishes: [String] = []
        var refuseFinishes = 0
    }
    private let state = Mutex(State())

    package init(
        clientId: String, clientSecret: String, packageName: String, licenseKey: RSAPrivateKey, time: any TimeSource
    ) {
        (self.clientId, self.clientSecret, self.packageName, self.licenseKey, self.time) = (
            clientId, clientSecret, packageName, licenseKey, time
        )
    }

    package func script(_ purchase: Purchase) { state.withLock { $0.purchases[purchase.token] = purchase } }
    /// ONE store cancels (refunds) a purchase.
    package func cancel(token: String) { state.withLock { $0.purchases[token]?.purchaseState = 1 } }
    package func purchase(token: String) -> Purchase? { state.withLock { $0.purchases[token] } }
    /// Every request, as "<root> <what>".
    package var calls: [String] { state.withLock { $0.calls } }
    /// The acknowledges and consumes it took, as "<verb> <purchaseId>".
    package var finishes: [String] { state.withLock { $0.finishes } }
    /// The next `count` acknowledges or consumes answer 409 `InvalidPurchaseState`.
    package func refuseFinishes(_ count: Int) { state.withLock { $0.refuseFinishes = count } }

    package func handle(_ request: HTTPServerRequest) -> HTTPServerResponse {
        let path = String(request.pathWithoutQuery)
        guard let range = path.range(of: "/v7/") else { return Self.error(404, "NoSuchData", "no such API") }
        let root = String(path[..<range.lowerBound]).trimmingCharacters(in: CharacterSet(charactersIn: "/"))
        let rest = String(path[range.upperBound...])
        if rest == "oauth/token" { return token(request) }
        guard let authorization = request.header("Authorization"), authorization.hasPrefix("Bearer "),
            state.withLock({ $0.tokens.contains(String(authorization.dropFirst(7))) })
        else {
            return Self.error(401, "AccessTokenExpired", "access token expired")
        }
        let market = request.header("x-market-code") ?? "MKT_ONE"
        let parts = rest.split(separator: "/", omittingEmptySubsequences: false).map {
            String($0).removingPercentEncoding ?? ""
        }
        // apps/{package}/purchases/{inapp|all}/products/{product}/{token}[/acknowledge|/consume]
        guard parts.count >= 7, parts[0] == "apps", parts[1] == packageName, parts[2] == "purchases",
            parts[4] == "products"
        else {
            return Self.error(404, "NoSuchData", "no such data")
        }
        let (kind, product, token) = (parts[3], parts[5], parts[6])
        let verb = parts.count > 7 ? parts[7] : ""
        state.withLock { $0.calls.append("\(root) \(verb.isEmpty ? "purchase" : verb) \(product)") }
        guard let purchase = state.withLock({ $0.purchases[token] }), purchase.host == root, purchase.market == market,
            purchase.productId == product
        else {
            return Self.error(404, "NoSuchData", "no such data")
        }
        switch (request.method, verb, kind) {
        case ("GET", "", "inapp"):
            var members: [(String, JSONValue)] = [
                ("consumptionState", .number(purchase.consumptionState)),
                ("purchaseState", .number(purchase.purchaseState)),
                ("purchaseTime", .number(purchase.purchaseTimeMs)), ("purchaseId", .string(purchase.purchaseId)),
                ("acknowledgeState", .number(purchase.acknowledgeState)), ("quantity", .number(purchase.quantity)),
            ]
            members.append(("developerPayload", purchase.developerPayload.map(JSONValue.string) ?? .null))
            return .json(200, JSONValue.object(members).data)
        case ("POST", "acknowledge", "all"), ("POST", "consume", "inapp"):
            let refused = state.withLock { s -> Bool in
                if s.refuseFinishes > 0 { s.refuseFinishes -= 1; return true }
                guard s.purchases[token]?.purchaseState == 0 else { return true }
                if verb == "consume" {
                    guard s.purchases[token]?.consumptionState == 0 else { return true }
                    s.purchases[token]?.consumptionState = 1
                } else {
                    guard s.purchases[token]?.acknowledgeState == 0 else { return true }
                    s.purchases[token]?.acknowledgeState = 1
                }
                s.finishes.append("\(verb) \(purchase.purchaseId)")
                return false
            }
            if refused { return Self.error(409, "InvalidPurchaseState", "invalid purchase state") }
            return .json(200, Data(#"{"result": {"code": "Success", "message": "success"}}"#.utf8))
        default:
            return Self.error(404, "NoSuchData", "no such data")
        }
    }

    private func token(_ request: HTTPServerRequest) -> HTTPServerResponse {
        var form: [String: String] = [:]
        for pair in String(decoding: request.body, as: UTF8.self).split(separator: "&") {
            let parts = pair.split(separator: "=", maxSplits: 1).map { String($0).removingPercentEncoding ?? "" }
            if parts.count == 2 { form[parts[0]] = parts[1] }
        }
        guard form["grant_type"] == "client_credentials", form["client_id"] == clientId,
            form["client_secret"] == clientSecret
        else {
            return Self.error(401, "InvalidClient", "invalid client")
        }
        let issued = UUID().uuidString.lowercased()
        state.withLock { _ = $0.tokens.insert(issued) }
        return .json(
            200,
            JSONValue.object([
                ("client_id", .string(clientId)), ("access_token", .string(issued)),
                ("token_type", .string("bearer")), ("expires_in", .number(3600)),
                ("scope", .string("DEFAULT")),
            ]).data)
    }

    /// A PNS message about `token`'s purchase, signed with the license key (or `signer`, a forger's).
    package func pns(token: String, state purchaseState: String, signer: RSAPrivateKey? = nil) -> Data {
        let purchase = state.withLock { $0.purchases[token] }
        let members: [(String, JSONValue)] = [
            ("msgVersion", .string(purchase?.host == "sandbox" ? "3.1.0D" : "3.1.0")), ("clientId", .string(clientId)),
            ("productId", .string(purchase?.productId ?? "")), ("messageType", .string("SINGLE_PAYMENT_TRANSACTION")),
            ("purchaseId", .string(purchase?.purchaseId ?? "")),
            ("developerPayload", .string(purchase?.developerPayload ?? "")),
            ("purchaseTimeMillis", .number(purchase?.purchaseTimeMs ?? 0)), ("purchaseState", .string(purchaseState)),
            ("price", .string("1200")), ("priceCurrencyCode", .string("KRW")), ("productName", .string("Gems 100")),
            ("paymentTypeList", .array([.object([("paymentMethod", .string("DCB")), ("amount", .string("1200"))])])),
            ("billingKey", .string("billing-key")), ("isTestMdn", .bool(false)), ("purchaseToken", .string(token)),
            ("environment", .string(purchase?.host == "sandbox" ? "SANDBOX" : "COMMERCIAL")),
            ("marketCode", .string(purchase?.market ?? "MKT_ONE")),
        ]
        let message = JSONValue.object(members).serialized()
        let signature = (try? (signer ?? licenseKey).signSHA512(Data(message.utf8)))?.base64EncodedString() ?? ""
        return JSONValue.object(members + [("signature", .string(signature))]).data
    }

    private static func error(_ status: Int, _ code: String, _ message: String) -> HTTPServerResponse {
        .json(
            status,
            JSONValue.object([("error", .object([("code", .string(code)), ("message", .string(message))]))]).data)
    }
}
