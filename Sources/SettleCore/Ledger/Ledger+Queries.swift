import Foundation

/// Which orders `settle status` lists.
public struct OrderFilter: Sendable, Equatable {
    public var state: OrderState?
    public var userId: String?
    public var transactionId: String?
    /// Only orders Apple refunded or revoked (`status --refunded`).
    public var refunded = false
    /// Several transactions at once (those behind an Apple order id); used instead of `transactionId`.
    public var transactionIds: [String] = []
    /// Orders whose backend stored this StoreKit appAccountToken.
    public var appAccountToken: String?
    /// Google Play orders with this purchase token (`status --purchase-token-file`).
    public var purchaseToken: PlayPurchaseToken?
    public var limit: Int

    public init(state: OrderState? = nil, userId: String? = nil, transactionId: String? = nil, appAccountToken: String? = nil,
                limit: Int = 50) {
        self.appAccountToken = appAccountToken
        self.state = state
        self.userId = userId
        self.transactionId = transactionId
        self.limit = limit
    }
}

/// A consistent picture of the ledger for support.
public struct LedgerSummary: Sendable, Equatable {
    public var counts: [OrderState: Int]
    /// Age of the oldest order that is paid and not delivered (pending, in flight or needing a person).
    public var oldestUndeliveredSeconds: Int64?
    public var orders: [Order]
    /// How many orders match the filter; `orders` holds at most `limit` of them.
    public var matching: Int = 0
    /// Whether counts and age are of a subset (a user, a transaction) rather than the ledger.
    public var filtered = false
    /// Counts by state of the Google Play orders among those counted (App Store: the rest).
    public var googlePlayCounts: [OrderState: Int] = [:]
    /// Google Play orders not yet finished, closest to Google's refund deadline first.
    public var playDeadlines: [PlayDeadline] = []
}

/// A Google Play order that Google has not been told about yet (acknowledge or consume): Google
/// refunds the purchase three days after it was bought.
public struct PlayDeadline: Sendable, Equatable {
    public var orderId: String
    public var state: OrderState
    /// When Google refunds it unless acknowledged: purchase time (or, before Google confirmed it,
    /// the time it was enqueued) plus three days.
    public var refundAt: Int64
    /// Whether the time is the purchase's (Google confirmed) rather than estimated from the enqueue.
    public var exact: Bool
    /// The hook said delivered; only the acknowledgement is missing.
    public var delivered: Bool

    /// Google's window for acknowledging a purchase.
    public static let windowSeconds: Int64 = 3 * 86_400
    /// Less than a day left: claimed first, warned about, counted in the metric.
    public static let urgentSeconds: Int64 = 86_400
    /// An order bought this long ago has less than `urgentSeconds` left.
    public static let urgentAfterSeconds: Int64 = windowSeconds - urgentSeconds

    public init(orderId: String, state: OrderState, refundAt: Int64, exact: Bool, delivered: Bool) {
        self.orderId = orderId
        self.state = state
        self.refundAt = refundAt
        self.exact = exact
        self.delivered = delivered
    }

    public func isUrgent(now: Int64) -> Bool { refundAt - now < PlayDeadline.urgentSeconds }

    /// The unsettled Play orders of a query (columns of `orders`), closest deadline first.
    static let query = """
        SELECT order_id, state, coalesce(purchase_date_ms / 1000, created_at) + \(windowSeconds) AS refund_at,
               CASE WHEN purchase_date_ms IS NULL THEN 0 ELSE 1 END AS exact,
               CASE WHEN delivered_at IS NULL THEN 0 ELSE 1 END AS delivered
        FROM orders WHERE store = 'google_play' AND state IN ('pending','verifying','delivering')
        ORDER BY refund_at, order_id LIMIT ?
        """

    init?(row: some LedgerRow) {
        guard let id = row.string("order_id"), let state = row.string("state").flatMap(OrderState.init(rawValue:)),
              let refundAt = row.int("refund_at") else { return nil }
        self.init(orderId: id, state: state, refundAt: refundAt, exact: (row.int("exact") ?? 0) != 0,
                  delivered: (row.int("delivered") ?? 0) != 0)
    }
}

