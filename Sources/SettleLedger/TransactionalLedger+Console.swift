import SettleBase
import SettleModel

/// The orders waiting for a person under one reason: how many, and the newest few.
package struct AttentionGroup: Sendable, Equatable {
    /// Nil for an order that needs attention without a recorded reason.
    package var reason: String?
    package var count: Int
    package var orderIds: [String]
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
    /// `examples` of its most recently changed orders (from the newest `scan` such orders).
    package func attentionByReason(examples: Int = 5, scan: Int = 500) throws(LedgerError) -> [AttentionGroup] {
        try reading { db in
            let counted = try db.query("""
                SELECT reason, count(*) AS n FROM orders WHERE state = 'needs_attention' GROUP BY reason ORDER BY 2 DESC, 1
                """)
            let recent = try db.query("""
                SELECT order_id, reason FROM orders WHERE state = 'needs_attention' ORDER BY updated_at DESC, order_id LIMIT ?
                """, [.integer(Int64(scan))])
            var byReason: [String: [String]] = [:]
            for row in recent {
                let key = row.string("reason") ?? ""
                if byReason[key, default: []].count < examples { byReason[key, default: []].append(row.string("order_id") ?? "") }
            }
            return counted.map { row in
                let reason = row.string("reason")
                return AttentionGroup(reason: reason, count: Int(row.int("n") ?? 0), orderIds: byReason[reason ?? ""] ?? [])
            }
        }
    }

    /// Orders that ended per hour since `since` (the hour it falls in), oldest hour first; hours
    /// with none are left out. Read from the index range of finished and rejected orders
    /// changed since then, never a scan of the ledger.
    package func settlementsPerHour(since: Int64) throws(LedgerError) -> [HourlySettlement] {
        let from = since - since % 3600
        return try reading { db in
            let rows = try db.query("""
                SELECT state, updated_at / 3600 AS hour, count(*) AS n FROM orders
                WHERE state IN ('finished', 'rejected') AND updated_at >= ? GROUP BY 1, 2
                """, [.integer(from)])
            var hours: [Int64: HourlySettlement] = [:]
            for row in rows {
                let hour = (row.int("hour") ?? 0) * 3600
                let n = Int(row.int("n") ?? 0)
                var entry = hours[hour] ?? HourlySettlement(hour: hour, settled: 0, recovered: 0)
                entry.settled += n
                if row.string("state") == OrderState.finished.rawValue { entry.recovered += n }
                hours[hour] = entry
            }
            return hours.values.sorted { $0.hour < $1.hour }
        }
    }
}
