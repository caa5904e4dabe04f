import SettleModel

/// Refund history per customer (issue 37), written once for both engines: a buyer's refunds in
/// the last 90 days (`RefundHistory`: what counts and whose, there), the customers with many,
/// the refunds of the last hour by store, and whether a person released an order from a hold.
/// Every read goes through an index: a user's orders (`orders_user`, and the orders they gave
/// away by transfer through `support_actions`), or the refunded ones (`orders_refunded`).
extension TransactionalLedger {
    /// `user`'s refunds as buyer since `now` less 90 days.
    package func refundHistory(of user: String, now: Int64) throws(LedgerError) -> RefundHistory {
        let since = now - RefundHistory.windowSeconds
        let transfers = try knowsSupportActions()
        // One statement (`RefundHistorySQL.buyersRefunds`).
        return try readingStatement { db in try db.refundHistory(of: user, since: since, transfers: transfers) }
    }

    /// The customers (buyers) with at least `threshold` refunds in the last 90 days, most first:
    /// the newest `FrequentRefunders.refundsCap` refunds are read, newest first, through
    /// `orders_refunded`; past that the counts are of those and say so.
    package func frequentRefunders(atLeast threshold: Int, now: Int64) throws(LedgerError) -> FrequentRefunders {
        let since = now - RefundHistory.windowSeconds
        let sql = RefundHistorySQL.newestRefunds(transfers: try knowsSupportActions())
        let cap = FrequentRefunders.refundsCap
        return try reading { db in
            let rows = try db.query(sql, [.integer(since), .integer(Int64(cap + 1))])
            var counts: [String: Int] = [:]
            for row in rows.prefix(cap) {
                let store = Store(rawValue: row.string("store") ?? Store.ofUnnamedOrders.rawValue)
                guard let user = row.string("buyer"), !user.isEmpty,
                      store.refundIsTheCustomers(kind: row.string("refund_kind")) else { continue }
                counts[user, default: 0] += 1
            }
            let flagged = counts.filter { $0.value >= threshold }
                .map { FrequentRefunders.Customer(userId: $0.key, refunds: $0.value) }
                .sorted { ($0.refunds, $1.userId) > ($1.refunds, $0.userId) }
            return FrequentRefunders(threshold: threshold, since: since, total: flagged.count,
                                     customers: Array(flagged.prefix(FrequentRefunders.namedCap)),
                                     capped: rows.count > cap)
        }
    }

    /// The customers' refunds settle recorded since `since`, by store (the metric
    /// `settle_refunds_last_hour`), through `orders_refunded`. Every registered store is present.
    package func customerRefundsByStore(since: Int64) throws(LedgerError) -> [Store: Int] {
        try reading { db in try db.customerRefundsByStore(since: since) }
    }

    /// Whether a person already put `orderId` back after it was held for its buyer's refunds
    /// (`repeat_refunder`): its history holds the hold and a `retry` after it. Such an order is
    /// never held again, so the person's decision stands.
    package func releasedFromRefundHold(orderId: String) throws(LedgerError) -> Bool {
        try reading { db in
            try !db.query("""
                SELECT 1 AS released FROM history r WHERE r.order_id = ? AND r.kind = 'retry' AND r.id > (
                    SELECT min(h.id) FROM history h WHERE h.order_id = ? AND h.outcome = 'needs_attention'
                    AND h.detail LIKE ?)
                LIMIT 1
                """, [.text(orderId), .text(orderId), .text(AttentionReason.repeatRefunder.rawValue + ":%")]).isEmpty
        }
    }
}

