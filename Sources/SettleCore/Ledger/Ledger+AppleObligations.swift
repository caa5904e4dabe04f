import Foundation

/// A revoke owed to the operator's hook after Apple took a delivered purchase back.
public struct RevocationJob: Sendable, Equatable {
    public var transactionId: String
    public var orderId: String
    public var kind: String
    public var attempts: Int
    /// 1 for the first refund of the transaction; one more for each refund after a reversed one.
    public var round: Int = 1
    /// Why the last attempt did not revoke (or why the revoke waits), nil before any.
    public var lastError: String? = nil
}

/// An answer owed to Apple for a refund request (CONSUMPTION_REQUEST).
public struct ConsumptionJob: Sendable, Equatable {
    public var notificationUUID: String
    public var transactionId: String
    public var environment: String
    public var orderId: String?
    public var attempts: Int
    public var deadlineAt: Int64
}

/// What the ledger shows about a purchase's delivery, for an answer to a refund request.
public enum DeliveryEvidence: Sendable, Equatable {
    /// Delivered: settle finished it, or a grant is recorded outside settle.
    case delivered(String)
    /// An order about it is still being settled: ask again later.
    case inFlight(String)
    /// Settle does not know: no answer is sent (never "undelivered" from absence of evidence).
    case unknown(String)
}

/// Where Get Notification History resumes in one environment.
public struct NotificationCursor: Sendable, Equatable {
    /// Everything sent before this (ms) has been read.
    public var syncedUntilMs: Int64?
    /// The window being paged now, and where in it; nil when none is open.
    public var windowStartMs: Int64?
    public var windowEndMs: Int64?
    public var paginationToken: String?
    /// When settle first read this environment's history (ms): purchases older than that are
    /// back-filled, reported for a person rather than delivered. nil before the first start
    /// (and on ledgers that read history before this was kept).
    public var startedAtMs: Int64?

    public init(syncedUntilMs: Int64? = nil, windowStartMs: Int64? = nil, windowEndMs: Int64? = nil, paginationToken: String? = nil,
                startedAtMs: Int64? = nil) {
        self.syncedUntilMs = syncedUntilMs
        self.windowStartMs = windowStartMs
        self.windowEndMs = windowEndMs
        self.paginationToken = paginationToken
        self.startedAtMs = startedAtMs
    }
}

/// Revokes and refund-request answers: work that notifications leave for passes, each retried
/// with backoff until done, like deliveries.
extension Ledger {
    /// Due revokes of orders that were, or may have been, delivered: finished, or holding their
    /// grant while the hook's outcome is unknown (it timed out, settle died during it). Only a
    /// revoke whose order never reached the hook (it holds no grant) is cancelled here; one
    /// whose delivery is in flight waits for it.
    public func dueRevocations(limit: Int) throws(LedgerError) -> [(RevocationJob, Order)] {
        let now = time.unixSeconds
        return try locked { () throws(LedgerError) in
            try write {
                try database.query("""
                    UPDATE revocations SET state = 'cancelled', last_error = 'the order was never delivered', updated_at = ?
                    WHERE state = 'pending' AND order_id IN (
                        SELECT order_id FROM orders o WHERE o.state IN ('rejected','pending','needs_attention')
                        AND NOT EXISTS (SELECT 1 FROM grants g WHERE g.order_id = o.order_id))
                    """, [.integer(now)])
                return try database.query("""
                    SELECT r.transaction_id AS job_transaction, r.kind AS job_kind, r.attempts AS job_attempts, r.round AS job_round,
                           r.last_error AS job_error, o.*
                    FROM revocations r JOIN orders o ON o.order_id = r.order_id
                    WHERE r.state = 'pending' AND r.next_attempt_at <= ?
                      AND (o.state = 'finished' OR (o.state NOT IN ('verifying','delivering')
                                                    AND EXISTS (SELECT 1 FROM grants g WHERE g.order_id = o.order_id)))
                    ORDER BY r.next_attempt_at LIMIT ?
                    """, [.integer(now), .integer(Int64(limit))]).map { row in
                    let order = Order(row: row)
                    return (RevocationJob(transactionId: row.string("job_transaction") ?? "", orderId: order.orderId,
                                          kind: row.string("job_kind") ?? "REFUND", attempts: Int(row.int("job_attempts") ?? 0),
                                          round: Int(row.int("job_round") ?? 1), lastError: row.string("job_error")), order)
                }
            }
        }
    }

