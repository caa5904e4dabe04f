import SettleBase
import SettleModel
import SettleLedger

/// Many orders handed back to the machine at once, after an incident (`settle retry --reason`,
/// the console's lists): the same `retry` the one-order action makes, in chunks, each order
/// recorded with its operator. An order that changed since it was listed (a person resolved it,
/// a notification finished it) or that cannot be retried (no buyer) is skipped with its
/// reason; the others go on.
package enum BulkRetry {
    package struct Outcome: Sendable, Equatable {
        package var retried: [String] = []
        package var skipped: [Skip] = []
    }

    package struct Skip: Error, Sendable, Equatable {
        package var orderId: String
        package var why: String
    }

    static let chunk = 200

    package static func run(_ ledger: any SettleLedger, orderIds: [String], note: String, by person: Operator) throws -> Outcome {
        var outcome = Outcome()
        var start = 0
        while start < orderIds.count {
            let ids = Array(orderIds[start..<min(orderIds.count, start + chunk)])
            start += chunk
            if let retried = try retryAll(ledger, ids, note: note, by: person) {
                outcome.retried += retried
                continue
            }
            // All or nothing refused the chunk: one by one, so the others go on.
            for id in ids {
                switch try retryOne(ledger, id, note: note, by: person) {
                case let .success(retried): outcome.retried += retried
                case let .failure(skip): outcome.skipped.append(skip)
                }
            }
        }
        return outcome
    }

    /// The chunk retried, or nil when the ledger refused it as a whole (an order in it cannot be).
    private static func retryAll(_ ledger: any SettleLedger, _ ids: [String], note: String, by person: Operator) throws -> [String]? {
        do {
            return try ledger.retry(orderIds: ids, note: note, proof: nil, by: person).map(\.orderId)
        } catch {
            if case LedgerError.invalid = error { return nil }
            throw error
        }
    }

    private static func retryOne(_ ledger: any SettleLedger, _ id: String, note: String,
                                 by person: Operator) throws -> Result<[String], Skip> {
        do {
            return .success(try ledger.retry(orderIds: [id], note: note, proof: nil, by: person).map(\.orderId))
        } catch {
            if case let LedgerError.invalid(why) = error { return .failure(Skip(orderId: id, why: why)) }
            throw error
        }
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
