import SettleModel

extension Store {
    /// ONE store's identifier, as the ledger and the configuration spell it.
    package static let oneStore = Store(rawValue: "one_store")
}

/// What ONE store is by nature; its module registers it.
extension StoreDescriptor {
    /// ONE store refunds a purchase not acknowledged or consumed within three days (since
    /// 2023-12-01, for IAP library V6 and later), exactly as Google does: an order stays
    /// `delivering` until ONE store was told. It publishes no rate limits.
    /// Reference: one-store.md sections 4 and 5.
    package static let oneStore: StoreDescriptor = {
        var descriptor = StoreDescriptor(
            store: .oneStore, displayName: "ONE store", owner: "ONE store", logName: "one_store",
            unconfiguredHint: "no one_store section is configured",
            deliveryNotice: .beforeFinished(refundWindowSeconds: 3 * 86_400))
        descriptor.help = [
            "transaction": "a ONE store purchaseId",
            "refunded": "cancelled (ONE store)",
            "account_id": "ONE store's developerPayload",
            "grant_recorded":
                "For a ONE store purchase, TXN is its purchaseId; its order is still acknowledged or consumed with "
                + "ONE store at its next pass, never delivered.",
        ]
        descriptor.reservedOrderIdPrefix = "onestore-"
        descriptor.accountIdLabel = "developer payload"
        descriptor.finishName = "acknowledge or consume"
        return descriptor
    }()
}