extension Ledger {
    /// Counts by state, the oldest undelivered order's age and the matching orders, newest
    /// activity first, read in one snapshot.
    public func summary(_ filter: OrderFilter) throws(LedgerError) -> LedgerSummary {
        let now = time.unixSeconds
        // Counts and the oldest age follow the subject of the question (a user, a transaction),
        // not the state filter, so `--user u-42 --state rejected` still shows u-42's other orders.
        var conditions: [String] = []
        var arguments: [SQLiteValue] = []
        if let user = filter.userId { conditions.append("user_id = ?"); arguments.append(.text(user)) }
        // An Apple order id (from the customer's receipt email) is looked up with Apple first and
        // arrives here as the transactions behind it.
        let transactions = filter.transactionIds.isEmpty ? filter.transactionId.map { [$0] } ?? [] : filter.transactionIds
        if !transactions.isEmpty {
            let marks = Array(repeating: "?", count: transactions.count).joined(separator: ",")
            conditions.append("(transaction_id IN (\(marks)) OR verified_transaction_id IN (\(marks)) OR original_transaction_id IN (\(marks)))")
            for _ in 0..<3 { arguments += transactions.map(SQLiteValue.text) }
        }
        if let token = filter.appAccountToken {
            conditions.append("lower(app_account_token) = lower(?)")
            arguments.append(.text(token))
        }
        if let token = filter.purchaseToken {
            conditions.append("purchase_token = ?")
            arguments.append(.text(token.value))
        }
        let subject = conditions.isEmpty ? "1" : conditions.joined(separator: " AND ")
        return try read {
            var counts = Dictionary(uniqueKeysWithValues: OrderState.allCases.map { ($0, 0) })
            let countsKept = try userVersion() >= 4
            if conditions.isEmpty && countsKept {
                // Kept by triggers (schema 4): a GROUP BY over a million rows is what made status slow.
                for row in try database.query("SELECT state, n FROM order_counts") {
                    if let state = OrderState(rawValue: row.string("state") ?? "") { counts[state] = Int(row.int("n") ?? 0) }
                }
            } else {
                for row in try database.query("SELECT state, count(*) AS n FROM orders WHERE \(subject) GROUP BY state", arguments) {
                    if let state = OrderState(rawValue: row.string("state") ?? "") { counts[state] = Int(row.int("n") ?? 0) }
                }
            }
            // One index probe per state (orders_state_created) rather than a scan of the backlog.
            let oldest = try database.query("""
                SELECT min(m) AS oldest FROM (
                    SELECT min(created_at) AS m FROM orders WHERE state = 'pending' AND \(subject) UNION ALL
                    SELECT min(created_at) FROM orders WHERE state = 'verifying' AND \(subject) UNION ALL
                    SELECT min(created_at) FROM orders WHERE state = 'delivering' AND \(subject) UNION ALL
                    SELECT min(created_at) FROM orders WHERE state = 'needs_attention' AND \(subject))
                """, arguments + arguments + arguments + arguments).first?.int("oldest")
            var listed = subject
            var listArguments = arguments
            if let state = filter.state { listed += " AND state = ?"; listArguments.append(.text(state.rawValue)) }
            if filter.refunded { listed += " AND refunded_at IS NOT NULL" }
            // Without a subject the counts already say how many match: no count(*) over the table.
            let matching = conditions.isEmpty && !filter.refunded
                ? filter.state.map { counts[$0] ?? 0 } ?? counts.values.reduce(0, +)
                : Int(try database.query("SELECT count(*) AS n FROM orders WHERE \(listed)", listArguments).first?.int("n") ?? 0)
            let rows = try database.query("SELECT * FROM orders WHERE \(listed) ORDER BY updated_at DESC, order_id LIMIT ?",
                                          listArguments + [.integer(Int64(max(0, filter.limit)))])
            var summary = LedgerSummary(counts: counts, oldestUndeliveredSeconds: oldest.map { max(0, now - $0) },
                                        orders: rows.map(Order.init(row:)), matching: matching, filtered: !conditions.isEmpty)
            if try userVersion() >= 7 {
                for row in try database.query("SELECT state, count(*) AS n FROM orders WHERE store = 'google_play' AND \(subject) GROUP BY state",
                                              arguments) {
                    if let state = OrderState(rawValue: row.string("state") ?? "") { summary.googlePlayCounts[state] = Int(row.int("n") ?? 0) }
                }
                summary.playDeadlines = try database.query(PlayDeadline.query, [.integer(20)]).compactMap(PlayDeadline.init(row:))
            }
            return summary
        }
    }

    /// One order and its history, oldest first; nil when there is no such order.
    public func orderRecord(_ orderId: String) throws(LedgerError) -> (order: Order, history: [HistoryEntry])? {
        try read {
            guard let row = try database.query("SELECT * FROM orders WHERE order_id = ?", [.text(orderId)]).first else {
                return nil
            }
            let history = try database.query("SELECT * FROM history WHERE order_id = ? ORDER BY id", [.text(orderId)])
                .map { row in
                    HistoryEntry(at: row.int("at") ?? 0, kind: HistoryEntry.Kind(rawValue: row.string("kind") ?? "") ?? .verification,
                                 outcome: row.string("outcome") ?? "", appleStatus: row.int("apple_status").map { Int($0) },
                                 hookExit: row.int("hook_exit").map { Int($0) }, environment: row.string("environment"),
                                 durationMs: row.int("duration_ms").map { Int($0) }, detail: row.string("detail"))
                }
            return (Order(row: row), history)
        }
    }

    /// The order currently holding a grant for this Apple transaction, if any.
    public func grantHolder(transactionId: String) throws(LedgerError) -> String? {
        try read {
            try database.query("SELECT order_id FROM grants WHERE transaction_id = ?", [.text(transactionId)])
                .first?.string("order_id")
        }
    }
}

extension Ledger {
    /// Orders due for verification now, oldest due first (for `reconcile --dry-run`).
    public func dueOrders(limit: Int) throws(LedgerError) -> [Order] {
        let now = time.unixSeconds
        return try read {
            try database.query("""
                SELECT * FROM orders WHERE state = 'pending' AND next_attempt_at <= ?
                ORDER BY next_attempt_at, order_id LIMIT ?
                """, [.integer(now), .integer(Int64(limit))]).map(Order.init(row:))
        }
    }
}
