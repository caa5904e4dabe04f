import SettleBase
import SettleModel

/// What settle recovered and clawed back (issue 37), for `settle report`, `settle status`, the
/// console's overview and the metrics. Both engines, one query each, bounded by time through an
/// index (`orders_recovered`, `revocations_revoked`): never a scan of every order.
///
/// - Recovered: an order whose purchase settle's hook confirmed it granted (`recovered_at`, the
///   first `delivered` history row): the backend had not granted it, whether the backend enqueued
///   it or settle found it (a store's notification, its history, an unclaimed purchase later
///   assigned). An order the hook answered "already granted" for, or a person granted by hand, is
///   not. Counted on the day it was delivered, once, whatever redeliveries follow.
/// - Clawed back: an order whose goods settle's revoke hook took back after a refund (a
///   revocation in state `revoked`), on the day it was revoked, whoever granted it. A recovered
///   order refunded later counts in both, each on its own day; nothing is netted.
/// - A partial revoke (a quantity of the order's, Apple's prorated percentage) counts that part of
///   the price, rounded down to the milliunit.
/// - An order without a price (`price_source` NULL) is counted, never priced: `unpriced`.
package struct RevenueReport: Sendable, Equatable {
    /// One group: a day (UTC, Unix seconds at midnight), a store and a currency (nil: no price).
    package struct Row: Sendable, Equatable {
        package var day: Int64
        package var store: String
        package var currency: String?
        package var orders: Int
        /// The sum of the orders' prices in milliunits of `currency`; 0 when `currency` is nil.
        package var milliunits: Int64

        package init(day: Int64, store: String, currency: String?, orders: Int, milliunits: Int64) {
            (self.day, self.store, self.currency) = (day, store, currency)
            (self.orders, self.milliunits) = (orders, milliunits)
        }
    }

    package var since: Int64
    package var until: Int64
    package var recovered: [Row]
    package var clawedBack: [Row]

    package init(since: Int64, until: Int64, recovered: [Row], clawedBack: [Row]) {
        (self.since, self.until, self.recovered, self.clawedBack) = (since, until, recovered, clawedBack)
    }

    /// Sums by currency, sorted by currency: never two currencies added together.
    package static func totals(_ rows: [Row]) -> [(currency: String, orders: Int, milliunits: Int64)] {
        var sums: [String: (Int, Int64)] = [:]
        for row in rows {
            guard let currency = row.currency else { continue }
            let now = sums[currency] ?? (0, 0)
            sums[currency] = (now.0 + row.orders, now.1.addingReportingOverflow(row.milliunits).partialValue)
        }
        return sums.keys.sorted().map { ($0, sums[$0]!.0, sums[$0]!.1) }
    }

    /// How many of the rows' orders had no price.
    package static func unpriced(_ rows: [Row]) -> Int { orders(rows.filter { $0.currency == nil }) }

    /// How many orders the rows count, priced or not.
    package static func orders(_ rows: [Row]) -> Int { rows.reduce(0) { $0 + $1.orders } }
}

extension LedgerTransaction {
    /// Marks an order recovered when its history records that settle's hook granted it (`delivered`),
    /// once: a later delivery (a rescue's redelivery under the same key) never moves the mark.
    package func markRecovered(_ orderId: String, _ entry: HistoryEntry) throws {
        guard let at = entry.recoveredAt else { return }
        try query("UPDATE orders SET recovered_at = ? WHERE order_id = ? AND recovered_at IS NULL",
                  [.integer(at), .text(orderId)])
    }

}

extension HistoryEntry {
    /// When this entry makes its order recovered: a delivery settle's hook confirmed; nil for any other.
    package var recoveredAt: Int64? { kind == .delivery && outcome == "delivered" ? at : nil }
}

extension TransactionalLedger {
    /// Whether the schema keeps prices and `recovered_at` (a read-only status of an older ledger may not).
    package func knowsRevenue() throws(LedgerError) -> Bool {
        let needed = self is PostgresLedger ? PostgresLedgerSchema.revenueVersion : LedgerSchema.revenueVersion
        return try schemaReached(needed)
    }

    /// What settle recovered and clawed back from `since` (inclusive) to `until` (exclusive),
    /// by UTC day, store and currency. Empty on a ledger older than the migration.
    package func revenue(since: Int64, until: Int64) throws(LedgerError) -> RevenueReport {
        let empty = RevenueReport(since: since, until: until, recovered: [], clawedBack: [])
        guard try knowsRevenue() else { return empty }
        return try reading { db in
            let recovered = try db.query("""
                SELECT recovered_at / 86400 AS day, store, price_currency AS currency, count(*) AS n,
                       CAST(coalesce(sum(price_milliunits), 0) AS BIGINT) AS amount
                FROM orders WHERE recovered_at >= ? AND recovered_at < ?
                GROUP BY recovered_at / 86400, store, price_currency
                """, [.integer(since), .integer(until)])
            let clawed = try db.query("""
                SELECT r.updated_at / 86400 AS day, o.store, o.price_currency AS currency, count(*) AS n,
                       CAST(coalesce(sum(CASE
                           WHEN r.revocation_percentage BETWEEN 0 AND 100000
                               THEN o.price_milliunits * r.revocation_percentage / 100000
                           WHEN r.quantity IS NOT NULL AND o.quantity > 0 AND r.quantity <= o.quantity
                               THEN o.price_milliunits * r.quantity / o.quantity
                           ELSE o.price_milliunits END), 0) AS BIGINT) AS amount
                FROM revocations r JOIN orders o ON o.order_id = r.order_id
                WHERE r.state = 'revoked' AND r.updated_at >= ? AND r.updated_at < ?
                GROUP BY r.updated_at / 86400, o.store, o.price_currency
                """, [.integer(since), .integer(until)])
            return RevenueReport(since: since, until: until, recovered: Self.rows(recovered),
                                 clawedBack: Self.rows(clawed))
        }
    }

    private static func rows(_ rows: [any LedgerRow]) -> [RevenueReport.Row] {
        rows.map { row in
            RevenueReport.Row(day: (row.int("day") ?? 0) * 86400, store: row.string("store") ?? "",
                              currency: row.string("currency"), orders: row.count("n"),
                              milliunits: row.int("amount") ?? 0)
        }.sorted { ($0.day, $0.store, $0.currency ?? "") < ($1.day, $1.store, $1.currency ?? "") }
    }
}

extension Price {
    /// An order row's price (`price_milliunits`, `price_currency`, `price_source`); nil when it has none.
    package init?(row: some LedgerRow) {
        guard let milliunits = row.int("price_milliunits"), let currency = row.string("price_currency"),
              let source = row.string("price_source").flatMap(PriceSource.init(rawValue:)) else { return nil }
        self.init(milliunits: milliunits, currency: currency, source: source)
    }
}

extension Price {
    /// The bound values of `price_milliunits, price_currency, price_source` for `price` (nil:
    /// unknown), written by the UPDATE that gives an order its verified purchase.
    static func columns(_ price: Price?) -> [SQLiteValue] {
        [.from(price?.milliunits), .from(price?.currency), .from(price?.source.rawValue)]
    }
}
