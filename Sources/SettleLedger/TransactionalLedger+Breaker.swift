import Foundation

/// The Apple breaker, kept in the ledger so every pass (and on PostgreSQL every host) sees the
/// same one, written once for both engines. Taking the probe when it is due stays per engine
/// (`appleBreakerForPass`): on a shared ledger only one host may get it.
extension TransactionalLedger {
    package func saveAppleBreaker(_ breaker: AppleBreaker) throws(LedgerError) {
        let now = time.unixSeconds
        try writing { db in
            try db.query("""
                INSERT INTO apple_breaker(id, state, consecutive_failures, cooldown_seconds, retry_at, last_error, updated_at)
                VALUES (1, ?, ?, ?, ?, ?, ?)
                ON CONFLICT(id) DO UPDATE SET state = excluded.state, consecutive_failures = excluded.consecutive_failures,
                    cooldown_seconds = excluded.cooldown_seconds, retry_at = excluded.retry_at,
                    last_error = excluded.last_error, updated_at = excluded.updated_at
                """, [.text(breaker.state.rawValue), .integer(Int64(breaker.consecutiveFailures)),
                      .integer(breaker.cooldownSeconds), .from(breaker.retryAt), .from(breaker.storedLastError), .integer(now)])
        }
    }
}

extension LedgerTransaction {
    /// The persisted breaker (closed when there is no row).
    package func appleBreaker() throws -> AppleBreaker {
        guard let row = try query("SELECT * FROM apple_breaker WHERE id = 1").first else { return AppleBreaker() }
        return AppleBreaker(state: AppleBreaker.State(rawValue: row.string("state") ?? "") ?? .closed,
                            consecutiveFailures: Int(row.int("consecutive_failures") ?? 0),
                            cooldownSeconds: row.int("cooldown_seconds") ?? 0, retryAt: row.int("retry_at"),
                            lastError: AppleBreaker.storedError(row.string("last_error")).message,
                            lastErrorAt: AppleBreaker.storedError(row.string("last_error")).at)
    }
}
