import SettleBase

/// Which Server API endpoint group (the unit Apple's published limits count) a request falls
/// under, and which work it serves for the pacer's priorities.
package enum AppStoreRateGroups {
    /// verifyReceipt's group: no published limit, its rate is learned (`StoreDescriptor.learnedRates`).
    package static let verifyReceipt = "verify_receipt"

    /// The Server API endpoint group of a request path (`/inApps/v1/lookup/...` is order_lookup).
    package static func group(method: String, path: String) -> String {
        let p = path.split(separator: "?").first.map(String.init) ?? path
        if p.hasPrefix("/inApps/v1/lookup/") { return "order_lookup" }
        if p.hasPrefix("/inApps/v2/refund/lookup/") { return "refund_history" }
        if p.hasPrefix("/inApps/v2/history/") || p.hasPrefix("/inApps/v1/history/") { return "transaction_history" }
        if p.hasPrefix("/inApps/v1/subscriptions/extend") { return "extend_renewal_date" }
        if p.hasPrefix("/inApps/v1/subscriptions/") { return "subscription_statuses" }
        if p.hasPrefix("/inApps/v1/notifications/history") { return "notification_history" }
        if p.contains("/transactions/consumption/") { return "consumption" }
        if p.hasPrefix("/inApps/v1/transactions/appTransactions/") { return "app_transaction_info" }
        if p.hasSuffix("/finish") { return "finish_transaction" }
        if p.hasSuffix("/appAccountToken") { return "app_account_token" }
        return "transaction_info"
    }

    /// Which work an endpoint group serves, for the pacer's priorities.
    package static func priority(group: String) -> PacerPriority {
        switch group {
        case "order_lookup", "refund_history": .supportLookup
        case "consumption": .consumptionAnswers
        case "notification_history": .historyCatchUp
        default: .dueOrders
        }
    }
}
