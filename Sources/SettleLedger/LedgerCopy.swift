import Foundation
import SettleModel
import SettleBase

/// Moves a ledger from SQLite to PostgreSQL (`settle ledger copy`): orders with their refund
/// marks, receipts, history, grants, the Apple breaker, and App Store Server Notifications
/// (notifications, revokes and refund-request answers owed or done, the history cursor), in one
/// PostgreSQL transaction, into a ledger that has no orders yet, then checks that every table
/// holds as many rows as the source.
package enum LedgerCopy {
    /// Rows copied, by table.
    package struct Report: Sendable {
        package var counts: [(table: String, rows: Int)]
    }

    /// Columns copied, per table, in an order that satisfies the foreign keys. A column the
    /// source does not have yet (an older schema) is left to the destination's default.
    package static let tables: [(name: String, columns: [String])] = [
        ("receipts", ["sha256", "data", "created_at"]),
        ("orders", ["order_id", "user_id", "product_id", "transaction_id", "receipt_sha256", "signed_transaction", "state",
                    "attempts", "next_attempt_at", "reason", "last_error", "environment", "verified_transaction_id",
                    "original_transaction_id", "verified_product_id", "quantity", "purchase_date_ms", "expires_date_ms",
                    "lease_host", "lease_pid", "lease_start", "lease_expires_at", "created_at", "updated_at", "finished_at",
                    "grant_key", "app_account_token", "origin", "refunded_at", "refund_kind", "refund_reason", "store",
                    "purchase_token", "delivered_at", "replaces", "app_transaction", "proof_kind", "proof", "proof_key",
                    "price_milliunits", "price_currency", "price_source", "recovered_at"]),
        ("history", ["id", "order_id", "at", "kind", "outcome", "apple_status", "hook_exit", "environment", "duration_ms", "detail"]),
        ("grants", ["grant_key", "transaction_id", "order_id", "source", "granted_at", "note"]),
        ("notifications", ["uuid", "type", "subtype", "environment", "signed_date_ms", "transaction_id", "original_transaction_id",
                           "order_id", "source", "received_at", "outcome", "detail", "payload"]),
        ("revocations", ["transaction_id", "order_id", "kind", "state", "attempts", "next_attempt_at", "last_error", "created_at",
                         "updated_at", "round", "claim", "quantity", "revocation_type", "revocation_percentage"]),
        ("consumption_answers", ["notification_uuid", "transaction_id", "environment", "order_id", "state", "attempts",
                                 "next_attempt_at", "deadline_at", "body", "apple_status", "last_error", "updated_at", "claim"]),
        // Without the lease: whichever host reads history first after the copy takes it.
        ("notification_cursor", ["environment", "synced_until_ms", "window_start_ms", "window_end_ms", "pagination_token",
                                 "updated_at", "started_at_ms"]),
        // Without the claim's end: any host may work a push once the copy is done.
        ("play_notifications", ["message_id", "kind", "token_sha256", "order_id", "received_at", "outcome", "detail", "state",
                                "payload", "claim"]),
        ("play_cursor", ["id", "voided_since_ms", "page_token", "polled_at"]),
        ("play_voided", ["google_order_id", "quantity", "voided_at", "source", "voided_time_ms"]),
        ("app_transactions", ["app_transaction_id", "user_id", "environment", "source", "order_id", "learned_at"]),
        ("account_token_updates", ["order_id", "app_account_token", "state", "attempts", "next_attempt_at", "apple_status",
                                   "last_error", "claim", "created_at", "updated_at"]),
        ("apple_finishes", ["transaction_id", "order_id", "environment", "state", "attempts", "claim", "next_attempt_at",
                            "last_error", "created_at", "updated_at"]),
        ("support_actions", ["order_id", "kind", "number", "state", "step", "from_user", "to_user", "note", "requested_by", "target",
                             "target_key", "target_number", "requested_at", "revoked_at", "granted_at", "done_at", "attempts",
                             "next_attempt_at", "last_error", "claim", "updated_at"]),
        ("audit_log", ["id", "at", "actor", "channel", "role", "action", "subject", "detail", "source", "outcome"]),
    ] + CustomerSchema.copied

    /// Copies the SQLite ledger at `path` into `destination`. The source is read in one read
    /// transaction (a consistent snapshot: stop `settle run` first so nothing changes after);
    /// the destination must hold no orders. All or nothing: the destination is written in one
    /// transaction, so a copy that fails or is interrupted leaves it empty, to be run again.
    /// Each table is read in batches of `batchRows` by rowid and written with one
    /// `COPY … FROM STDIN` (`PostgresCopyIn`): memory stays flat however large the ledger.
    /// `progress` hears each table's rows as they go (every `batchRows`), for a terminal's progress line.
    package static func copy(fromSQLite path: String, to destination: PostgresLedger,
                             progress: ((_ table: String, _ rows: Int) -> Void)? = nil) throws(LedgerError) -> Report {
        let source = try SQLiteLedger(readOnlyPath: path)
        let version = try source.schemaVersion()
        guard version >= 4 else { throw .olderSchema(found: version, needed: 4) }
        // The core's tables, then each store module's.
        let tables = Self.tables + LedgerMigrations.all.flatMap { $0.copied.map { ($0.name, $0.columns) } }
        do {
            return try source.database.readTransaction {
                var report = Report(counts: [])
                // The columns each table has in the source (none: the table came with a later schema).
                var present: [String: Set<String>] = [:]
                for table in tables {
                    present[table.name] = Set(try source.database.query("SELECT name FROM pragma_table_info(?)", [.text(table.name)])
                        .compactMap { $0.string("name") })
                }
                try destination.write { db in
                    let existing = try db.run("SELECT count(*) AS n FROM orders").first?.int("n") ?? 0
                    guard existing == 0 else {
                        let held = Plural.count(existing, "order")
                        throw LedgerError.invalid("the destination ledger already holds \(held); "
                                                  + "copy into an empty one")
                    }
                    // The destination's own starting rows give way to the source's.
                    try db.run("DELETE FROM store_breakers")
                    // Orders keep their states: the trigger that makes a backend's new rows
                    // `pending` is off for this transaction only (DDL is transactional).
                    try db.run("ALTER TABLE orders DISABLE TRIGGER orders_new_pending")
                    try db.run("ALTER TABLE orders DISABLE TRIGGER orders_new_unpriced")
                    // Counted once at the end rather than by the trigger a row.
                    let keepsCounts = try db.run("SELECT to_regclass('order_count_deltas') IS NOT NULL AS kept")
                        .first?.bool("kept") == true
                    if keepsCounts { try db.run("ALTER TABLE orders DISABLE TRIGGER orders_count") }
                    for table in tables {
                        let columns = table.columns.filter { present[table.name]?.contains($0) == true }
                        guard !columns.isEmpty else { continue }
                        let copied = try copyTable(table.name, columns: columns, from: source.database, to: db,
                                                   progress: progress)
                        let counted = Int(try db.run("SELECT count(*) AS n FROM \(table.name)").first?.int("n") ?? -1)
                        guard counted == copied else {
                            throw LedgerError.invalid("\(table.name): copied \(Plural.count(copied, "row")) "
                                                      + "but the destination holds \(counted)")
                        }
                        report.counts.append((table.name, copied))
                    }
                    if keepsCounts {
                        try db.execute(PostgresLedgerSchema.recountOrders)
                        try db.run("ALTER TABLE orders ENABLE TRIGGER orders_count")
                    }
                    // A source older than the store breakers has Apple's only: the App Store's.
                    let breakers = version >= LedgerSchema.storeBreakersVersion
                        ? "SELECT * FROM store_breakers" : LedgerSchema.breakersBeforeStoreBreakers
                    for row in try source.database.query(breakers) {
                        try db.run("""
                            INSERT INTO store_breakers(store, state, consecutive_failures, cooldown_seconds, retry_at, last_error, updated_at)
                            VALUES (?, ?, ?, ?, ?, ?, ?)
                            """, ["store", "state", "consecutive_failures", "cooldown_seconds", "retry_at", "last_error", "updated_at"]
                                .map { value(row, $0) })
                    }
                    for store in Store.allCases {
                        try db.run("INSERT INTO store_breakers(store) VALUES (?) ON CONFLICT DO NOTHING", [.text(store.rawValue)])
                    }
                    try db.run("ALTER TABLE orders ENABLE TRIGGER orders_new_pending")
                    try db.run("ALTER TABLE orders ENABLE TRIGGER orders_new_unpriced")
                    // History ids were copied as they were: the sequence continues after the last.
                    try db.run("SELECT setval(pg_get_serial_sequence('history', 'id'), greatest((SELECT max(id) FROM history), 1))")
                    try db.run("""
                        SELECT setval(pg_get_serial_sequence('audit_log', 'id'),
                                      greatest((SELECT max(id) FROM audit_log), 1))
                        """)
                }
                // The planner's statistics of the copied tables now, not at autovacuum's next
                // look: until then a million orders read as an empty table, and settle status
                // and the console's searches scanned it (235 ms a search at 1 M orders; 12 ms after).
                try destination.write { db in try db.run("ANALYZE " + tables.map(\.name).joined(separator: ", ")) }
                return report
            }
        } catch let error as LedgerError {
            throw error
        } catch let error as SQLiteError {
            throw .io(error)
        } catch {
            throw .invalid("\(error)")
        }
    }

    /// Rows read from the source at a time.
    package static let batchRows = 10_000

    /// Streams one table: keyset batches by rowid out of SQLite, one COPY into PostgreSQL.
    private static func copyTable(_ table: String, columns: [String], from source: SQLiteDatabase,
                                  to db: PostgresConnection, progress: ((String, Int) -> Void)?) throws -> Int {
        let rebuilt = try SecondaryIndexes.drop(on: table, db)
        var copy = try PostgresCopyIn("COPY \(table)(\(columns.joined(separator: ", "))) FROM STDIN", on: db)
        let select = "SELECT rowid AS settle_copy_rowid, \(columns.joined(separator: ", ")) FROM \(table)"
            + " WHERE rowid > ? ORDER BY rowid LIMIT \(batchRows)"
        var last = Int64.min
        do {
            while true {
                let batch = try source.query(select, [.integer(last)])
                for row in batch { try copy.append(columns.map { value(row, $0) }) }
                guard let end = batch.last?.int("settle_copy_rowid") else { break }
                last = end
                progress?(table, copy.rows)
                if batch.count < batchRows { break }
            }
        } catch {
            copy.abandon()
            throw error
        }
        let rows = copy.rows
        try copy.finish()
        try rebuilt.create(db)
        return rows
    }

    private static func value(_ row: SQLiteRow, _ column: String) -> PostgresValue {
        switch row.value(column) {
        case let .integer(n)?: return .integer(n)
        case let .text(s)?: return .text(s)
        default: return .null
        }
    }
}
