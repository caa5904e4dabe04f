import SettleModel
import SettleAppStore
import SettleLedger

/// Where Get Notification History resumes in one environment.
package struct NotificationCursor: Sendable, Equatable {
    /// Everything sent before this (ms) has been read.
    package var syncedUntilMs: Int64?
    /// The window being paged now, and where in it; nil when none is open.
    package var windowStartMs: Int64?
    package var windowEndMs: Int64?
    package var paginationToken: String?
    /// When settle first read this environment's history (ms): purchases older than that are
    /// back-filled, reported for a person rather than delivered. nil before the first start
    /// (and on ledgers that read history before this was kept).
    package var startedAtMs: Int64?

    package init(syncedUntilMs: Int64? = nil, windowStartMs: Int64? = nil, windowEndMs: Int64? = nil, paginationToken: String? = nil,
                startedAtMs: Int64? = nil) {
        self.syncedUntilMs = syncedUntilMs
        self.windowStartMs = windowStartMs
        self.windowEndMs = windowEndMs
        self.paginationToken = paginationToken
        self.startedAtMs = startedAtMs
    }
}

/// The history cursor of each environment, shared by every host: one catch-up of Get
/// Notification History at a time, held under a lease.
extension TransactionalLedger {
    package func notificationCursor(environment: AppleEnvironment) throws(LedgerError) -> NotificationCursor {
        try reading { db in
            try db.query("SELECT * FROM notification_cursor WHERE environment = ?", [.text(environment.rawValue)]).first
                .map(NotificationCursor.init(row:)) ?? NotificationCursor()
        }
    }

    /// Takes this environment's history catch-up for `owner` until `leaseSeconds` from now, and
    /// returns where it resumes; nil while another host's catch-up holds it (its lease not yet
    /// expired: a host that died mid-page hands over when its lease runs out, at the page it saved).
    package func claimNotificationHistory(environment: AppleEnvironment, owner: String, leaseSeconds: Int64) throws(LedgerError) -> NotificationCursor? {
        let now = time.unixSeconds
        return try writing { db in
            try db.query("INSERT INTO notification_cursor(environment, updated_at) VALUES (?, ?) ON CONFLICT (environment) DO NOTHING",
                         [.text(environment.rawValue), .integer(now)])
            guard let row = try db.query("SELECT * FROM notification_cursor WHERE environment = ?\(db.dialect.lockRows)",
                                         [.text(environment.rawValue)]).first else { return nil }
            if let holder = row.string("lease_owner"), holder != owner, (row.int("lease_expires_at") ?? 0) > now { return nil }
            try db.query("UPDATE notification_cursor SET lease_owner = ?, lease_expires_at = ? WHERE environment = ?",
                         [.text(owner), .integer(now + leaseSeconds), .text(environment.rawValue)])
            return NotificationCursor(row: row)
        }
    }

    /// Saves where the catch-up is and renews `owner`'s lease on it. Returns false, saving
    /// nothing, when `owner` no longer holds it (its lease ran out and another host took over).
    @discardableResult
    package func saveNotificationCursor(_ cursor: NotificationCursor, environment: AppleEnvironment, owner: String,
                                       leaseSeconds: Int64) throws(LedgerError) -> Bool {
        let now = time.unixSeconds
        return try writing { db in
            try !db.query("""
                UPDATE notification_cursor SET synced_until_ms = ?, window_start_ms = ?, window_end_ms = ?, pagination_token = ?,
                       started_at_ms = ?, lease_expires_at = ?, updated_at = ?
                WHERE environment = ? AND lease_owner = ?
                RETURNING environment
                """, [.from(cursor.syncedUntilMs), .from(cursor.windowStartMs), .from(cursor.windowEndMs), .from(cursor.paginationToken),
                      .from(cursor.startedAtMs), .integer(now + leaseSeconds), .integer(now), .text(environment.rawValue), .text(owner)]).isEmpty
        }
    }

    /// Ends `owner`'s catch-up of this environment: the next host may take it at once.
    package func releaseNotificationHistory(environment: AppleEnvironment, owner: String) throws(LedgerError) {
        try writing { db in
            try db.query("UPDATE notification_cursor SET lease_owner = NULL, lease_expires_at = NULL WHERE environment = ? AND lease_owner = ?",
                         [.text(environment.rawValue), .text(owner)])
        }
    }

    /// Sets the cursor outright, whoever holds it (tests, and an operator's restart of the catch-up).
    package func saveNotificationCursor(_ cursor: NotificationCursor, environment: AppleEnvironment) throws(LedgerError) {
        let now = time.unixSeconds
        try writing { db in
            try db.query("""
                INSERT INTO notification_cursor(environment, synced_until_ms, window_start_ms, window_end_ms, pagination_token,
                                                started_at_ms, updated_at)
                VALUES (?, ?, ?, ?, ?, ?, ?)
                ON CONFLICT (environment) DO UPDATE SET synced_until_ms = excluded.synced_until_ms,
                    window_start_ms = excluded.window_start_ms, window_end_ms = excluded.window_end_ms,
                    pagination_token = excluded.pagination_token, started_at_ms = excluded.started_at_ms, updated_at = excluded.updated_at
                """, [.text(environment.rawValue), .from(cursor.syncedUntilMs), .from(cursor.windowStartMs), .from(cursor.windowEndMs),
                      .from(cursor.paginationToken), .from(cursor.startedAtMs), .integer(now)])
        }
    }
}

extension NotificationCursor {
    package init(row: any LedgerRow) {
        self.init(syncedUntilMs: row.int("synced_until_ms"), windowStartMs: row.int("window_start_ms"), windowEndMs: row.int("window_end_ms"),
                  paginationToken: row.string("pagination_token"), startedAtMs: row.int("started_at_ms"))
    }
}

extension ConsumptionJob {
    /// Where the answer goes; nil for text settle does not know, which is never answered.
    package var environment: AppleEnvironment? { AppleEnvironment(rawValue: storedEnvironment) }
}
