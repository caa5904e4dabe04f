import Foundation
import SettleBase

/// A one-time product purchase as `purchases.productsv2.getproductpurchasev2` answers it: the
/// only view of which purchase option or offer was bought (rentals and pre-orders included)
/// and of how much of it may still be refunded.
/// https://developers.google.com/android-publisher/api-ref/rest/v3/purchases.productsv2
///
/// Google's enumerations are kept as its text (`PURCHASED`, `CONSUMPTION_STATE_CONSUMED`, ...),
/// so a value Google adds later survives and is seen as unknown rather than guessed at.
package struct ProductPurchaseV2: Sendable, Equatable {
    /// One product of the purchase, with the option and offer it was bought under.
    package struct LineItem: Sendable, Equatable {
        package var productId: String
        package var purchaseOptionId: String?
        package var offerId: String?
        package var quantity: Int?
        /// What has not been refunded yet (quantity-based partial refunds and full refunds count).
        package var refundableQuantity: Int?
        package var rawConsumptionState: String?
        /// Bought under a rent purchase option (`rentOfferDetails`; Google gives no more of it:
        /// the rental period is the option's, in Play Console).
        package var isRental: Bool
        /// Bought as a pre-order (`preorderOfferDetails`).
        package var isPreorder: Bool

        package init(productId: String, purchaseOptionId: String? = nil, offerId: String? = nil, quantity: Int? = nil,
                     refundableQuantity: Int? = nil, rawConsumptionState: String? = nil, isRental: Bool = false, isPreorder: Bool = false) {
            self.productId = productId
            self.purchaseOptionId = purchaseOptionId
            self.offerId = offerId
            self.quantity = quantity
            self.refundableQuantity = refundableQuantity
            self.rawConsumptionState = rawConsumptionState
            self.isRental = isRental
            self.isPreorder = isPreorder
        }

        package var consumed: Bool { rawConsumptionState == "CONSUMPTION_STATE_CONSUMED" }
    }

    package var lineItems: [LineItem]
    /// `purchaseStateContext.purchaseState`: `PURCHASED`, `PENDING`, `CANCELLED`, ...
    package var rawPurchaseState: String?
    /// Set only for a license tester's purchase (`testPurchaseContext`).
    package var isTest: Bool
    package var orderId: String?
    package var obfuscatedExternalAccountId: String?
    package var obfuscatedExternalProfileId: String?
    package var regionCode: String?
    /// RFC 3339: when the purchase became `PURCHASED`.
    package var purchaseCompletionTime: String?
    /// `ACKNOWLEDGEMENT_STATE_PENDING` or `ACKNOWLEDGEMENT_STATE_ACKNOWLEDGED`.
    package var rawAcknowledgementState: String?

    package init(lineItems: [LineItem], rawPurchaseState: String?, isTest: Bool = false, orderId: String?,
                 obfuscatedExternalAccountId: String? = nil, obfuscatedExternalProfileId: String? = nil, regionCode: String? = nil,
                 purchaseCompletionTime: String? = nil, rawAcknowledgementState: String? = nil) {
        self.lineItems = lineItems
        self.rawPurchaseState = rawPurchaseState
        self.isTest = isTest
        self.orderId = orderId
        self.obfuscatedExternalAccountId = obfuscatedExternalAccountId
        self.obfuscatedExternalProfileId = obfuscatedExternalProfileId
        self.regionCode = regionCode
        self.purchaseCompletionTime = purchaseCompletionTime
        self.rawAcknowledgementState = rawAcknowledgementState
    }

    package var acknowledged: Bool { rawAcknowledgementState == "ACKNOWLEDGEMENT_STATE_ACKNOWLEDGED" }

    /// `purchaseCompletionTime` in Unix milliseconds, with or without fractional seconds.
    package var completionMillis: Int64? {
        guard let purchaseCompletionTime else { return nil }
        let formatter = ISO8601DateFormatter()
        for options in [ISO8601DateFormatter.Options.withInternetDateTime, [.withInternetDateTime, .withFractionalSeconds]] {
            formatter.formatOptions = options
            if let date = formatter.date(from: purchaseCompletionTime) {
                return Int64(saturating: (date.timeIntervalSince1970 * 1000).rounded(.down))
            }
        }
        return nil
    }

    /// Reads Google's answer; nil when it is not a JSON object. Fields of the wrong type read as absent.
    package init?(json: JSONValue) {
        guard json.objectMembers != nil else { return nil }
        func string(_ value: JSONValue?, _ key: String) -> String? { value?[key]?.looseString.flatMap { $0.isEmpty ? nil : $0 } }
        func int(_ value: JSONValue?, _ key: String) -> Int? { value?[key]?.looseInt64.flatMap { Int(exactly: $0) } }
        let items = (json["productLineItem"]?.arrayValue ?? []).compactMap { item -> LineItem? in
            guard let productId = string(item, "productId") else { return nil }
            let offer = item["productOfferDetails"]
            return LineItem(productId: productId, purchaseOptionId: string(offer, "purchaseOptionId"), offerId: string(offer, "offerId"),
                            quantity: int(offer, "quantity"), refundableQuantity: int(offer, "refundableQuantity"),
                            rawConsumptionState: string(offer, "consumptionState"), isRental: offer?["rentOfferDetails"] != nil,
                            isPreorder: offer?["preorderOfferDetails"] != nil)
        }
        self.init(lineItems: items, rawPurchaseState: string(json["purchaseStateContext"], "purchaseState"),
                  isTest: json["testPurchaseContext"] != nil, orderId: string(json, "orderId"),
                  obfuscatedExternalAccountId: string(json, "obfuscatedExternalAccountId"),
                  obfuscatedExternalProfileId: string(json, "obfuscatedExternalProfileId"), regionCode: string(json, "regionCode"),
                  purchaseCompletionTime: string(json, "purchaseCompletionTime"),
                  rawAcknowledgementState: string(json, "acknowledgementState"))
    }

    /// The answer as Google sends it (for the fake Google).
    package var json: JSONValue {
        var members: [(String, JSONValue)] = [("kind", .string("androidpublisher#productPurchaseV2"))]
        members.append(("productLineItem", .array(lineItems.map { item in
            var offer: [(String, JSONValue)] = []
            if let id = item.purchaseOptionId { offer.append(("purchaseOptionId", .string(id))) }
            if let id = item.offerId { offer.append(("offerId", .string(id))) }
            if let n = item.quantity { offer.append(("quantity", .number(n))) }
            if let n = item.refundableQuantity { offer.append(("refundableQuantity", .number(n))) }
            if let state = item.rawConsumptionState { offer.append(("consumptionState", .string(state))) }
            if item.isRental { offer.append(("rentOfferDetails", .object([]))) }
            if item.isPreorder { offer.append(("preorderOfferDetails", .object([]))) }
            return .object([("productId", .string(item.productId)), ("productOfferDetails", .object(offer))])
        })))
        if let rawPurchaseState { members.append(("purchaseStateContext", .object([("purchaseState", .string(rawPurchaseState))]))) }
        if isTest { members.append(("testPurchaseContext", .object([("fopType", .string("TEST"))]))) }
        if let orderId { members.append(("orderId", .string(orderId))) }
        if let id = obfuscatedExternalAccountId { members.append(("obfuscatedExternalAccountId", .string(id))) }
        if let id = obfuscatedExternalProfileId { members.append(("obfuscatedExternalProfileId", .string(id))) }
        if let regionCode { members.append(("regionCode", .string(regionCode))) }
        if let time = purchaseCompletionTime { members.append(("purchaseCompletionTime", .string(time))) }
        if let state = rawAcknowledgementState { members.append(("acknowledgementState", .string(state))) }
        return .object(members)
    }
}

