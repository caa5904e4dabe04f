import SettleBase

/// The two stores whose ledger tables, configuration sections and transitions still live in the
/// core (issue 33 moves them into their modules, `Sources/Stores/<Store>/`): their identifiers
/// and descriptors, registered before anything else. A store that arrives as a module registers
/// its own descriptor instead and is named nowhere here.
package enum BuiltInStores {
    static let descriptors: [StoreDescriptor] = [.appStore, .googlePlay]
}

extension Store {
    package static let appStore = Store(rawValue: "app_store")
    package static let googlePlay = Store(rawValue: "google_play")
}

extension StoreDescriptor {
    /// Apple: per app and endpoint, sandbox at a tenth.
    /// https://developer.apple.com/documentation/appstoreserverapi/identifying-rate-limits
    /// Apple needs nothing to call an order delivered; its Finish Transaction, where configured,
    /// follows the order's `finished`.
    package static let appStore = StoreDescriptor(
        store: .appStore, displayName: "App Store", owner: "Apple", logName: "apple",
        unconfiguredHint: "neither receipt_api nor server_api is configured", deliveryNotice: .afterFinished,
        publishedRates: [
            "transaction_info": 50, "transaction_history": 50, "subscription_statuses": 50, "consumption": 50,
            "notification_history": 50, "finish_transaction": 50, "app_transaction_info": 50,
            "app_account_token": 20, "extend_renewal_date": 20,
            "order_lookup": 10, "refund_history": 10,
        ],
        environmentRateFractions: [AppleEnvironment.sandbox.rawValue: 0.1],
        isDefaultForProducts: true, productStoreAliases: ["both"], heldUnnamedOrders: true)

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