extension LedgerTransaction {
    /// The customers' refunds recorded since `since`, by store, every registered store present.
    package func customerRefundsByStore(since: Int64) throws -> [Store: Int] {
        var counts = Dictionary(uniqueKeysWithValues: Store.allCases.map { ($0, 0) })
        let rows = try query("""
            SELECT store, refund_kind, count(*) AS n FROM orders WHERE refunded_at >= ? GROUP BY store, refund_kind
            """, [.integer(since)])
        for row in rows {
            let store = Store(rawValue: row.string("store") ?? Store.ofUnnamedOrders.rawValue)
            guard store.refundIsTheCustomers(kind: row.string("refund_kind")) else { continue }
            counts[store, default: 0] += Int(row.int("n") ?? 0)
        }
        return counts
    }

    /// The refunds of `user` as buyer since `since`: the orders they hold (`orders_user`) and the
    /// ones they gave away by transfer, each kept only when they are its buyer, each order once.
    package func refundHistory(of user: String, since: Int64, transfers: Bool) throws -> RefundHistory {
        var values: [LedgerValue] = [.text(user), .integer(since)]
        if transfers { values += [.text(user), .integer(since)] }
        var entries: [RefundHistory.Entry] = []
        var seen: Set<String> = []
        let rows = try query(RefundHistorySQL.buyersRefunds(transfers: transfers), values)
        for row in rows where row.string("buyer") == user {
            let store = Store(rawValue: row.string("store") ?? Store.ofUnnamedOrders.rawValue)
            let kind = row.string("refund_kind")
            guard store.refundIsTheCustomers(kind: kind), let id = row.string("order_id"),
                  let at = row.int("refunded_at"), seen.insert(id).inserted else { continue }
            entries.append(RefundHistory.Entry(orderId: id, store: store, kind: kind ?? "REFUND", at: at))
        }
        entries.sort { ($0.at, $1.orderId) > ($1.at, $0.orderId) }
        return RefundHistory(userId: user, since: since, entries: entries)
    }
}

/// The two reads of refund history, each through indexes only (`RefundHistoryMigrationTests`
/// reads SQLite's plan of each).
package enum RefundHistorySQL {
    /// A buyer's refunded orders since a time (`?` user, since; with transfers, user, since again):
    /// those they hold (`orders_user`) and those they gave away (`support_actions_from_user`), each
    /// row with its buyer, who may be someone else (the user received it by transfer).
    package static func buyersRefunds(transfers: Bool) -> String {
        transfers ? buyersRefundsWithTransfers : buyersRefundsHeld
    }

    // Built once: every grant reads its buyer's refunds (withRefundCounts).
    private static let buyersRefundsWithTransfers = buildBuyersRefunds(transfers: true)
    private static let buyersRefundsHeld = buildBuyersRefunds(transfers: false)

    private static func buildBuyersRefunds(transfers: Bool) -> String {
        let buyer = transfers ? OrderBuyer.column : "o.user_id"
        let columns = "o.order_id, o.store, o.refund_kind, o.refunded_at, \(buyer) AS buyer"
        let held = "SELECT \(columns) FROM orders o WHERE o.user_id = ? AND o.refunded_at IS NOT NULL AND o.refunded_at >= ?"
        guard transfers else { return held }
        // UNION ALL and a join, not UNION and IN (…): both built an ephemeral b-tree at every grant
        // (SQLite), where no refund is the common case. The caller drops an order seen twice.
        return held + """

            UNION ALL SELECT \(columns) FROM support_actions s JOIN orders o ON o.order_id = s.order_id
            WHERE s.kind = 'transfer' AND s.from_user = ? AND o.refunded_at IS NOT NULL AND o.refunded_at >= ?
            """
    }

    /// The newest refunds since a time, at most a number of them (`?` since, limit), with each one's
    /// buyer, through `orders_refunded`.
    package static func newestRefunds(transfers: Bool) -> String {
        let buyer = transfers ? OrderBuyer.column : "o.user_id"
        return """
            SELECT o.store, o.refund_kind, \(buyer) AS buyer FROM orders o
            WHERE o.refunded_at >= ? ORDER BY o.refunded_at DESC LIMIT ?
            """
    }
}
