import SettleBase
import SettleModel
import SettleLedger

/// Refund history at the grant (issue 37): a flagged customer's grant waits for a person when
/// `refunds.hold_after` asks for it, and every grant hook call carries the buyer's count.
extension Reconciler {
    /// The store confirmed `order`'s purchase: with `refunds.hold_after` set, an order whose buyer
    /// has that many refunds in 90 days goes to `needs_attention` (`repeat_refunder`) in place
    /// of the hook, its history naming the count; never a silent refusal, and never after a grant
    /// (no purchase is reserved for it yet). An order a person already released (`settle retry`
    /// after the hold) goes on: the hold asks once per order. Counted just before the grant is
    /// reserved, on any host, from the ledger every host shares.
    func holdingForRefunds(_ verification: Verification, of order: Order) throws -> Verification {
        guard case .verified = verification.outcome, let holdAfter = configuration.refunds.holdAfter,
              !order.userId.isBlank else { return verification }
        let history = try ledger.refundHistory(of: order.userId, now: ledger.time.unixSeconds)
        guard history.count >= holdAfter, try !ledger.releasedFromRefundHold(orderId: order.orderId) else {
            return verification
        }
        var held = verification
        let orders = history.entries.prefix(5).map(\.orderId).joined(separator: ", ")
        let more = history.count > 5 ? ", …" : ""
        let detail = "user \(order.userId): \(history.text) refunds in the last 90 days (\(orders)\(more)), "
            + "refunds.hold_after is \(holdAfter); the grant waits for a person "
            + "(settle retry \(Verdict.shellWord(order.orderId)) grants it)"
        held.outcome = .needsAttention(reason: .repeatRefunder, detail: detail)
        return held
    }

    /// The orders about to be handed to the hook, each with its buyer's refunds in the last 90
    /// days (`refunds_90d`): as counted when its grant was reserved (`recordVerified`, in that
    /// transaction), or else (an order rescued or redelivered) counted now, once per user of the batch.
    func withRefundCounts(_ items: [(order: Order, purchase: VerifiedPurchase)]) throws
        -> [(order: Order, purchase: VerifiedPurchase)] {
        let now = ledger.time.unixSeconds
        var counts: [String: Int] = [:]
        var counted: [(order: Order, purchase: VerifiedPurchase)] = []
        for var item in items {
            guard item.order.refunds90d == nil else {
                counted.append(item)
                continue
            }
            let user = item.order.userId
            let count = try counts[user] ?? ledger.refundHistory(of: user, now: now).count
            counts[user] = count
            item.order.refunds90d = count
            counted.append(item)
        }
        return counted
    }
}

extension SupportActionRunner {
    /// A grant re-sent (`settle redeliver`) is the grant's document again: with its buyer's
    /// refunds in 90 days, counted now.
    func withRefundCount(_ order: Order) throws(LedgerError) -> Order {
        var counted = order
        counted.refunds90d = try ledger.refundHistory(of: order.userId, now: ledger.time.unixSeconds).count
        return counted
    }
}
