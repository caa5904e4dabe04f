import SettleModel

extension Store {
    /// The App Store's identifier, as the ledger and the configuration spell it.
    package static let appStore = Store(rawValue: "app_store")
}

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
        descriptor.accountIdIsUUID = true
        descriptor.help = [
            "transaction": "an Apple transaction id (or original transaction id)",
            "order_lookup": "an Apple order id from the customer's receipt email (e.g. MQ5Q8W3X2Z) is looked up with Apple "
                + "first (Look Up Order ID; needs server_api)",
            "refunded": "refunded or revoked (Apple)",
            "account_id": "Apple's appAccountToken",
            "assign": "For an App Store purchase, when users have tokens (user_binding.app_account_token \"user_id\" with a "
                + "UUID user id, or \"uuid5\") and server_api is configured: once the pass has verified the purchase as "
                + "USER_ID's, settle asks Apple to set the user's appAccountToken on it (Set App Account Token), so its renewals "
                + "and Apple's notifications of them bind by themselves. The outcome is in the order's history (settle status "
                + "ORDER_ID): account_token_set, or account_token_refused with Apple's error (4000185: a family member's "
                + "shared purchase, which takes no token; settle link binds those); temporary failures are retried up to "
                + "schedule.max_attempts. A failure never undoes the assignment.",
            "ledger": "the Apple breaker, App Store Server Notifications: the notifications, revokes and refund-request "
                + "answers owed or done, where the history catch-up resumes",
        ]
        descriptor.reservedOrderIdPrefix = "apple-"
        // A REVOKE notification is Family Sharing's: the family member asked for no refund.
        descriptor.refundKindsNotTheCustomers = ["REVOKE"]
        // verifyReceipt: Apple publishes no limit, so the pacer learns it under this ceiling
        // (`receipt_api.rate_limits`). High enough never to slow an app Apple serves faster (it
        // only caps the climb after a 429), and its floor (a 64th, about 16/s) is still a rate
        // at which a 429 means Apple is in trouble, not settle too fast.
        descriptor.learnedRates = [AppStoreRateGroups.verifyReceipt: 1000]
        return descriptor
    }()
}
