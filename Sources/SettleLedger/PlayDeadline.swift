import Foundation
import SettleBase
import SettleModel

/// A Google Play order that Google has not been told about yet (acknowledge or consume): Google
/// refunds the purchase three days after it was bought.
package struct PlayDeadline: Sendable, Equatable {
    package var orderId: String
    package var state: OrderState
    /// When Google refunds it unless acknowledged: purchase time (or, before Google confirmed it,
    /// the time it was enqueued) plus three days.
    package var refundAt: Int64
    /// Whether the time is the purchase's (Google confirmed) rather than estimated from the enqueue.
    package var exact: Bool
    /// The hook said delivered; only the acknowledgement is missing.
    package var delivered: Bool

    /// Google's window for acknowledging a purchase.
    package static let windowSeconds: Int64 = Store.googlePlay.refundWindowSeconds ?? 3 * 86_400
    /// Less than a day left: claimed first, warned about, counted in the metric.
    package static let urgentSeconds: Int64 = 86_400
    /// An order bought this long ago has less than `urgentSeconds` left.
    package static let urgentAfterSeconds: Int64 = windowSeconds - urgentSeconds

    package init(orderId: String, state: OrderState, refundAt: Int64, exact: Bool, delivered: Bool) {
        self.orderId = orderId
        self.state = state
        self.refundAt = refundAt
        self.exact = exact
        self.delivered = delivered
    }

    package func isUrgent(now: Int64) -> Bool { refundAt.saturatingSubtracting(now) < PlayDeadline.urgentSeconds }

    /// The stores among `only` (nil: all) that refund what they were not told of, each with how
    /// long after a purchase its order is urgent (less than `urgentSeconds` left): claimed first.
    package static func deadlineStores(_ only: Set<Store>?) -> [(store: Store, urgentAfter: Int64)] {
        Store.allCases.compactMap { store in
            guard let window = store.refundWindowSeconds, only?.contains(store) ?? true else { return nil }
            return (store, window - urgentSeconds)
        }
    }

    /// The Play orders Google has not heard were delivered, closest deadline first: those still
    /// being worked on, and those waiting for a person while Google's deadline is still ahead
    /// (arguments: now, the limit).
    /// When the purchase was made, as far as the ledger knows. A `created_at` after
    /// `PlausibleTime.latestSeconds` (a backend's SQL) counts as that: adding the window to
    /// 9223372036854775807 is an error on PostgreSQL ("bigint out of range"), and the pass reads this.
    static let bought = "coalesce(purchase_date_ms / 1000, CASE WHEN created_at > \(PlausibleTime.latestSeconds) "
        + "THEN \(PlausibleTime.latestSeconds) ELSE created_at END)"

    package static let query = """
        SELECT order_id, state, \(bought) + \(windowSeconds) AS refund_at,
               CASE WHEN purchase_date_ms IS NULL THEN 0 ELSE 1 END AS exact,
               CASE WHEN delivered_at IS NULL THEN 0 ELSE 1 END AS delivered
        FROM orders WHERE store = 'google_play' AND (state IN ('pending','verifying','delivering')
            OR (state = 'needs_attention' AND \(bought) + \(windowSeconds) > ?))
        ORDER BY refund_at, order_id LIMIT ?
        """

    package init?(row: some LedgerRow) {
        guard let id = row.string("order_id"), let state = row.string("state").flatMap(OrderState.init(rawValue:)),
              let refundAt = row.int("refund_at") else { return nil }
        self.init(orderId: id, state: state, refundAt: refundAt, exact: (row.int("exact") ?? 0) != 0,
                  delivered: (row.int("delivered") ?? 0) != 0)
    }
}
