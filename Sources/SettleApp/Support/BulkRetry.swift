import SettleBase
import SettleModel
import SettleLedger

/// Many orders handed back to the machine at once, after an incident (`settle retry --reason`,
/// the console's lists): in chunks, each order recorded with its operator, and only while it is
/// as it was listed: an order that changed since (a person resolved it, a notification finished
/// it) or that cannot be retried (no buyer) is skipped with its reason; the others go on.
package enum BulkRetry {
    package typealias Outcome = ListedRetry

    static let chunk = 200

    /// Retries `orderIds`, in chunks, each only while it is as it was listed (in `state`, set
    /// aside as `reason` when one is named).
    package static func run(_ ledger: any SettleLedger, orderIds: [String], state: OrderState, reason: String?, note: String,
                            by person: Operator) throws -> Outcome {
        var outcome = Outcome()
        var start = 0
        while start < orderIds.count {
            let ids = Array(orderIds[start..<min(orderIds.count, start + chunk)])
            start += chunk
            let done = try ledger.retryListed(orderIds: ids, state: state, reason: reason, note: note, by: person)
            outcome.retried += done.retried
            outcome.skipped += done.skipped
        }
        return outcome
    }

    /// Every order of a list (all pages), newest change first, at most `cap`.
    package static func orderIds(_ ledger: any SettleLedger, _ query: OrderList.Query, cap: Int) throws -> (ids: [String], total: Int) {
        var query = query
        query.limit = 500
        var ids: [String] = []
        var total = 0
        repeat {
            let page = try ledger.orderList(query)
            total = max(total, page.total)
            ids += page.orders.map(\.orderId)
            query.after = page.next
        } while query.after != nil && ids.count < cap
        return (Array(ids.prefix(cap)), total)
    }

    /// What a retry of orders set aside as `reason` will most likely do, when it is not a fix.
    package static func warning(reason: String) -> String? {
        guard let advice = Verdict.retryAdvice(reason) else { return nil }
        return "orders set aside as \(reason) (\(Verdict.explanation(reason))) will most likely end the same way: "
            + advice.replacingOccurrences(of: " ID", with: " ORDER")
    }

    /// Reasons whose orders cannot be retried at all.
    package static func refusal(reason: String) -> String? {
        reason == AttentionReason.unclaimedPurchase.rawValue
            ? "orders without a buyer (unclaimed_purchase) cannot be retried: give each its buyer with settle assign ORDER --user USER_ID"
            : nil
    }
}
