import SettleBase

/// One IAP Kit key-event notification (v3) once its `jwsNotification` verified
/// (NotificationPayload, huawei-appgallery.md 1.7): what changed, about which purchase. It only
/// says that something changed; settle reads the purchase from Huawei before acting on a new
/// one, and takes a revocation as Huawei signed it.
package struct HuaweiNotification: Sendable, Equatable {
    package var type: String
    package var subtype: String?
    /// Unique per notification: the key it is stored and deduplicated by.
    package var requestId: String
    package var environment: String?
    package var applicationId: String?
    /// 0 consumable, 1 non-consumable, 2 auto-renewing, 3 non-renewing subscription.
    package var productType: Int?
    package var productId: String?
    package var subscriptionId: String?
    package var purchaseToken: String?
    /// Absent for `DID_CHANGE_RENEWAL_STATUS` + `DOWNGRADE`, and for a refund request.
    package var purchaseOrderId: String?
    package var signedTimeMs: Int64?

    package struct Invalid: Error, Sendable, Equatable {
        package var message: String
    }

    package init(json: JSONValue) throws(Invalid) {
        guard case let .string(type)? = json["notificationType"], !type.isEmpty else {
            throw Invalid(message: "the notification has no notificationType string")
        }
        guard let requestId = json["notificationRequestId"]?.looseString, !requestId.isEmpty, requestId.count <= 256,
            requestId.unicodeScalars.allSatisfy({ (0x21...0x7E).contains($0.value) })
        else {
            throw Invalid(message: "the notification has no usable notificationRequestId")
        }
        self.type = String(type.prefix(64))
        self.requestId = requestId
        subtype = json["notificationSubtype"]?.looseString.map { String($0.prefix(64)) }
        let meta = json["notificationMetaData"] ?? .null
        environment = meta["environment"]?.looseString
        applicationId = meta["applicationId"]?.looseString
        productType = meta["type"]?.looseString.flatMap { Int($0) }
        productId = meta["currentProductId"]?.looseString
        subscriptionId = meta["subscriptionId"]?.looseString
        purchaseToken = meta["purchaseToken"]?.looseString.flatMap { $0.isEmpty ? nil : $0 }
        purchaseOrderId = meta["purchaseOrderId"]?.looseString.flatMap { $0.isEmpty ? nil : $0 }
        signedTimeMs = json["signedTime"]?.looseInt64
    }

    /// Whether it tells of a purchase to deliver: a new transaction (first purchase, renewal,
    /// restore, up- or downgrade, billing recovery).
    package var isNewTransaction: Bool { type == "DID_NEW_TRANSACTION" }
    /// Whether it tells that Huawei took a purchase back (refunded, or a subscription revoked).
    package var isRevocation: Bool { type == "REVOKE" }
    package var isSubscription: Bool { productType == 2 }
}
