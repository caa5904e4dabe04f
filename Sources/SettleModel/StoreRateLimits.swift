import SettleBase

/// The stores' published rate limits, requests a second per endpoint group, and the pacer keys
/// settle's calls fall under (issue 27).
///
/// Apple: per app and endpoint, sandbox at a tenth.
/// https://developer.apple.com/documentation/appstoreserverapi/identifying-rate-limits
/// Google: 3,000 queries a minute per bucket of the Play Developer API, each bucket independent.
/// https://developers.google.com/android-publisher/quotas
/// The Voided Purchases API has a quota of its own, far below that; settle reads it once an
/// hour, so one a second is ample. https://developers.google.com/android-publisher/voided-purchases
package enum StoreRateLimits {
    package static let appleGroups: [String: Double] = [
        "transaction_info": 50, "transaction_history": 50, "subscription_statuses": 50, "consumption": 50,
        "notification_history": 50, "finish_transaction": 50, "app_transaction_info": 50,
        "app_account_token": 20, "extend_renewal_date": 20,
        "order_lookup": 10, "refund_history": 10,
    ]
    /// Apple's sandbox limits are this fraction of production's.
    package static let appleSandboxFraction = 0.1

    package static let googleGroups: [String: Double] = [
        "one_time_purchases": 50, "subscriptions": 50, "orders": 50, "voided_purchases": 1,
    ]

    /// The requests a second a key may make: the configured value for its group, else the
    /// published one; Apple's sandbox at a tenth of either. Nil for a key settle does not know.
    package static func rate(_ key: PacerKey, apple: [String: Double], google: [String: Double]) -> Double? {
        switch key.store {
        case Store.appStore.rawValue:
            guard let rate = apple[key.group] ?? appleGroups[key.group] else { return nil }
            return key.environment == AppleEnvironment.sandbox.rawValue ? rate * appleSandboxFraction : rate
        case Store.googlePlay.rawValue:
            return google[key.group] ?? googleGroups[key.group]
        default:
            return nil
        }
    }

    /// The Server API endpoint group of a request path (`/inApps/v1/lookup/...` is order_lookup).
    package static func appleGroup(method: String, path: String) -> String {
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

    /// Which work an Apple endpoint group serves, for the pacer's priorities.
    package static func applePriority(group: String) -> PacerPriority {
        switch group {
        case "order_lookup", "refund_history": .supportLookup
        case "consumption": .consumptionAnswers
        case "notification_history": .historyCatchUp
        default: .dueOrders
        }
    }

    /// The Play Developer API bucket of a call name (`products.get`, `orders.reviewrefund`, ...).
    package static func googleGroup(call: String) -> String {
        if call.hasPrefix("products") { return "one_time_purchases" }
        if call.hasPrefix("subscriptions") { return "subscriptions" }
        if call.hasPrefix("voided") { return "voided_purchases" }
        return "orders"
    }

    /// Acknowledging and consuming is what keeps Google from refunding a purchase after three
    /// days: that work goes first. `orders.get` is support's lookup.
    package static func googlePriority(call: String) -> PacerPriority {
        if call.hasSuffix(".acknowledge") || call.hasSuffix(".consume") { return .refundDeadline }
        if call == "orders.get" { return .supportLookup }
        if call.hasPrefix("voided") { return .historyCatchUp }
        return .dueOrders
    }
}
