import SettleBase
import SettleModel

/// What the delivery hook did lately, for `settle status`'s `hook:` line, the console's card and
/// the health check: its calls over a window, how many failed and ran past their timeout, the
/// last failure, and the calls running now with the time they started.
package struct HookActivity: Sendable, Equatable {
    package struct Failure: Sendable, Equatable {
        package var at: Int64
        package var orderId: String
        /// The history outcome: `failed`, `timed_out`, `refused`, `unconfirmed`, `cannot_start`.
        package var outcome: String
        /// The first line of what settle recorded (the hook's exit, its timeout, a webhook's error).
        package var message: String
    }

    package struct Running: Sendable, Equatable {
        package var orderId: String
        package var since: Int64
    }

    package var since: Int64
    package var calls = 0
    package var failures = 0
    package var timeouts = 0
    package var lastFailure: Failure?
    /// The outcome of the newest call in the window (a fault fixed since is not one now).
    package var lastOutcome: String?
    package var running: [Running] = []
    /// The window held more calls than were read (`callsCap`): the counts are of the newest that many.
    package var capped = false

    /// The outcomes of the grant hook's calls as history records them (a store's finish is a
    /// delivery entry too, but without a hook's duration).
    package static let outcomes = ["delivered", "already_granted", "failed", "timed_out", "refused", "unconfirmed", "cannot_start"]
    package static let failed: Set<String> = ["failed", "timed_out", "refused", "unconfirmed", "cannot_start"]
    /// At most this many calls are read for one view: a backlog draining thousands a minute is
    /// shown as "10000+ calls", and status stays quick.
    package static let callsCap = 10_000
}

extension TransactionalLedger {
    /// The grant hook's calls since `since`, read through the orders changed since then (every
    /// call changes its order: the `orders_recent` index, then each order's history by
    /// `history_order`), never a scan of the history; and the orders delivering now (the
    /// `orders_leased` index), at most `runningLimit` of them, longest running first.
    package func hookActivity(since: Int64, runningLimit: Int = 10, callsCap: Int = HookActivity.callsCap) throws(LedgerError) -> HookActivity {
        let marks = HookActivity.outcomes.map { _ in "?" }.joined(separator: ",")
        return try reading { db in
            var activity = HookActivity(since: since)
            var newest = Int64.min
            let rows = try db.query("""
                SELECT h.order_id, h.at, h.outcome, h.detail FROM orders o JOIN history h ON h.order_id = o.order_id
                WHERE o.updated_at >= ? AND h.kind = 'delivery' AND h.at >= ? AND h.duration_ms IS NOT NULL
                  AND h.outcome IN (\(marks))
                ORDER BY o.updated_at DESC LIMIT ?
                """, [.integer(since), .integer(since)] + HookActivity.outcomes.map { .text($0) } + [.integer(Int64(callsCap + 1))])
            activity.capped = rows.count > callsCap
            for row in rows.prefix(callsCap) {
                activity.calls += 1
                let outcome = row.string("outcome") ?? ""
                let at = row.int("at") ?? 0
                if at >= newest { (newest, activity.lastOutcome) = (at, outcome) }
                guard HookActivity.failed.contains(outcome) else { continue }
                activity.failures += 1
                if outcome == "timed_out" { activity.timeouts += 1 }
                if at >= activity.lastFailure?.at ?? .min {
                    let line = (row.string("detail") ?? "").split(separator: "\n").first.map(String.init) ?? ""
                    activity.lastFailure = .init(at: at, orderId: row.string("order_id") ?? "", outcome: outcome,
                                                 message: String(line.prefix(300)))
                }
            }
            activity.running = try db.query("""
                SELECT order_id, updated_at FROM orders WHERE state = 'delivering' AND delivered_at IS NULL
                ORDER BY updated_at, order_id LIMIT ?
                """, [.integer(Int64(runningLimit))]).map { .init(orderId: $0.string("order_id") ?? "", since: $0.int("updated_at") ?? 0) }
            return activity
        }
    }
}
