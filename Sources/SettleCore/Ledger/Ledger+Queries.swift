import Foundation

/// Which orders `settle status` lists.
public struct OrderFilter: Sendable, Equatable {
    public var state: OrderState?
    public var userId: String?
    public var transactionId: String?
    public var limit: Int
    /// Only orders Apple refunded or revoked (`status --refunded`).
    public var refunded = false

    public init(state: OrderState? = nil, userId: String? = nil, transactionId: String? = nil, limit: Int = 50) {
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
}

extension Ledger {
    /// Counts by state, the oldest undelivered order's age and the matching orders, newest
    /// activity first, read in one snapshot.
    public func summary(_ filter: OrderFilter) throws(LedgerError) -> LedgerSummary {
        let now = time.unixSeconds
        return try read {
            var counts = Dictionary(uniqueKeysWithValues: OrderState.allCases.map { ($0, 0) })
            for row in try database.query("SELECT state, count(*) AS n FROM orders GROUP BY state") {
                if let state = OrderState(rawValue: row.string("state") ?? "") { counts[state] = Int(row.int("n") ?? 0) }
            }
            let oldest = try database.query("""
                SELECT min(created_at) AS oldest FROM orders
                WHERE state IN ('pending','verifying','delivering','needs_attention')
                """).first?.int("oldest")
            var conditions: [String] = []
            var arguments: [SQLiteValue] = []
            if let state = filter.state { conditions.append("state = ?"); arguments.append(.text(state.rawValue)) }
            if let user = filter.userId { conditions.append("user_id = ?"); arguments.append(.text(user)) }
            if let txn = filter.transactionId {
                conditions.append("(transaction_id = ? OR verified_transaction_id = ? OR original_transaction_id = ?)")
                arguments += [.text(txn), .text(txn), .text(txn)]
            }
            if filter.refunded { conditions.append("refunded_at IS NOT NULL") }
            let whereClause = conditions.isEmpty ? "" : "WHERE " + conditions.joined(separator: " AND ")
            let rows = try database.query("SELECT * FROM orders \(whereClause) ORDER BY updated_at DESC, order_id LIMIT ?",
                                          arguments + [.integer(Int64(max(0, filter.limit)))])
            return LedgerSummary(counts: counts, oldestUndeliveredSeconds: oldest.map { max(0, now - $0) },
                                 orders: rows.map(Order.init(row:)))
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
