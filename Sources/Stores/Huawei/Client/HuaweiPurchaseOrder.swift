import SettleBase

/// One IAP Kit purchase order as Huawei signs it (`jwsPurchaseOrder`, a subscription's
/// `lastPurchaseOrder`; PurchaseOrderPayload, huawei-appgallery.md section 1.5), once its JWS
/// verified. Unknown fields are ignored, as Huawei asks; a field settle needs with the wrong
/// type makes the payload invalid, never a guess.
package struct HuaweiPurchaseOrder: Sendable, Equatable {
    package enum ProductType: String, Sendable {
        case consumable = "0"
        case nonConsumable = "1"
        case autoRenewable = "2"
        case nonRenewing = "3"
    }

    package var environment: String
    package var purchaseOrderId: String
    package var purchaseToken: String
    package var applicationId: String
    package var productId: String
    package var productType: ProductType
    /// How many were bought at once (consumables and non-renewing subscriptions); 1 when absent.
    package var quantity: Int
    /// When the purchase completed; absent for one that did not.
    package var purchaseTimeMs: Int64?
    /// `"1"` shipped, `"2"` not shipped.
    package var finishStatus: String?
    package var developerPayload: String?
    /// Present when Huawei revoked (refunded) the order.
    package var revocationTimeMs: Int64?
    package var revocationReasonCode: String?
    package var price: Int64?
    package var currency: String?
    package var subscriptionId: String?
    package var signedTimeMs: Int64?

    /// The largest `quantity` settle grants in one order; a larger one is an invalid payload.
    package static let maxQuantity = 10_000

    package struct Invalid: Error, Sendable, Equatable {
        package var message: String
    }

    package init(json: JSONValue) throws(Invalid) {
        func string(_ key: String) throws(Invalid) -> String {
            guard case let .string(value)? = json[key], !value.isEmpty else {
                throw Invalid(message: "the purchase order has no \(key) string")
            }
            return value
        }
        func optionalString(_ key: String) throws(Invalid) -> String? {
            switch json[key] {
            case nil, .null?: return nil
            case let .string(value)?: return value
            case let value?:
                throw Invalid(message: "the purchase order's \(key) is a \(value.typeName), expected a string")
            }
        }
        /// A string, or a number Huawei may send for it.
        func loose(_ key: String) throws(Invalid) -> String {
            guard let value = json[key]?.looseString, !value.isEmpty else {
                throw Invalid(message: "the purchase order has no \(key) string")
            }
            return value
        }
        func optionalLoose(_ key: String) throws(Invalid) -> String? {
            switch json[key] {
            case nil, .null?: return nil
            case let value?:
                guard let text = value.looseString else {
                    throw Invalid(message: "the purchase order's \(key) is a \(value.typeName), expected a string")
                }
                return text
            }
        }
        func milliseconds(_ key: String) throws(Invalid) -> Int64? {
            switch json[key] {
            case nil, .null?: return nil
            case let value?:
                guard let ms = value.looseString.flatMap({ Int64($0) }), ms >= 0 else {
                    throw Invalid(message: "the purchase order's \(key) is not a whole number of milliseconds")
                }
                return ms
            }
        }
        environment = try string("environment")
        purchaseOrderId = try string("purchaseOrderId")
        purchaseToken = try string("purchaseToken")
        applicationId = try loose("applicationId")
        productId = try string("productId")
        let type = try loose("productType")
        guard let productType = ProductType(rawValue: type) else {
            throw Invalid(
                message:
                    "the purchase order's productType \(JSONValue.string(String(type.prefix(16))).serialized()) is not 0, 1, 2 or 3"
            )
        }
        self.productType = productType
        switch json["quantity"] {
        case nil, .null?:
            quantity = 1
        case let value?:
            guard let count = value.looseString.flatMap({ Int($0) }), (1...Self.maxQuantity).contains(count) else {
                throw Invalid(
                    message: "the purchase order's quantity is not a whole number from 1 to \(Self.maxQuantity)")
            }
            quantity = count
        }
        purchaseTimeMs = try milliseconds("purchaseTime")
        finishStatus = try optionalLoose("finishStatus")
        developerPayload = try optionalString("developerPayload")
        revocationTimeMs = try milliseconds("revocationTime")
        revocationReasonCode = try optionalLoose("purchaseOrderRevocationReasonCode")
        price = try milliseconds("price")
        currency = try optionalString("currency")
        subscriptionId = try optionalString("subscriptionId")
        signedTimeMs = try milliseconds("signedTime")
    }
}

/// One subscription's state in a group (SubscriptionStatus of a SubGroupStatusPayload): grant a
/// period only while `status` is `"1"`.
package struct HuaweiSubscriptionStatus: Sendable, Equatable {
    package enum State: String, Sendable {
        case active = "1"
        case expired = "2"
        case billingRetry = "3"
        case revoked = "5"
    }

    package var subscriptionId: String?
    package var purchaseToken: String
    /// Nil for a status Huawei added after this was written: never granted on.
    package var state: State?
    package var rawStatus: String
    package var expiresTimeMs: Int64?
    package var lastPurchaseOrder: HuaweiPurchaseOrder
    package var recentPurchaseOrders: [HuaweiPurchaseOrder]

    package init(json: JSONValue) throws(HuaweiPurchaseOrder.Invalid) {
        guard case let .string(token)? = json["purchaseToken"], !token.isEmpty else {
            throw .init(message: "the subscription status has no purchaseToken string")
        }
        purchaseToken = token
        subscriptionId = json["subscriptionId"]?.looseString
        rawStatus = json["status"]?.looseString ?? ""
        state = State(rawValue: rawStatus)
        expiresTimeMs = json["expiresTime"]?.looseString.flatMap { Int64($0) }
        guard let last = json["lastPurchaseOrder"], last.objectMembers != nil else {
            throw .init(message: "the subscription status has no lastPurchaseOrder object")
        }
        lastPurchaseOrder = try HuaweiPurchaseOrder(json: last)
        var recent: [HuaweiPurchaseOrder] = []
        for entry in json["recentPurchaseOrderList"]?.arrayValue ?? [] {
            recent.append(try HuaweiPurchaseOrder(json: entry))
        }
        recentPurchaseOrders = recent
    }

    /// The statuses of a SubGroupStatusPayload: the last one and its history.
    package static func all(in group: JSONValue) throws(HuaweiPurchaseOrder.Invalid) -> [HuaweiSubscriptionStatus] {
        var statuses: [HuaweiSubscriptionStatus] = []
        if let last = group["lastSubscriptionStatus"], last.objectMembers != nil {
            statuses.append(try HuaweiSubscriptionStatus(json: last))
        }
        for entry in group["historySubscriptionStatusList"]?.arrayValue ?? [] {
            statuses.append(try HuaweiSubscriptionStatus(json: entry))
        }
        return statuses
    }
}