extension ProductPurchaseV2 {
    /// The same purchase as `purchases.products.get` describes it, in productsv2's words (the
    /// fake Google serves both views of one scripted purchase).
    package init(_ p: ProductPurchase, productId: String, purchaseOptionId: String? = nil, rental: Bool = false) {
        let state: String? = switch p.rawPurchaseState {
        case 0?: "PURCHASED"
        case 1?: "CANCELLED"
        case 2?: "PENDING"
        case let other?: "PURCHASE_STATE_\(other)"
        case nil: nil
        }
        let completion = p.purchaseTimeMillis.map { Timestamp.rfc3339(milliseconds: $0) }
        self.init(lineItems: [LineItem(productId: p.productId ?? productId, purchaseOptionId: purchaseOptionId, quantity: p.quantity ?? 1,
                                       refundableQuantity: p.quantity ?? 1,
                                       rawConsumptionState: p.rawConsumptionState == 1 ? "CONSUMPTION_STATE_CONSUMED"
                                           : "CONSUMPTION_STATE_YET_TO_BE_CONSUMED",
                                       isRental: rental)],
                  rawPurchaseState: state, isTest: p.purchaseType == .test, orderId: p.orderId,
                  obfuscatedExternalAccountId: p.obfuscatedExternalAccountId, obfuscatedExternalProfileId: p.obfuscatedExternalProfileId,
                  regionCode: p.regionCode, purchaseCompletionTime: p.rawPurchaseState == 0 ? completion : nil,
                  rawAcknowledgementState: p.rawAcknowledgementState == 1 ? "ACKNOWLEDGEMENT_STATE_ACKNOWLEDGED" : "ACKNOWLEDGEMENT_STATE_PENDING")
    }
}
