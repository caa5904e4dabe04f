import SettleModel

/// What the App Store is by nature; its module registers it.
extension StoreDescriptor {
    /// Apple: per app and endpoint, sandbox at a tenth.
    /// https://developer.apple.com/documentation/appstoreserverapi/identifying-rate-limits
    /// Apple needs nothing to call an order delivered; its Finish Transaction, where configured,
    /// follows the order's `finished`.
    package static let appStore: StoreDescriptor = {
        var descriptor = StoreDescriptor(
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
        descriptor.help = [
            "transaction": "an Apple transaction id (or original transaction id)",
            "order_lookup": "an Apple order id from the customer's receipt email (e.g. MQ5Q8W3X2Z) is looked up with Apple "
                + "first (Look Up Order ID; needs server_api)",
            "refunded": "refunded or revoked (Apple)",
            "ledger": "the Apple breaker, App Store Server Notifications: the notifications, revokes and refund-request "
                + "answers owed or done, where the history catch-up resumes",
        ]
        descriptor.reservedOrderIdPrefix = "apple-"
        return descriptor
    }()
}
