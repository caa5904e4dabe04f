import Foundation
import SettleBase
import SettleModel

/// HMS IAP's InAppPurchaseData (huawei-appgallery.md 2.4): the purchase as the client got it
/// (`inAppPurchaseData`) and as `tokens/verify` answers it (`purchaseTokenData`), a JSON string
/// signed with the app's IAP key. Unknown fields are ignored.
package struct HMSPurchase: Sendable, Equatable {
    package var orderId: String?
    package var productId: String
    package var purchaseToken: String
    /// -1 initialized, 0 purchased, 1 cancelled, 2 refunded, 3 pending.
    package var purchaseState: Int?
    /// 0 consumable, 1 non-consumable, 2 subscription.
    package var kind: Int?
    package var purchaseTimeMs: Int64?
    package var developerPayload: String?
    package var consumptionState: Int?
    package var confirmed: Int?
    /// 0: a sandbox purchase; 1: a promotion; absent for a real purchase.
    package var purchaseType: Int?
    /// 1: an AppTouch account, whose orders live on their own site.
    package var accountFlag: Int?
    package var applicationId: String?
    /// Subscriptions: which subscription, until when, whether it is valid (charged, unexpired,
    /// unrefunded), and when it was revoked.
    package var subscriptionId: String?
    package var expirationDateMs: Int64?
    package var subIsValid: Bool?
    package var cancelTimeMs: Int64?
    /// InAppPurchaseData's `price` (times 100) and `currency`, as a price; nil when it states none that is one.
    package var paid: Price? = nil

    package struct Invalid: Error, Sendable, Equatable {
        package var message: String
    }

    package init(json text: String) throws(Invalid) {
        guard let json = try? JSONValue.parse(text), json.objectMembers != nil else {
            throw Invalid(message: "the purchase data is not a JSON object")
        }
        func int(_ key: String) throws(Invalid) -> Int? {
            switch json[key] {
            case nil, .null?: return nil
            case let value?:
                guard let number = value.looseString.flatMap({ Int($0) }), abs(number) < 1_000_000 else {
                    throw Invalid(message: "the purchase data's \(key) is not a small whole number")
                }
                return number
            }
        }
        guard let productId = json["productId"]?.looseString, !productId.isEmpty else {
            throw Invalid(message: "the purchase data has no productId")
        }
        guard let token = json["purchaseToken"]?.looseString, !token.isEmpty else {
            throw Invalid(message: "the purchase data has no purchaseToken")
        }
        (self.productId, purchaseToken) = (productId, token)
        orderId = json["orderId"]?.looseString.flatMap { $0.isEmpty ? nil : $0 }
        purchaseState = try int("purchaseState")
        kind = try int("kind")
        purchaseTimeMs = (json["purchaseTime"] ?? json["purchaseTimeMillis"])?.looseInt64.flatMap { $0 >= 0 ? $0 : nil }
        developerPayload = json["developerPayload"]?.looseString
        consumptionState = try int("consumptionState")
        confirmed = try int("confirmed")
        purchaseType = try int("purchaseType")
        accountFlag = try int("accountFlag")
        applicationId = json["applicationId"]?.looseString
        subscriptionId = json["subscriptionId"]?.looseString.flatMap { $0.isEmpty ? nil : $0 }
        expirationDateMs = json["expirationDate"]?.looseInt64
        subIsValid = json["subIsvalid"]?.looseBool
        cancelTimeMs = json["cancelTime"]?.looseInt64
        paid = Self.paid(json)
    }
}

