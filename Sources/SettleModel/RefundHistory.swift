/// A customer's refunds over the last 90 days, as the grant hook (`refunds_90d`), `settle status
/// --user`, the console and `refunds.hold_after` count them (issue 37).
///
/// What counts: every refund its store recorded on an order (`Order.refund`: a money refund, a
/// revocation, a chargeback, a voided purchase), whatever the store, except the kinds a store
/// says are not the customer's (`StoreDescriptor.refundKindsNotTheCustomers`: Apple's Family
/// Sharing `REVOKE`). One order counts once however often its store reports the refund.
///
/// Whose: the order's buyer (`OrderBuyer`), not whoever holds it now. A refund is asked for by
/// the account that paid; support moving the goods to another user (`settle transfer`) never
/// moves the buyer's refunds onto the new holder.
package struct RefundHistory: Sendable, Equatable {
    /// One counted refund.
    package struct Entry: Sendable, Equatable {
        package var orderId: String
        package var store: Store
        /// The store's word for it (`REFUND`, `VOIDED`, `REVOKE`, `CANCELLED`, ...).
        package var kind: String
        /// When settle recorded it (Unix seconds).
        package var at: Int64

        package init(orderId: String, store: Store, kind: String, at: Int64) {
            self.orderId = orderId
            self.store = store
            self.kind = kind
            self.at = at
        }
    }

    /// The window every count is over: 90 days.
    package static let windowSeconds: Int64 = 90 * 86_400

    package var userId: String
    /// The window's start (Unix seconds).
    package var since: Int64
    /// The counted refunds, newest first.
    package var entries: [Entry]

    package init(userId: String, since: Int64, entries: [Entry]) {
        self.userId = userId
        self.since = since
        self.entries = entries
    }

    /// `refunds_90d`.
    package var count: Int { entries.count }

    /// The refunds by store, for a person: "2 (app_store 1, google_play 1)".
    package var text: String {
        guard !entries.isEmpty else { return "0" }
        let stores = Dictionary(grouping: entries, by: \.store).map { "\($0.key.rawValue) \($0.value.count)" }.sorted()
        return "\(count) (\(stores.joined(separator: ", ")))"
    }
}

extension Store {
    /// Whether a refund of `kind` recorded on one of this store's orders is the customer's own
    /// (counted in their `RefundHistory`).
    package func refundIsTheCustomers(kind: String?) -> Bool {
        !descriptor.refundKindsNotTheCustomers.contains(kind ?? "")
    }
}

/// The customers with at least `threshold` refunds in the last 90 days, for the overview and
/// `settle status` ("customers with ≥ N refunds in 90 days").
package struct FrequentRefunders: Sendable, Equatable {
    package struct Customer: Sendable, Equatable {
        package var userId: String
        package var refunds: Int

        package init(userId: String, refunds: Int) {
            self.userId = userId
            self.refunds = refunds
        }
    }

    /// At most this many refunds are read (newest first): past it, the counts are of the newest
    /// that many, and say so.
    package static let refundsCap = 10_000
    /// At most this many customers are named (most refunds first).
    package static let namedCap = 20

    package var threshold: Int
    package var since: Int64
    /// How many customers reach the threshold.
    package var total: Int
    /// The first `namedCap` of them, most refunds first.
    package var customers: [Customer]
    /// More refunds in the window than `refundsCap`: the counts are of the newest.
    package var capped: Bool

    package init(threshold: Int, since: Int64, total: Int, customers: [Customer], capped: Bool) {
        self.threshold = threshold
        self.since = since
        self.total = total
        self.customers = customers
        self.capped = capped
    }

    /// `settle status`'s line: "refunds: 2 customers with >= 3 refunds in 90 days (u-1 5, u-2 3)".
    package var text: String {
        let named = customers.map { "\($0.userId) \($0.refunds)" }.joined(separator: ", ")
        return "\(total)\(capped ? "+" : "") customer\(total == 1 ? "" : "s") with >= \(threshold) refunds in 90 days"
            + (named.isEmpty ? "" : " (\(named)\(total > customers.count ? ", …" : ""))")
    }
}
