import SettleBase
import SettleModel

/// A page of the orders in one state (and reason), newest change first: the console's lists and
/// `settle retry --reason`. Paged by the last row's (updated_at, order_id), so a page is one
/// range of the `orders_state (state, updated_at)` index however deep it is, and rows changing
/// between pages move to the front instead of being shown twice.
package struct OrderList: Sendable, Equatable {
    package struct Query: Sendable, Equatable {
        package var state: OrderState
        package var reason: String?
        /// Only orders changed at or after this time (`--since`).
        package var since: Int64?
        /// The page after this row.
        package var after: Cursor?
        package var limit: Int

        package init(state: OrderState, reason: String? = nil, since: Int64? = nil, after: Cursor? = nil, limit: Int = 50) {
            (self.state, self.reason, self.since, self.after, self.limit) = (state, reason, since, after, limit)
        }
    }

    /// Where a page ended: "UPDATED_AT.ORDER_ID" in a URL.
    package struct Cursor: Sendable, Equatable {
        package var updatedAt: Int64
        package var orderId: String

        package init(updatedAt: Int64, orderId: String) { (self.updatedAt, self.orderId) = (updatedAt, orderId) }

        package init?(_ text: String) {
            guard let dot = text.firstIndex(of: "."), let at = Int64(text[..<dot]) else { return nil }
            (updatedAt, orderId) = (at, String(text[text.index(after: dot)...]))
        }

        package var text: String { "\(updatedAt).\(orderId)" }
    }

    package var orders: [Order]
    /// Every order the query matches (all pages), counted on the same index range.
    package var total: Int
    /// The cursor of the next page; nil on the last.
    package var next: Cursor?
}

extension TransactionalLedger {
    package func orderList(_ query: OrderList.Query) throws(LedgerError) -> OrderList {
        var condition = "state = ?"
        var values: [LedgerValue] = [.text(query.state.rawValue)]
        if let reason = query.reason { condition += " AND reason = ?"; values.append(.text(reason)) }
        if let since = query.since { condition += " AND updated_at >= ?"; values.append(.integer(since)) }
        var page = condition, pageValues = values
        if let after = query.after {
            page += " AND (updated_at < ? OR (updated_at = ? AND order_id > ?))"
            pageValues += [.integer(after.updatedAt), .integer(after.updatedAt), .text(after.orderId)]
        }
        let limit = max(0, query.limit)
        return try reading { db in
            let total = Int(try db.query("SELECT count(*) AS n FROM orders WHERE \(condition)", values).first?.int("n") ?? 0)
            let rows = try db.query("SELECT * FROM orders WHERE \(page) ORDER BY updated_at DESC, order_id LIMIT ?",
                                    pageValues + [.integer(Int64(limit + 1))])
            let orders = rows.prefix(limit).map { Order(row: $0) }
            let next = rows.count > limit ? orders.last.map { OrderList.Cursor(updatedAt: $0.updatedAt, orderId: $0.orderId) } : nil
            return OrderList(orders: Array(orders), total: total, next: next)
        }
    }
}

/// What a retry of listed orders did: the orders put back to pending, and each skipped with why.
package struct ListedRetry: Sendable, Equatable {
    package struct Skip: Sendable, Equatable {
        package var orderId: String
        package var why: String
    }

    package var retried: [String] = []
    package var skipped: [Skip] = []

    package init() {}
}

extension TransactionalLedger {
    /// Retries the orders a list showed, in one transaction, each only while it is still as it
    /// was listed (in `state`, and set aside as `reason` when one is named): an order a person
    /// resolved meanwhile (`wont_grant` is `rejected` too) or that a notification finished is
    /// skipped and named, never retried against their decision. An order without a buyer is
    /// skipped too (a retry would deliver it to nobody).
    package func retryListed(orderIds: [String], state: OrderState, reason: String?, note: String,
                             by person: Operator) throws(LedgerError) -> ListedRetry {
        let now = time.unixSeconds
        let audit = try auditor(person)
        return try writing { db in
            var outcome = ListedRetry()
            for id in orderIds {
                guard let row = try db.query("SELECT * FROM orders WHERE order_id = ?\(db.dialect.lockRows)", [.text(id)]).first else {
                    outcome.skipped.append(.init(orderId: id, why: "no order \(id) in the ledger"))
                    continue
                }
                let order = Order(row: row)
                guard order.state == state, reason == nil || order.reason == reason else {
                    let now = order.state.rawValue + (order.reason.map { " (\($0))" } ?? "")
                    outcome.skipped.append(.init(orderId: id, why: "now \(now), not \(state.rawValue)"
                                                 + (reason.map { " (\($0))" } ?? "") + " as it was listed"))
                    continue
                }
                do throws(LedgerError) {
                    try Resolution.checkRetryable(order)
                } catch {
                    if case let .invalid(why) = error { outcome.skipped.append(.init(orderId: id, why: why)) }
                    continue
                }
                try db.putBackToPending(id, detail: person.attributed(note), now: now)
                try audit?(db, AuditEntry(person, action: "retry", subject: id, at: now,
                                          detail: note + " (bulk: \(state.rawValue)" + (reason.map { " as \($0)" } ?? "") + ")"))
                outcome.retried.append(id)
            }
            return outcome
        }
    }
}