/// What proves an HMS IAP purchase: its purchase token and product id (and `accountFlag`,
/// which picks the site), or the client's signed purchase data, which carries them. The token
/// is a bearer secret: kept in the ledger only; the order id, when the client data gives it, is
/// the key the order is found by.
package struct HMSProof: Sendable, Equatable {
    package static let kind = "huawei_hms"

    package var purchaseToken: String
    package var productId: String
    package var accountFlag: Int?
    package var orderId: String?
    /// A subscription's id (the client data's `subscriptionId`), which `purchases/get` needs.
    package var subscriptionId: String?
    /// The client's `inAppPurchaseData` and `inAppDataSignature`, as the app got them.
    package var clientData: String?
    package var clientSignature: String?
    package var signatureAlgorithm: String?

    package init(purchaseToken: String, productId: String, accountFlag: Int? = nil) {
        (self.purchaseToken, self.productId, self.accountFlag) = (purchaseToken, productId, accountFlag)
    }

    /// The proof the backend sends; the error names the field, never its value.
    package init(json: JSONValue) throws(ProofReadError) {
        if case let .string(data)? = json["inAppPurchaseData"] {
            guard case let .string(signature)? = json["inAppDataSignature"], !signature.isEmpty else {
                throw ProofReadError("inAppPurchaseData needs its inAppDataSignature")
            }
            let purchase: HMSPurchase
            do throws(HMSPurchase.Invalid) {
                purchase = try HMSPurchase(json: data)
            } catch {
                throw ProofReadError("inAppPurchaseData: \(error.message)")
            }
            self.init(
                purchaseToken: purchase.purchaseToken, productId: purchase.productId, accountFlag: purchase.accountFlag)
            (orderId, clientData, clientSignature) = (purchase.orderId, data, signature)
            subscriptionId = purchase.subscriptionId
            signatureAlgorithm = json["signatureAlgorithm"]?.looseString
        } else {
            guard case let .string(token)? = json["purchaseToken"], case let .string(product)? = json["productId"]
            else {
                throw ProofReadError(
                    "an HMS IAP proof has purchaseToken and productId (and accountFlag), or inAppPurchaseData and inAppDataSignature"
                )
            }
            self.init(
                purchaseToken: token, productId: product,
                accountFlag: json["accountFlag"]?.looseString.flatMap { Int($0) })
            orderId = json["orderId"]?.looseString.flatMap { $0.isEmpty || $0.count > 256 ? nil : $0 }
            subscriptionId = json["subscriptionId"]?.looseString.flatMap { $0.isEmpty || $0.count > 256 ? nil : $0 }
        }
        for (name, value) in [("purchaseToken", purchaseToken), ("productId", productId)]
        where value.isEmpty || value.count > 1024
            || !value.unicodeScalars.allSatisfy({ (0x21...0x7E).contains($0.value) })
        {
            throw ProofReadError("\(name) must be 1 to 1024 printable ASCII characters")
        }
    }

    package init?(_ proof: StoreProof?) {
        guard let proof, proof.kind == Self.kind, let json = try? JSONValue.parse(proof.proof),
            let read = try? HMSProof(json: json)
        else {
            return nil
        }
        self = read
    }

    package var storeProof: StoreProof {
        var members: [(String, JSONValue)]
        if let clientData, let clientSignature {
            members = [("inAppPurchaseData", .string(clientData)), ("inAppDataSignature", .string(clientSignature))]
            if let signatureAlgorithm { members.append(("signatureAlgorithm", .string(signatureAlgorithm))) }
        } else {
            members = [("purchaseToken", .string(purchaseToken)), ("productId", .string(productId))]
            if let accountFlag { members.append(("accountFlag", .number(accountFlag))) }
            if let orderId { members.append(("orderId", .string(orderId))) }
            if let subscriptionId { members.append(("subscriptionId", .string(subscriptionId))) }
        }
        return StoreProof(kind: Self.kind, proof: JSONValue.object(members).serialized(), key: orderId)
    }

    /// Whether `signature` (standard base64) signs `data` under `key` with `algorithm`:
    /// `SHA256WithRSA` (PKCS#1 v1.5, the default) or `SHA256WithRSA/PSS`.
    package static func verify(data: String, signature: String, algorithm: String?, key: RSAPublicKey) -> Bool {
        guard let bytes = Data(base64Encoded: signature) else { return false }
        switch algorithm ?? "SHA256WithRSA" {
        case "SHA256WithRSA": return key.verify(signature: bytes, message: Data(data.utf8))
        case "SHA256WithRSA/PSS": return key.verifyPSS(signature: bytes, message: Data(data.utf8))
        default: return false
        }
    }
}

/// One entry of the cancelled and refunded purchases list (`cancelledList`, section 2.7).
package struct HMSCancelledPurchase: Sendable, Equatable {
    package var orderId: String
    package var purchaseToken: String?
    package var cancelledTimeMs: Int64?
    /// 0 user, 1 developer, 2 Huawei.
    package var source: Int?
    /// 0 other, 1 remorse, 2 not provided, 3 service abnormal, 4 accidental, 5 fraud, 6 chargeback, ...
    package var reason: Int?
}
