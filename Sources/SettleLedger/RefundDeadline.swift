import Foundation
import SettleBase
import SettleModel

/// An order of a store that refunds what it was not told of (its descriptor's refund window:
/// Google acknowledges or refunds after three days), not yet told: when the store refunds it.
/// The core's, for every store with a window; the store's name is only ever data here.
package struct RefundDeadline: Sendable, Equatable {
    package var store: Store
    package var orderId: String
    package var state: OrderState
    /// When the store refunds it unless told: purchase time (or, before the store confirmed it,
    /// the time it was enqueued) plus the store's window.
    package var refundAt: Int64
    /// Whether the time is the purchase's (the store confirmed) rather than estimated from the enqueue.
    package var exact: Bool
    /// The hook said delivered; only the store's being told is missing.
    package var delivered: Bool

    /// Less than a day left: claimed first, warned about, counted in the metric.
    package static let urgentSeconds: Int64 = 86_400

    package init(store: Store, orderId: String, state: OrderState, refundAt: Int64, exact: Bool, delivered: Bool) {
        self.store = store
        self.orderId = orderId
        self.state = state
        self.refundAt = refundAt
        self.exact = exact
        self.delivered = delivered
    }

    package func isUrgent(now: Int64) -> Bool { refundAt.saturatingSubtracting(now) < RefundDeadline.urgentSeconds }

    /// How long after a purchase an order of `store` has less than `urgentSeconds` left (nil:
    /// the store refunds nothing by itself).
    package static func urgentAfterSeconds(_ store: Store) -> Int64? {
        store.refundWindowSeconds.map { $0 - urgentSeconds }
    }

    /// The stores among `only` (nil: all) that refund what they were not told of, each with how
    /// long after a purchase its order is urgent (less than `urgentSeconds` left): claimed first.
    package static func deadlineStores(_ only: Set<Store>?) -> [(store: Store, urgentAfter: Int64)] {
        Store.allCases.compactMap { store in
            guard let urgentAfter = urgentAfterSeconds(store), only?.contains(store) ?? true else { return nil }
            return (store, urgentAfter)
        }
    }

    /// When the purchase was made, as far as the ledger knows. A `created_at` after
    /// `PlausibleTime.latestSeconds` (a backend's SQL) counts as that: adding the window to
    /// 9223372036854775807 is an error on PostgreSQL ("bigint out of range"), and the pass reads this.
    static let bought = "coalesce(purchase_date_ms / 1000, CASE WHEN created_at > \(PlausibleTime.latestSeconds) "
        + "THEN \(PlausibleTime.latestSeconds) ELSE created_at END)"

    /// The orders of `store` it has not heard were delivered, closest deadline first: those
    /// still being worked on, and those waiting for a person while its deadline is still ahead
    /// (arguments: now, the limit). The store is written into the SQL (a registered store's
    /// name, never input) so a partial index on it applies.
    /// `subject`: a condition on the orders (a user, a transaction), its arguments bound between
    /// the time and the limit; `TRUE` for the whole ledger. A subject's own index finds its few
    /// orders: `store || ''` keeps SQLite's planner off `orders_store_state`, which it takes for
    /// `store = ?` and then reads every order of the store (113 ms for one user among 500,000
    /// orders of one store, against 1).
    static func query(_ store: Store, window: Int64, subject: String = "TRUE") -> String {
        let name = store.rawValue.replacingOccurrences(of: "'", with: "''")
        let storeTerm = subject == "TRUE" ? "store = '\(name)'" : "store || '' = '\(name)'"
        return """
        SELECT order_id, state, \(bought) + \(window) AS refund_at,
               CASE WHEN purchase_date_ms IS NULL THEN 0 ELSE 1 END AS exact,
               CASE WHEN delivered_at IS NULL THEN 0 ELSE 1 END AS delivered
        FROM orders WHERE \(storeTerm)
            AND (state IN ('pending','verifying','delivering') OR (state = 'needs_attention' AND \(bought) + \(window) > ?))
            AND (\(subject))
        ORDER BY refund_at, order_id LIMIT ?
        """
    }

    init?(row: some LedgerRow, store: Store) {
        guard let id = row.string("order_id"), let state = row.string("state").flatMap(OrderState.init(rawValue:)),
              let refundAt = row.int("refund_at") else { return nil }
        self.init(store: store, orderId: id, state: state, refundAt: refundAt, exact: (row.int("exact") ?? 0) != 0,
                  delivered: (row.int("delivered") ?? 0) != 0)
    }
}
