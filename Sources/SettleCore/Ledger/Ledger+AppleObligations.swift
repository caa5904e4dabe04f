import Foundation

/// A revoke owed to the operator's hook after Apple took a delivered purchase back.
public struct RevocationJob: Sendable, Equatable {
    public var transactionId: String
    public var orderId: String
    public var kind: String
    public var attempts: Int
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

/// Where Get Notification History resumes in one environment.
public struct NotificationCursor: Sendable, Equatable {
    /// Everything sent before this (ms) has been read.
    public var syncedUntilMs: Int64?
    /// The window being paged now, and where in it; nil when none is open.
    public var windowStartMs: Int64?
    public var windowEndMs: Int64?
    public var paginationToken: String?

    public init(syncedUntilMs: Int64? = nil, windowStartMs: Int64? = nil, windowEndMs: Int64? = nil, paginationToken: String? = nil) {
        self.syncedUntilMs = syncedUntilMs
        self.windowStartMs = windowStartMs
        self.windowEndMs = windowEndMs
        self.paginationToken = paginationToken
    }
}

/// Revokes and refund-request answers: work that notifications leave for passes, each retried
/// with backoff until done, like deliveries.
extension Ledger {
    /// Due revokes whose order was delivered. A revoke whose order ended up never delivered is
    /// cancelled here; one whose delivery is still in flight waits for it.
    public func dueRevocations(limit: Int) throws(LedgerError) -> [(RevocationJob, Order)] {
        let now = time.unixSeconds
        return try locked { () throws(LedgerError) in
            try write {
                try database.query("""
                    UPDATE revocations SET state = 'cancelled', last_error = 'the order was never delivered', updated_at = ?
                    WHERE state = 'pending' AND order_id IN (SELECT order_id FROM orders WHERE state IN ('rejected','pending','needs_attention'))
                    """, [.integer(now)])
                return try database.query("""
                    SELECT r.transaction_id AS job_transaction, r.kind AS job_kind, r.attempts AS job_attempts, o.*
                    FROM revocations r JOIN orders o ON o.order_id = r.order_id
                    WHERE r.state = 'pending' AND r.next_attempt_at <= ? AND o.state = 'finished'
                    ORDER BY r.next_attempt_at LIMIT ?
                    """, [.integer(now), .integer(Int64(limit))]).map { row in
                    let order = Order(row: row)
                    return (RevocationJob(transactionId: row.string("job_transaction") ?? "", orderId: order.orderId,
                                          kind: row.string("job_kind") ?? "REFUND", attempts: Int(row.int("job_attempts") ?? 0)), order)
                }
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
                                      windowEndMs: row.int("window_end_ms"), paginationToken: row.string("pagination_token"))
        }
    }

    public func saveNotificationCursor(_ cursor: NotificationCursor, environment: String) throws(LedgerError) {
        let now = time.unixSeconds
        _ = try locked { () throws(LedgerError) in
            try write {
                try database.query("""
                    INSERT OR REPLACE INTO notification_cursor(environment, synced_until_ms, window_start_ms, window_end_ms,
                                                               pagination_token, updated_at)
                    VALUES (?, ?, ?, ?, ?, ?)
                    """, [.text(environment), .from(cursor.syncedUntilMs), .from(cursor.windowStartMs), .from(cursor.windowEndMs),
                          .from(cursor.paginationToken), .integer(now)])
            }
        }
    }
}
