import Foundation
import SettleModel

/// What stays PostgreSQL's own among the order writes: setting aside rows put in flight by
/// someone else than settle (the transitions are written once, in `TransactionalLedger+Orders`).
extension PostgresLedger {
    /// Typed columns and valid UTF-8 leave PostgreSQL no malformed rows, and new rows are forced
    /// to `pending`; what is left is a row put in flight by someone else than settle (a role
    /// with UPDATE): `delivering` without holding its grant row, or in flight without a claim.
    /// As on SQLite, such a row goes to `needs_attention` (`row_invalid`) and is never delivered.
    package func quarantineMalformedRows() throws(LedgerError) -> [String] {
        let now = time.unixSeconds
        return try write { db in
            let ids = try db.run("""
                UPDATE orders SET state = 'needs_attention', reason = 'row_invalid',
                       last_error = 'this row was ' || state || ' without ' ||
                                    CASE WHEN lease_host IS NOT NULL AND lease_start IS NOT NULL AND lease_expires_at IS NOT NULL
                                         THEN 'the grant row settle reserves before any delivery' ELSE 'a claim of settle''s' END ||
                                    ': settle moves orders out of pending itself, after its store confirmed the purchase. ' ||
                                    'Check who wrote it; a backend writes new orders as pending',
                       updated_at = ?, delivered_at = NULL, lease_host = NULL, lease_pid = NULL, lease_start = NULL, lease_expires_at = NULL
                WHERE \(SQLiteLedger.inFlightWithoutClaim)
                RETURNING order_id
                """, [.integer(now)]).compactMap { $0.string("order_id") }
            for id in ids {
                try appendHistory(db, id, HistoryEntry(at: now, kind: .verification, outcome: "needs_attention",
                                                       detail: "row_invalid: written in flight without a claim or a grant"))
            }
            return ids
        }
    }

    package func appendHistory(_ db: PostgresConnection, _ orderId: String, _ entry: HistoryEntry) throws {
        try PostgresTransaction(connection: db).appendHistory(orderId, entry)
    }
}
