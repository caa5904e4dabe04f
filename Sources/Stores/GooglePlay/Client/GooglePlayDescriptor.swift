import SettleModel

/// What Google Play is by nature; its module registers it.
extension StoreDescriptor {
    /// Google refunds a purchase not acknowledged (or consumed) within three days, so a Play
    /// order stays `delivering` until Google was told.
    /// Google: 3,000 queries a minute per bucket of the Play Developer API, each bucket independent.
    /// https://developers.google.com/android-publisher/quotas
    /// The Voided Purchases API has a quota of its own, far below that; settle reads it once an
    /// hour, so one a second is ample. https://developers.google.com/android-publisher/voided-purchases
    package static let googlePlay = StoreDescriptor(
        store: .googlePlay, displayName: "Google Play", owner: "Google", logName: "google_play",
        unconfiguredHint: "no google_play section is configured", deliveryNotice: .beforeFinished(refundWindowSeconds: 3 * 86_400),
        publishedRates: ["one_time_purchases": 50, "subscriptions": 50, "orders": 50, "voided_purchases": 1],
        productStoreAliases: ["both"], hasPurchaseOptions: true)
}
