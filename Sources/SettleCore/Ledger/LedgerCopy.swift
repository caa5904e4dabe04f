import Foundation

/// Moves a ledger from SQLite to PostgreSQL (`settle ledger copy`): orders, receipts, history,
/// grants and the Apple breaker, in one PostgreSQL transaction, into a ledger that has no orders
/// yet, then checks that every table holds as many rows as the source.
public enum LedgerCopy {
    /// Rows copied, by table.
    public struct Report: Sendable {
        public var counts: [(table: String, rows: Int)]
        /// Rows of the source that have no place in the destination yet (App Store Server
        /// Notifications' tables), by table; nothing is copied from them. Empty unless the
        /// copy was told to leave them (`leavingNotifications`).
        public var leftBehind: [(table: String, rows: Int)]
    }

    /// Columns copied, per table, in an order that satisfies the foreign keys.
    static let tables: [(name: String, columns: [String])] = [
        ("receipts", ["sha256", "data", "created_at"]),
        ("orders", ["order_id", "user_id", "product_id", "transaction_id", "receipt_sha256", "signed_transaction", "state",
                    "attempts", "next_attempt_at", "reason", "last_error", "environment", "verified_transaction_id",
                    "original_transaction_id", "verified_product_id", "quantity", "purchase_date_ms", "expires_date_ms",
                    "lease_host", "lease_pid", "lease_start", "lease_expires_at", "created_at", "updated_at", "finished_at",
                    "grant_key", "app_account_token", "origin", "refunded_at", "refund_kind", "refund_reason"]),
        ("history", ["id", "order_id", "at", "kind", "outcome", "apple_status", "hook_exit", "environment", "duration_ms", "detail"]),
        ("grants", ["grant_key", "transaction_id", "order_id", "source", "granted_at", "note"]),
    ]

    /// App Store Server Notifications' tables (SQLite schema 5), which PostgreSQL does not keep
    /// yet, with what in each is still owed: a copy that would leave any row behind is refused
    /// unless the operator says so (`--leave-notifications`), so nothing is dropped silently.
    static let notificationTables: [(name: String, owed: String?)] = [
        ("notifications", nil),
        ("revocations", "state = 'pending'"),
        ("consumption_answers", "state = 'pending'"),
    ]

    /// The order columns that came with SQLite schema 5 (a ledger at schema 4 has none of them).
    static let schema5OrderColumns: Set<String> = ["origin", "refunded_at", "refund_kind", "refund_reason"]

    /// Copies the SQLite ledger at `path` into `destination`. The source is read in one read
    /// transaction (a consistent snapshot: stop `settle run` first so nothing changes after);
    /// the destination must hold no orders.
    public static func copy(fromSQLite path: String, to destination: PostgresLedger,
                            leavingNotifications: Bool = false) throws(LedgerError) -> Report {
        let source = try Ledger(readOnlyPath: path)
        let version = try source.schemaVersion()
        guard version >= 4 else { throw .olderSchema(found: version, needed: 4) }
        do {
            return try source.database.readTransaction {
                var report = Report(counts: [], leftBehind: [])
                var owed: [String] = []
                for table in notificationTables {
                    let exists = try !source.database.query("SELECT 1 AS present FROM sqlite_master WHERE type = 'table' AND name = ?",
                                                            [.text(table.name)]).isEmpty
                    guard exists else { continue }
                    let n = Int(try source.database.query("SELECT count(*) AS n FROM \(table.name)").first?.int("n") ?? 0)
                    if n > 0 { report.leftBehind.append((table.name, n)) }
                    if let due = table.owed {
                        let pending = Int(try source.database.query("SELECT count(*) AS n FROM \(table.name) WHERE \(due)").first?.int("n") ?? 0)
                        if pending > 0 { owed.append("\(pending) pending \(table.name == "revocations" ? "revokes" : "refund-request answers to Apple")") }
                    }
                }
                if !report.leftBehind.isEmpty && !leavingNotifications {
                    let rows = report.leftBehind.map { "\($0.table): \($0.rows) rows" }.joined(separator: ", ")
                    throw LedgerError.invalid("""
                        the ledger used App Store Server Notifications, which a PostgreSQL ledger does not keep yet; copying would \
                        leave behind \(rows)\(owed.isEmpty ? "" : " (" + owed.joined(separator: ", ") + " would never be done)"). \
                        Nothing was copied. Let settle run finish the pending work first, or pass --leave-notifications to copy \
                        the orders anyway and keep those rows only in the SQLite file
                        """)
                }
                try destination.write { db in
                    let existing = try db.run("SELECT count(*) AS n FROM orders").first?.int("n") ?? 0
                    guard existing == 0 else {
                        throw LedgerError.invalid("the destination ledger already holds \(existing) orders; copy into an empty one")
                    }
                    // The destination's own starting rows give way to the source's.
                    try db.run("DELETE FROM apple_breaker")
                    // Orders keep their states: the trigger that makes a backend's new rows
                    // `pending` is off for this transaction only (DDL is transactional).
                    try db.run("ALTER TABLE orders DISABLE TRIGGER orders_new_pending")
                    for table in tables {
                        let columns = table.columns.filter { version >= 5 || !schema5OrderColumns.contains($0) || table.name != "orders" }
                        let marks = Array(repeating: "?", count: columns.count).joined(separator: ", ")
                        let insert = "INSERT INTO \(table.name)(\(columns.joined(separator: ", "))) VALUES (\(marks))"
                        var copied = 0
                        for row in try source.database.query("SELECT \(columns.joined(separator: ", ")) FROM \(table.name)") {
                            try db.run(insert, columns.map { column in value(row, column) })
                            copied += 1
                        }
                        let counted = Int(try db.run("SELECT count(*) AS n FROM \(table.name)").first?.int("n") ?? -1)
                        guard counted == copied else {
                            throw LedgerError.invalid("\(table.name): copied \(copied) rows but the destination holds \(counted)")
                        }
                        report.counts.append((table.name, copied))
                    }
                    for row in try source.database.query("SELECT * FROM apple_breaker") {
                        try db.run("""
                            INSERT INTO apple_breaker(id, state, consecutive_failures, cooldown_seconds, retry_at, last_error, updated_at)
                            VALUES (1, ?, ?, ?, ?, ?, ?)
                            """, ["state", "consecutive_failures", "cooldown_seconds", "retry_at", "last_error", "updated_at"].map { value(row, $0) })
                    }
                    if try db.run("SELECT count(*) AS n FROM apple_breaker").first?.int("n") == 0 {
                        try db.run("INSERT INTO apple_breaker(id) VALUES (1)")
                    }
                    try db.run("ALTER TABLE orders ENABLE TRIGGER orders_new_pending")
                    // History ids were copied as they were: the sequence continues after the last.
                    try db.run("SELECT setval(pg_get_serial_sequence('history', 'id'), greatest((SELECT max(id) FROM history), 1))")
                }
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

    private static func value(_ row: SQLiteRow, _ column: String) -> PostgresValue {
        switch row.values[column] {
        case let .integer(n)?: return .integer(n)
        case let .text(s)?: return .text(s)
        default: return .null
        }
    }
}
