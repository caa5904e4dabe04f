import SettleBase
import SettleModel

/// A Google Play real-time developer notification, the JSON inside a Pub/Sub message's `data`.
/// https://developer.android.com/google/play/billing/rtdn-reference
///
/// It only says that something changed: the purchase itself must be read from the API before
/// acting. Kinds Google adds later decode as `.unknown` naming their field, and the message's
/// raw bytes stay with `PubSubPush`, so nothing is lost.
package struct DeveloperNotification: Sendable, Equatable {
    package var version: String?
    package var packageName: String?
    package var eventTimeMillis: Int64?
    package var kind: Kind

    package enum Kind: Sendable, Equatable {
        case oneTimeProduct(OneTimeProductNotification)
        case subscription(SubscriptionNotification)
        case voidedPurchase(VoidedPurchaseNotification)
        /// A refund or chargeback Google asks the developer to review within 24 hours.
        case pendingRefundReview(PendingRefundReviewNotification)
        /// Sent from Play Console's "Send test notification": proves the wiring, changes nothing.
        case test
        /// None of the kinds settle knows; the names of the object's other fields.
        case unknown([String])
    }

    /// Why `data` is not a notification settle can use. Raw values are fixed: safe as metric labels.
    package enum Problem: String, Error, Sendable {
        case notAnObject = "not_an_object"
        /// A known kind without the purchase token it must carry.
        case missingPurchaseToken = "missing_purchase_token"
        /// A pending refund review without the token its answer must carry, or without its order id.
        case incompleteRefundReview = "incomplete_refund_review"
    }

    package init(version: String? = "1.0", packageName: String?, eventTimeMillis: Int64?, kind: Kind) {
        self.version = version
        self.packageName = packageName
        self.eventTimeMillis = eventTimeMillis
        self.kind = kind
    }

    package init(json: JSONValue) throws(Problem) {
        guard let members = json.objectMembers else { throw .notAnObject }
        func token(_ object: JSONValue) throws(Problem) -> PurchaseToken {
            guard case let .string(text)? = object["purchaseToken"], let token = PurchaseToken(text) else { throw .missingPurchaseToken }
            return token
        }
        func int(_ object: JSONValue, _ key: String) -> Int? { object[key]?.looseInt64.flatMap { Int(exactly: $0) } }
        func string(_ object: JSONValue, _ key: String) -> String? { object[key]?.looseString }
        let kind: Kind
        if let n = json["oneTimeProductNotification"] {
            kind = .oneTimeProduct(OneTimeProductNotification(rawNotificationType: int(n, "notificationType"),
                                                              purchaseToken: try token(n), sku: string(n, "sku")))
        } else if let n = json["subscriptionNotification"] {
            kind = .subscription(SubscriptionNotification(rawNotificationType: int(n, "notificationType"),
                                                          purchaseToken: try token(n), subscriptionId: string(n, "subscriptionId")))
        } else if let n = json["voidedPurchaseNotification"] {
            kind = .voidedPurchase(VoidedPurchaseNotification(purchaseToken: try token(n), orderId: string(n, "orderId"),
                                                              rawProductType: int(n, "productType"), rawRefundType: int(n, "refundType")))
        } else if let n = json["pendingRefundReviewNotification"] {
            guard let token = string(n, "pendingRefundToken"), !token.isEmpty, let orderId = string(n, "orderId"), !orderId.isEmpty else {
                throw .incompleteRefundReview
            }
            kind = .pendingRefundReview(PendingRefundReviewNotification(
                pendingRefundToken: token, orderId: orderId, rawRefundReason: int(n, "refundReason"),
                obfuscatedAccountId: string(n, "obfuscatedAccountId"), obfuscatedProfileId: string(n, "obfuscatedProfileId")))
        } else if json["testNotification"] != nil {
            kind = .test
        } else {
            let common: Set<String> = ["version", "packageName", "eventTimeMillis"]
            kind = .unknown(members.map(\.0).filter { !common.contains($0) })
        }
        self.init(version: string(json, "version"), packageName: string(json, "packageName"),
                  eventTimeMillis: json["eventTimeMillis"]?.looseInt64, kind: kind)
    }

    /// The notification as Google sends it (for the fake Google and tests).
    package var json: JSONValue {
        var members: [(String, JSONValue)] = []
        if let version { members.append(("version", .string(version))) }
        if let packageName { members.append(("packageName", .string(packageName))) }
        if let eventTimeMillis { members.append(("eventTimeMillis", .string(String(eventTimeMillis)))) }
        switch kind {
        case let .oneTimeProduct(n):
            members.append(("oneTimeProductNotification", .object([
                ("version", .string("1.0")), ("notificationType", .number(n.rawNotificationType)),
                ("purchaseToken", .string(n.purchaseToken.value)), ("sku", .string(n.sku))])))
        case let .subscription(n):
            // Google's current example leaves the deprecated subscriptionId out.
            var fields: [(String, JSONValue)] = [("version", .string("1.0")), ("notificationType", .number(n.rawNotificationType)),
                                                 ("purchaseToken", .string(n.purchaseToken.value))]
            if let id = n.subscriptionId { fields.append(("subscriptionId", .string(id))) }
            members.append(("subscriptionNotification", .object(fields)))
        case let .voidedPurchase(n):
            members.append(("voidedPurchaseNotification", .object([
                ("purchaseToken", .string(n.purchaseToken.value)), ("orderId", .string(n.orderId)),
                ("productType", .number(n.rawProductType)), ("refundType", .number(n.rawRefundType))])))
        case let .pendingRefundReview(n):
            var fields: [(String, JSONValue)] = [("version", .string("1.0")), ("pendingRefundToken", .string(n.pendingRefundToken)),
                                                 ("orderId", .string(n.orderId))]
            if let reason = n.rawRefundReason { fields.append(("refundReason", .number(reason))) }
            if let id = n.obfuscatedAccountId { fields.append(("obfuscatedAccountId", .string(id))) }
            if let id = n.obfuscatedProfileId { fields.append(("obfuscatedProfileId", .string(id))) }
            members.append(("pendingRefundReviewNotification", .object(fields)))
        case .test:
            members.append(("testNotification", .object([("version", .string("1.0"))])))
        case let .unknown(fields):
            for field in fields { members.append((field, .object([]))) }
        }
        return .object(members)
    }
}

