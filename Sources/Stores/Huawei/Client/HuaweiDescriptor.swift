import SettleModel

extension Store {
    /// Huawei AppGallery's identifier, as the ledger and the configuration spell it.
    package static let huawei = Store(rawValue: "huawei")
}

/// What Huawei AppGallery (HarmonyOS IAP Kit) is by nature; its module registers it.
extension StoreDescriptor {
    /// An IAP Kit purchase must be told it shipped ("shipped confirm") after the grant: an
    /// unconfirmed consumable cannot be bought again, so a Huawei order stays `delivering` until
    /// Huawei was told. Huawei documents no automatic refund of an unconfirmed purchase (Google's
    /// three days), so no refund window; an unconfirmed subscription is cleaned after 180 days.
    /// Huawei publishes one rate: the notification history query, one call a second. The
    /// order and subscription queries have none published: they are not paced.
    /// Reference: huawei-appgallery.md sections 1.4 and 3.
    package static let huawei: StoreDescriptor = {
        var descriptor = StoreDescriptor(
            store: .huawei, displayName: "Huawei AppGallery", owner: "Huawei", logName: "huawei",
            unconfiguredHint: "no huawei section is configured",
            deliveryNotice: .beforeFinished(refundWindowSeconds: nil),
            publishedRates: ["notification_history": 1])
        descriptor.help = [
            "transaction": "a Huawei purchaseOrderId",
            "refunded": "revoked (Huawei AppGallery)",
            "account_id": "Huawei's developerPayload",
            "grant_recorded":
                "For a Huawei purchase, TXN is its purchaseOrderId; its order is still confirmed as shipped "
                + "with Huawei at its next pass, never delivered.",
        ]
        descriptor.reservedOrderIdPrefix = "huawei-"
        descriptor.accountIdLabel = "developer payload"
        descriptor.finishName = "shipped confirm"
        return descriptor
    }()
}
