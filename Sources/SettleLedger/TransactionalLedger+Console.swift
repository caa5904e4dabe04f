import SettleBase
import SettleModel

/// The orders waiting for a person under one reason: how many, and the newest few.
package struct AttentionGroup: Sendable, Equatable {
    /// Nil for an order that needs attention without a recorded reason.
    package var reason: String?
    package var count: Int
    package var orderIds: [String]
}

/// The orders waiting for a person, by reason, as the console's overview shows them.
package struct AttentionSummary: Sendable, Equatable {
    package var groups: [AttentionGroup]
    /// How many orders were read; all of them when `complete`, else the newest that many.
    package var read: Int
    package var complete: Bool
}

/// Orders that reached an end in one hour: `settled` ended (finished or rejected), `recovered`
/// of them were delivered (finished).
package struct HourlySettlement: Sendable, Equatable {
    /// Unix seconds at the start of the hour.
    package var hour: Int64
    package var settled: Int
    package var recovered: Int
}

/// What the support console reads besides `summary`, for both engines. Every read is bounded
/// by an index: `orders_state (state, updated_at)` carries them.
extension TransactionalLedger {
    /// The orders in `needs_attention` grouped by reason, largest group first, each with up to
    /// `examples` of its most recently changed orders. Read from the newest `scan` such orders
    /// (the `orders_state` index, in order): exact when fewer wait, a sample of the newest when
    /// more (`complete` says which), so the read stays bounded however many wait.
    package func attentionByReason(examples: Int = 5, scan: Int = 5000) throws(LedgerError) -> AttentionSummary {
        let rows = try reading { db in
            try db.query("""
                SELECT order_id, reason FROM orders WHERE state = 'needs_attention' ORDER BY updated_at DESC, order_id LIMIT ?
                """, [.integer(Int64(scan))])
        }
        var groups: [String: AttentionGroup] = [:]
        var order: [String] = []
        for row in rows {
            let reason = row.string("reason")
            let key = reason ?? ""
            if groups[key] == nil { groups[key] = AttentionGroup(reason: reason, count: 0, orderIds: []); order.append(key) }
            groups[key]?.count += 1
            if groups[key]!.orderIds.count < examples { groups[key]?.orderIds.append(row.string("order_id") ?? "") }
        }
        let sorted = order.compactMap { groups[$0] }.sorted { $0.count != $1.count ? $0.count > $1.count : ($0.reason ?? "") < ($1.reason ?? "") }
        return AttentionSummary(groups: sorted, read: rows.count, complete: rows.count < scan)
    }

    /// Orders that ended per hour since `since` (the hour it falls in), oldest hour first; hours
    /// with none are left out. Read from the index range of finished and rejected orders
    /// changed since then, never a scan of the ledger.
    package func settlementsPerHour(since: Int64) throws(LedgerError) -> [HourlySettlement] {
        let from = since - since % 3600
        let now = time.unixSeconds
        if let kept = try keptSettlementsPerHour(from: from, through: now) { return kept }
        // One range count per hour and state on the covering index: a GROUP BY over the week
        // would sort every entry first (four times slower on a million orders).
        return try reading { db in
            try db.query("""
                WITH RECURSIVE hours(hour_start) AS (
                    SELECT CAST(? AS BIGINT) UNION ALL SELECT hour_start + 3600 FROM hours WHERE hour_start + 3600 <= CAST(? AS BIGINT))
                SELECT hour_start,
                       (SELECT count(*) FROM orders WHERE state = 'finished' AND updated_at >= hour_start AND updated_at < hour_start + 3600) AS recovered,
                       (SELECT count(*) FROM orders WHERE state = 'rejected' AND updated_at >= hour_start AND updated_at < hour_start + 3600) AS rejected
                FROM hours ORDER BY hour_start
                """, [.integer(from), .integer(now)]).compactMap { row in
                let recovered = Int(row.int("recovered") ?? 0), rejected = Int(row.int("rejected") ?? 0)
                guard recovered + rejected > 0 else { return nil }
                return HourlySettlement(hour: row.int("hour_start") ?? 0, settled: recovered + rejected, recovered: recovered)
            }
        }
    }
}
