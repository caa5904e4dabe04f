import SettleModel

extension Store {
    /// Google Play's identifier, as the ledger and the configuration spell it.
    package static let googlePlay = Store(rawValue: "google_play")
}

/// What Google Play is by nature; its module registers it.
extension StoreDescriptor {
    /// Google refunds a purchase not acknowledged (or consumed) within three days, so a Play
    /// order stays `delivering` until Google was told.
    /// Google: 3,000 queries a minute per bucket of the Play Developer API, each bucket independent.
    /// https://developers.google.com/android-publisher/quotas
    /// The Voided Purchases API has a quota of its own, far below that; settle reads it once an
    /// hour, so one a second is ample. https://developers.google.com/android-publisher/voided-purchases
    package static let googlePlay: StoreDescriptor = {
        var descriptor = StoreDescriptor(
            store: .googlePlay, displayName: "Google Play", owner: "Google", logName: "google_play",
            unconfiguredHint: "no google_play section is configured", deliveryNotice: .beforeFinished(refundWindowSeconds: 3 * 86_400),
            publishedRates: ["one_time_purchases": 50, "subscriptions": 50, "orders": 50, "voided_purchases": 1],
            productStoreAliases: ["both"], hasPurchaseOptions: true)
        descriptor.help = [
            "transaction": "a Google Play order id (GPA....)",
            "order_lookup": "a Google order id with Google (orders.get; needs google_play)",
            "refunded": "voided (Google Play)",
            "account_id": "Google Play's obfuscatedExternalAccountId",
            "ledger": "Google Play's stored pushes and where the voided-purchases poll resumes",
            "grant_recorded": "For a Google Play purchase, TXN is Google's order id (GPA....), without --product; its order "
                + "is still acknowledged or consumed with Google at its next pass, never delivered.",
        ]
        descriptor.reservedOrderIdPrefix = "play-"
        descriptor.accountIdLabel = "account id"
        descriptor.accountIdMaxLength = 64
        descriptor.provenByPurchaseToken = true
        descriptor.finishName = "acknowledge or consume"
        return descriptor
    }()
}