package struct OneTimeProductNotification: Sendable, Equatable {
    package enum NotificationType: Int, Sendable {
        case purchased = 1
        case canceled = 2
    }

    package var rawNotificationType: Int?
    package var purchaseToken: PurchaseToken
    /// The product id.
    package var sku: String?
    package var notificationType: NotificationType? { rawNotificationType.flatMap(NotificationType.init(rawValue:)) }

    package init(rawNotificationType: Int?, purchaseToken: PurchaseToken, sku: String?) {
        self.rawNotificationType = rawNotificationType
        self.purchaseToken = purchaseToken
        self.sku = sku
    }
}

package struct SubscriptionNotification: Sendable, Equatable {
    package enum NotificationType: Int, Sendable {
        case recovered = 1, renewed = 2, canceled = 3, purchased = 4, onHold = 5, inGracePeriod = 6, restarted = 7
        case priceChangeConfirmed = 8, deferred = 9, paused = 10, pauseScheduleChanged = 11, revoked = 12, expired = 13
        case pendingPurchaseCanceled = 20
    }

    package var rawNotificationType: Int?
    package var purchaseToken: PurchaseToken
    /// Deprecated by Google and absent from its current example: the product is read from
    /// `subscriptionsv2` (`lineItems[].productId`), never from here.
    package var subscriptionId: String?
    package var notificationType: NotificationType? { rawNotificationType.flatMap(NotificationType.init(rawValue:)) }

    package init(rawNotificationType: Int?, purchaseToken: PurchaseToken, subscriptionId: String?) {
        self.rawNotificationType = rawNotificationType
        self.purchaseToken = purchaseToken
        self.subscriptionId = subscriptionId
    }
}

package struct VoidedPurchaseNotification: Sendable, Equatable {
    package enum ProductType: Int, Sendable {
        case subscription = 1
        case oneTime = 2
    }

    package enum RefundType: Int, Sendable {
        case full = 1
        case quantityBasedPartial = 2
    }

    package var purchaseToken: PurchaseToken
    package var orderId: String?
    package var rawProductType: Int?
    package var rawRefundType: Int?
    package var productType: ProductType? { rawProductType.flatMap(ProductType.init(rawValue:)) }
    package var refundType: RefundType? { rawRefundType.flatMap(RefundType.init(rawValue:)) }

    package init(purchaseToken: PurchaseToken, orderId: String?, rawProductType: Int?, rawRefundType: Int?) {
        self.purchaseToken = purchaseToken
        self.orderId = orderId
        self.rawProductType = rawProductType
        self.rawRefundType = rawRefundType
    }
}

/// Google asks for a review of a refund or chargeback of one order, to be answered within 24
/// hours with `orders.reviewrefund` (the Play twin of the App Store's CONSUMPTION_REQUEST). It
/// carries no purchase token: the order is named by its id. The pending refund token is what the
/// answer must quote; it goes to Google and nowhere else (never a log, history or status).
/// https://developer.android.com/google/play/billing/rtdn-reference#pending-refund-review
package struct PendingRefundReviewNotification: Sendable, Equatable {
    package var pendingRefundToken: String
    /// `GPA.…`, the order under review (one period, for a subscription).
    package var orderId: String
    package var rawRefundReason: Int?
    package var obfuscatedAccountId: String?
    package var obfuscatedProfileId: String?

    package init(pendingRefundToken: String, orderId: String, rawRefundReason: Int? = nil, obfuscatedAccountId: String? = nil,
                obfuscatedProfileId: String? = nil) {
        self.pendingRefundToken = pendingRefundToken
        self.orderId = orderId
        self.rawRefundReason = rawRefundReason
        self.obfuscatedAccountId = obfuscatedAccountId
        self.obfuscatedProfileId = obfuscatedProfileId
    }
}
