import SettleBase

/// A one-time product purchase as `purchases.products.get` answers it.
/// https://developers.google.com/android-publisher/api-ref/rest/v3/purchases.products#ProductPurchase
///
/// Each of Google's enumerations is kept as its raw number beside a typed view, so a value
/// Google adds later decodes, survives, and is seen as "unknown" rather than guessed at.
package struct ProductPurchase: Sendable, Equatable {
    package enum PurchaseState: Int, Sendable {
        case purchased = 0
        case canceled = 1
        case pending = 2
    }

    package enum ConsumptionState: Int, Sendable {
        case yetToBeConsumed = 0
        case consumed = 1
    }

    package enum AcknowledgementState: Int, Sendable {
        case yetToBeAcknowledged = 0
        case acknowledged = 1
    }

    /// Set only for purchases outside the standard billing flow; absent for a normal one.
    package enum PurchaseType: Int, Sendable {
        /// Bought by a license tester: Google's sandbox.
        case test = 0
        case promo = 1
        /// Paid for by watching an ad.
        case rewarded = 2
    }

    package var rawPurchaseState: Int?
    package var rawConsumptionState: Int?
    package var rawAcknowledgementState: Int?
    package var rawPurchaseType: Int?
    /// `GPA.1234-5678-9012-34567`, unique per purchase; blank for some test purchases.
    package var orderId: String?
    /// Present in newer answers only; the product is otherwise the one the call named.
    package var productId: String?
    /// Sent by Google as a string of digits.
    package var purchaseTimeMillis: Int64?
    /// Absent means 1 (multi-quantity purchases say how many).
    package var quantity: Int?
    /// What the app passed to `BillingFlowParams.setObfuscatedAccountId`: the Play counterpart
    /// of the App Store's appAccountToken, binding the purchase to one of the app's users.
    package var obfuscatedExternalAccountId: String?
    package var obfuscatedExternalProfileId: String?
    /// ISO 3166-1 alpha-2 billing region.
    package var regionCode: String?

    package var purchaseState: PurchaseState? { rawPurchaseState.flatMap(PurchaseState.init(rawValue:)) }
    package var consumptionState: ConsumptionState? { rawConsumptionState.flatMap(ConsumptionState.init(rawValue:)) }
    package var acknowledgementState: AcknowledgementState? { rawAcknowledgementState.flatMap(AcknowledgementState.init(rawValue:)) }
    /// Nil both when absent (a normal purchase) and when unknown: `rawPurchaseType` tells which.
    package var purchaseType: PurchaseType? { rawPurchaseType.flatMap(PurchaseType.init(rawValue:)) }

    package init(rawPurchaseState: Int?, rawConsumptionState: Int? = 0, rawAcknowledgementState: Int? = 0,
                rawPurchaseType: Int? = nil, orderId: String?, productId: String? = nil, purchaseTimeMillis: Int64? = nil,
                quantity: Int? = nil, obfuscatedExternalAccountId: String? = nil, obfuscatedExternalProfileId: String? = nil,
                regionCode: String? = nil) {
        self.rawPurchaseState = rawPurchaseState
        self.rawConsumptionState = rawConsumptionState
        self.rawAcknowledgementState = rawAcknowledgementState
        self.rawPurchaseType = rawPurchaseType
        self.orderId = orderId
        self.productId = productId
        self.purchaseTimeMillis = purchaseTimeMillis
        self.quantity = quantity
        self.obfuscatedExternalAccountId = obfuscatedExternalAccountId
        self.obfuscatedExternalProfileId = obfuscatedExternalProfileId
        self.regionCode = regionCode
    }

    /// Reads Google's answer; nil when it is not a JSON object. Fields of the wrong type read as absent.
    /// The answer's own `purchaseToken` is deliberately not kept: the caller has it already.
    package init?(json: JSONValue) {
        guard json.objectMembers != nil else { return nil }
        func int(_ key: String) -> Int? { json[key]?.looseInt64.flatMap { Int(exactly: $0) } }
        func string(_ key: String) -> String? { json[key]?.looseString.flatMap { $0.isEmpty ? nil : $0 } }
        self.init(rawPurchaseState: int("purchaseState"), rawConsumptionState: int("consumptionState"),
                  rawAcknowledgementState: int("acknowledgementState"), rawPurchaseType: int("purchaseType"),
                  orderId: string("orderId"), productId: string("productId"),
                  purchaseTimeMillis: json["purchaseTimeMillis"]?.looseInt64, quantity: int("quantity"),
                  obfuscatedExternalAccountId: string("obfuscatedExternalAccountId"),
                  obfuscatedExternalProfileId: string("obfuscatedExternalProfileId"), regionCode: string("regionCode"))
    }

    /// The answer as Google sends it (for the fake Google and round-trip tests).
    package var json: JSONValue {
        var members: [(String, JSONValue)] = [("kind", .string("androidpublisher#productPurchase"))]
        if let purchaseTimeMillis { members.append(("purchaseTimeMillis", .string(String(purchaseTimeMillis)))) }
        if let rawPurchaseState { members.append(("purchaseState", .number(rawPurchaseState))) }
        if let rawConsumptionState { members.append(("consumptionState", .number(rawConsumptionState))) }
        if let orderId { members.append(("orderId", .string(orderId))) }
        if let rawPurchaseType { members.append(("purchaseType", .number(rawPurchaseType))) }
        if let rawAcknowledgementState { members.append(("acknowledgementState", .number(rawAcknowledgementState))) }
        if let productId { members.append(("productId", .string(productId))) }
        if let quantity { members.append(("quantity", .number(quantity))) }
        if let obfuscatedExternalAccountId { members.append(("obfuscatedExternalAccountId", .string(obfuscatedExternalAccountId))) }
        if let obfuscatedExternalProfileId { members.append(("obfuscatedExternalProfileId", .string(obfuscatedExternalProfileId))) }
        if let regionCode { members.append(("regionCode", .string(regionCode))) }
        return .object(members)
    }
}
