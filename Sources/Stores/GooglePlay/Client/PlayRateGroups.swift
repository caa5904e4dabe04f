import SettleBase

/// Which Play Developer API quota bucket a call falls under, and which work it serves for the
/// pacer's priorities.
package enum PlayRateGroups {
    /// The bucket of a call name (`products.get`, `orders.reviewrefund`, ...).
    package static func group(call: String) -> String {
        if call.hasPrefix("products") { return "one_time_purchases" }
        if call.hasPrefix("subscriptions") { return "subscriptions" }
        if call.hasPrefix("voided") { return "voided_purchases" }
        return "orders"
    }

    /// Acknowledging and consuming is what keeps Google from refunding a purchase after three
    /// days: that work goes first. `orders.get` is support's lookup.
    package static func priority(call: String) -> PacerPriority {
        if call.hasSuffix(".acknowledge") || call.hasSuffix(".consume") { return .refundDeadline }
        if call == "orders.get" { return .supportLookup }
        if call.hasPrefix("voided") { return .historyCatchUp }
        return .dueOrders
    }
}