    /// A revoke that cannot run yet because no route for revokes is configured: it stays
    /// `pending` (so it runs once one is) with the reason as its last error, without using an attempt.
    public func recordRevocationWaiting(_ job: RevocationJob, reason: String, history: HistoryEntry) throws(LedgerError) {
        let now = time.unixSeconds
        _ = try locked { () throws(LedgerError) in
            try write {
                try database.query("UPDATE revocations SET last_error = ?, updated_at = ? WHERE transaction_id = ? AND state = 'pending'",
                                   [.text(reason), .integer(now), .text(job.transactionId)])
                try appendHistory(job.orderId, history)
            }
        }
    }

    /// The revoke owed for one order, for `settle status`: nil when none was ever owed.
    public func revocation(orderId: String) throws(LedgerError) -> (state: String, job: RevocationJob)? {
        guard try schemaVersion() >= 6 else { return nil }
        return try read {
            try database.query("SELECT * FROM revocations WHERE order_id = ? ORDER BY updated_at DESC LIMIT 1", [.text(orderId)]).first
                .map { row in
                    (row.string("state") ?? "", RevocationJob(transactionId: row.string("transaction_id") ?? "", orderId: orderId,
                                                              kind: row.string("kind") ?? "REFUND", attempts: Int(row.int("attempts") ?? 0),
                                                              round: Int(row.int("round") ?? 1), lastError: row.string("last_error")))
                }
        }
    }

    /// What a revoke attempt concluded: `revoked`, `pending` (retry at `nextAttemptAt`) or `needs_attention`.
    public func recordRevocation(_ job: RevocationJob, state: String, error: String?, nextAttemptAt: Int64,
                                 history: HistoryEntry) throws(LedgerError) {
        let now = time.unixSeconds
        _ = try locked { () throws(LedgerError) in
            try write {
                try database.query("""
                    UPDATE revocations SET state = ?, attempts = attempts + 1, next_attempt_at = ?, last_error = ?, updated_at = ?
                    WHERE transaction_id = ? AND state = 'pending'
                    """, [.text(state), .integer(nextAttemptAt), .from(error), .integer(now), .text(job.transactionId)])
                try appendHistory(job.orderId, history)
            }
        }
    }

    public func dueConsumptionAnswers(limit: Int) throws(LedgerError) -> [(ConsumptionJob, Order?)] {
        let now = time.unixSeconds
        return try read {
            try database.query("""
                SELECT * FROM consumption_answers WHERE state = 'pending' AND next_attempt_at <= ? ORDER BY next_attempt_at LIMIT ?
                """, [.integer(now), .integer(Int64(limit))]).map { row in
                let job = ConsumptionJob(notificationUUID: row.string("notification_uuid") ?? "", transactionId: row.string("transaction_id") ?? "",
                                         environment: row.string("environment") ?? "", orderId: row.string("order_id"),
                                         attempts: Int(row.int("attempts") ?? 0), deadlineAt: row.int("deadline_at") ?? 0)
                let order = try job.orderId.flatMap { id in
                    try database.query("SELECT * FROM orders WHERE order_id = ?", [.text(id)]).first.map(Order.init(row:))
                }
                return (job, order)
            }
        }
    }

