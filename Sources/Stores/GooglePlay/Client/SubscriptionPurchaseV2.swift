import Foundation
import SettleBase
import SettleModel

/// A subscription purchase as `purchases.subscriptionsv2.get` answers it.
/// https://developers.google.com/android-publisher/api-ref/rest/v3/purchases.subscriptionsv2#SubscriptionPurchaseV2
///
/// The enumerations are strings in this API; each keeps its raw text beside a typed view, so a
/// state Google adds later survives and reads as unknown.
package struct SubscriptionPurchaseV2: Sendable, Equatable {
    package enum State: String, Sendable {
        case pending = "SUBSCRIPTION_STATE_PENDING"
        case active = "SUBSCRIPTION_STATE_ACTIVE"
        case paused = "SUBSCRIPTION_STATE_PAUSED"
        case inGracePeriod = "SUBSCRIPTION_STATE_IN_GRACE_PERIOD"
        case onHold = "SUBSCRIPTION_STATE_ON_HOLD"
        /// Auto-renewal was turned off; the customer keeps access until the line items expire.
        case canceled = "SUBSCRIPTION_STATE_CANCELED"
        case expired = "SUBSCRIPTION_STATE_EXPIRED"
        /// A pending purchase that never completed: nothing was paid.
        case pendingPurchaseCanceled = "SUBSCRIPTION_STATE_PENDING_PURCHASE_CANCELED"
    }

    package enum AcknowledgementState: String, Sendable {
        case pending = "ACKNOWLEDGEMENT_STATE_PENDING"
        case acknowledged = "ACKNOWLEDGEMENT_STATE_ACKNOWLEDGED"
    }

    /// One subscribed product (a purchase can hold several, e.g. an add-on).
    package struct LineItem: Sendable, Equatable {
        package var productId: String
        /// RFC 3339, as Google sends it.
        package var expiryTime: String?
        /// The order of this item's latest successful charge: the period a grant is for (`GPA.…`
        /// for the first, `GPA.…..0` for the first renewal). Absent while the item is not owned
        /// yet (a pending purchase, an item a deferred replacement brings).
        package var latestSuccessfulOrderId: String?

        package init(productId: String, expiryTime: String?, latestSuccessfulOrderId: String? = nil) {
            self.productId = productId
            self.expiryTime = expiryTime
            self.latestSuccessfulOrderId = latestSuccessfulOrderId
        }

        /// `expiryTime` read, with or without fractional seconds; nil when absent or unreadable.
        package var expiry: Date? {
            guard let expiryTime else { return nil }
            let formatter = ISO8601DateFormatter()
            formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
            if let date = formatter.date(from: expiryTime) { return date }
            formatter.formatOptions = [.withInternetDateTime]
            return formatter.date(from: expiryTime)
        }
    }

    package var rawSubscriptionState: String?
    package var rawAcknowledgementState: String?
    package var lineItems: [LineItem]
    /// Deprecated by Google (shut down 2027-08-31): the latest order of any outcome, a pending or
    /// declined renewal's too. Read for nothing; a period's order is its line item's
    /// `latestSuccessfulOrderId`. Kept so the fake Google can serve it as Google still does.
    package var latestOrderId: String?
    /// The token this purchase replaced (an upgrade, downgrade or resubscription): a bearer secret too.
    package var linkedPurchaseToken: PurchaseToken?
    /// Google marks a license tester's purchase with a `testPurchase` object.
    package var isTestPurchase: Bool
    package var obfuscatedExternalAccountId: String?
    package var regionCode: String?
    package var startTime: String?
    /// `outOfAppPurchaseContext` (a resubscription made in the Play Store), in `+Contexts`.
    package var outOfAppPurchase: OutOfAppPurchase? = nil
    /// `onHoldStateContext`: the declined renewal behind an account hold.
    package var onHold: DeclinedRenewal? = nil
    /// `inGracePeriodStateContext`: the declined renewal behind a grace period.
    package var inGracePeriod: DeclinedRenewal? = nil

    package var subscriptionState: State? { rawSubscriptionState.flatMap(State.init(rawValue:)) }
    package var acknowledgementState: AcknowledgementState? { rawAcknowledgementState.flatMap(AcknowledgementState.init(rawValue:)) }

    package init(rawSubscriptionState: String?, rawAcknowledgementState: String? = AcknowledgementState.pending.rawValue,
                lineItems: [LineItem], latestOrderId: String?, linkedPurchaseToken: PurchaseToken? = nil,
                isTestPurchase: Bool = false, obfuscatedExternalAccountId: String? = nil, regionCode: String? = nil,
                startTime: String? = nil) {
        self.rawSubscriptionState = rawSubscriptionState
        self.rawAcknowledgementState = rawAcknowledgementState
        self.lineItems = lineItems
        self.latestOrderId = latestOrderId
        self.linkedPurchaseToken = linkedPurchaseToken
        self.isTestPurchase = isTestPurchase
        self.obfuscatedExternalAccountId = obfuscatedExternalAccountId
        self.regionCode = regionCode
        self.startTime = startTime
    }

    /// Reads Google's answer; nil when it is not a JSON object. Line items without a product id are skipped.
    package init?(json: JSONValue) {
        guard json.objectMembers != nil else { return nil }
        func string(_ value: JSONValue?) -> String? {
            guard case let .string(text)? = value, !text.isEmpty else { return nil }
            return text
        }
        let items = (json["lineItems"]?.arrayValue ?? []).compactMap { item -> LineItem? in
            guard let productId = string(item["productId"]) else { return nil }
            return LineItem(productId: productId, expiryTime: string(item["expiryTime"]),
                            latestSuccessfulOrderId: string(item["latestSuccessfulOrderId"]))
        }
        self.init(rawSubscriptionState: string(json["subscriptionState"]),
                  rawAcknowledgementState: string(json["acknowledgementState"]), lineItems: items,
                  latestOrderId: string(json["latestOrderId"]),
                  linkedPurchaseToken: string(json["linkedPurchaseToken"]).flatMap(PurchaseToken.init),
                  isTestPurchase: json["testPurchase"].map { $0 != .null } ?? false,
                  obfuscatedExternalAccountId: string(json["externalAccountIdentifiers"]?["obfuscatedExternalAccountId"]),
                  regionCode: string(json["regionCode"]), startTime: string(json["startTime"]))
        outOfAppPurchase = Self.outOfAppPurchase(json["outOfAppPurchaseContext"])
        onHold = Self.declinedRenewal(json["onHoldStateContext"])
        inGracePeriod = Self.declinedRenewal(json["inGracePeriodStateContext"])
    }

    /// The answer as Google sends it (for the fake Google and round-trip tests).
    package var json: JSONValue {
        var members: [(String, JSONValue)] = [("kind", .string("androidpublisher#subscriptionPurchaseV2"))]
        if let regionCode { members.append(("regionCode", .string(regionCode))) }
        if let startTime { members.append(("startTime", .string(startTime))) }
        if let rawSubscriptionState { members.append(("subscriptionState", .string(rawSubscriptionState))) }
        if let latestOrderId { members.append(("latestOrderId", .string(latestOrderId))) }
        if let linkedPurchaseToken { members.append(("linkedPurchaseToken", .string(linkedPurchaseToken.value))) }
        if let rawAcknowledgementState { members.append(("acknowledgementState", .string(rawAcknowledgementState))) }
        if let obfuscatedExternalAccountId {
            members.append(("externalAccountIdentifiers", .object([("obfuscatedExternalAccountId", .string(obfuscatedExternalAccountId))])))
        }
        if isTestPurchase { members.append(("testPurchase", .object([]))) }
        members += contextMembers
        members.append(("lineItems", .array(lineItems.map { item in
            var fields: [(String, JSONValue)] = [("productId", .string(item.productId))]
            if let expiryTime = item.expiryTime { fields.append(("expiryTime", .string(expiryTime))) }
            if let id = item.latestSuccessfulOrderId { fields.append(("latestSuccessfulOrderId", .string(id))) }
            return .object(fields)
        })))
        return .object(members)
    }

    /// The line item of `productId`, else the first one (a purchase names its products itself).
    package func lineItem(_ productId: String?) -> LineItem? {
        lineItems.first { $0.productId == productId } ?? lineItems.first
    }
}
