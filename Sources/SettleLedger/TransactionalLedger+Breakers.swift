import Foundation
import SettleModel

/// Each store's breaker, kept in the ledger (`store_breakers`, a row per store) so every pass,
/// and on PostgreSQL every host, sees the same one; written once for both engines. Taking a
/// store's probe when it is due stays per engine (`breakersForPass`): on a shared ledger only
/// one host may get it.
extension TransactionalLedger {
    package func saveBreaker(_ breaker: StoreBreaker, of store: Store) throws(LedgerError) {
        let now = time.unixSeconds
        try writing { db in
            try db.query("""
                INSERT INTO store_breakers(store, state, consecutive_failures, cooldown_seconds, retry_at, last_error, updated_at)
                VALUES (?, ?, ?, ?, ?, ?, ?)
                ON CONFLICT(store) DO UPDATE SET state = excluded.state, consecutive_failures = excluded.consecutive_failures,
                    cooldown_seconds = excluded.cooldown_seconds, retry_at = excluded.retry_at,
                    last_error = excluded.last_error, updated_at = excluded.updated_at
                """, [.text(store.rawValue), .text(breaker.state.rawValue), .integer(Int64(breaker.consecutiveFailures)),
                      .integer(breaker.cooldownSeconds), .from(breaker.retryAt), .from(breaker.storedLastError), .integer(now)])
        }
    }
}

extension LedgerTransaction {
    /// Every store's persisted breaker; a store without a row is closed.
    package func breakers() throws -> [Store: StoreBreaker] {
        var breakers = Dictionary(uniqueKeysWithValues: Store.allCases.map { ($0, StoreBreaker()) })
        for row in try query("SELECT * FROM store_breakers") {
            guard let store = row.string("store").flatMap(Store.init(rawValue:)) else { continue }
            let stored = StoreBreaker.storedError(row.string("last_error"))
            breakers[store] = StoreBreaker(state: StoreBreaker.State(rawValue: row.string("state") ?? "") ?? .closed,
                                           consecutiveFailures: Int(row.int("consecutive_failures") ?? 0),
                                           cooldownSeconds: row.int("cooldown_seconds") ?? 0, retryAt: row.int("retry_at"),
                                           lastError: stored.message, lastErrorAt: stored.at)
        }
        return breakers
    }
}