    /// What the ledger can show about whether a purchase was delivered, for an answer to a
    /// refund request. Only evidence counts: a finished order of settle's (not refunded since) or
    /// a grant recorded outside settle. Absence of evidence is never "undelivered".
    public func deliveryEvidence(transactionId: String) throws(LedgerError) -> DeliveryEvidence {
        try read {
            let grants = try database.query("""
                SELECT g.order_id AS holder, g.source AS source, o.state AS state, o.refunded_at AS refunded_at
                FROM grants g LEFT JOIN orders o ON o.order_id = g.order_id
                WHERE g.transaction_id = ? OR g.grant_key = ?
                """, [.text(transactionId), .text(transactionId)])
            for row in grants {
                if row.string("source") == "outside" { return .delivered("a grant of transaction \(transactionId) is recorded outside settle") }
                if row.string("state") == OrderState.finished.rawValue, row.int("refunded_at") == nil, let holder = row.string("holder") {
                    return .delivered("settle delivered transaction \(transactionId) (order \(holder))")
                }
            }
            let live = try database.query("""
                SELECT order_id FROM orders WHERE (transaction_id = ? OR verified_transaction_id = ?)
                AND state IN ('pending','verifying','delivering') LIMIT 1
                """, [.text(transactionId), .text(transactionId)]).first?.string("order_id")
            if let live { return .inFlight("order \(live) about transaction \(transactionId) is still being settled") }
            if let row = grants.first, let holder = row.string("holder") {
                return .unknown("order \(holder) holds transaction \(transactionId) but is \(row.string("state") ?? "?")"
                                + (row.int("refunded_at") != nil ? " and refunded" : "") + "; whether the goods are still delivered is not known")
            }
            return .unknown("settle holds no finished order and no recorded grant of transaction \(transactionId)")
        }
    }

    /// An answer that waits for an order still being settled: looked at again at `until`, no attempt used.
    public func postponeConsumptionAnswer(_ job: ConsumptionJob, until: Int64, why: String) throws(LedgerError) {
        let now = time.unixSeconds
        _ = try locked { () throws(LedgerError) in
            try write {
                try database.query("""
                    UPDATE consumption_answers SET next_attempt_at = ?, last_error = ?, updated_at = ? WHERE notification_uuid = ?
                    """, [.integer(until), .text("waiting: \(why)"), .integer(now), .text(job.notificationUUID)])
            }
        }
    }

    /// What an answer attempt concluded: `sent`, `pending` (retry at `nextAttemptAt`) or `failed`.
    public func recordConsumptionAnswer(_ job: ConsumptionJob, state: String, body: String, appleStatus: Int?, error: String?,
                                        nextAttemptAt: Int64, history: HistoryEntry) throws(LedgerError) {
        let now = time.unixSeconds
        _ = try locked { () throws(LedgerError) in
            try write {
                try database.query("""
                    UPDATE consumption_answers SET state = ?, attempts = attempts + 1, next_attempt_at = ?, body = ?, apple_status = ?,
                           last_error = ?, updated_at = ?
                    WHERE notification_uuid = ?
                    """, [.text(state), .integer(nextAttemptAt), .text(body), .from(appleStatus), .from(error), .integer(now),
                          .text(job.notificationUUID)])
                if let orderId = job.orderId { try appendHistory(orderId, history) }
            }
        }
    }

    public func notificationCursor(environment: String) throws(LedgerError) -> NotificationCursor {
        try read {
            guard let row = try database.query("SELECT * FROM notification_cursor WHERE environment = ?", [.text(environment)]).first else {
                return NotificationCursor()
            }
            return NotificationCursor(syncedUntilMs: row.int("synced_until_ms"), windowStartMs: row.int("window_start_ms"),
                                      windowEndMs: row.int("window_end_ms"), paginationToken: row.string("pagination_token"),
                                      startedAtMs: row.int("started_at_ms"))
        }
    }

    public func saveNotificationCursor(_ cursor: NotificationCursor, environment: String) throws(LedgerError) {
        let now = time.unixSeconds
        _ = try locked { () throws(LedgerError) in
            try write {
                try database.query("""
                    INSERT OR REPLACE INTO notification_cursor(environment, synced_until_ms, window_start_ms, window_end_ms,
                                                               pagination_token, started_at_ms, updated_at)
                    VALUES (?, ?, ?, ?, ?, ?, ?)
                    """, [.text(environment), .from(cursor.syncedUntilMs), .from(cursor.windowStartMs), .from(cursor.windowEndMs),
                          .from(cursor.paginationToken), .from(cursor.startedAtMs), .integer(now)])
            }
        }
    }
}
