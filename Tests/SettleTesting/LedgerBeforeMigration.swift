import SettleLedger

/// A ledger as an earlier settle left it: built by the first `version` migrations (and, on SQLite,
/// their steps after), with `seed` (SQL of that schema) run on it, for a migration test to open
/// with the current settle.
package enum LedgerBeforeMigration {
    /// A SQLite ledger at `path`, at schema `version`, seeded in the same transaction.
    package static func sqlite(path: String, version: Int, seed: String) throws {
        let database = try SQLiteDatabase(path: path, mode: .readWrite)
        try database.execute("BEGIN IMMEDIATE")
        for (index, sql) in LedgerSchema.migrations.prefix(version).enumerated() {
            try database.execute(sql)
            try LedgerSchema.afterMigration[index + 1]?(database)
        }
        try database.execute("PRAGMA user_version = \(version)")
        try database.execute(seed)
        try database.execute("COMMIT")
        try database.close()
    }

    /// The PostgreSQL schema `url` names (empty, `TestPostgres.freshSchema`) at schema `version`, seeded.
    package static func postgres(url: String, version: Int, seed: String) throws {
        let connection = try PostgresConnection(url: url)
        defer { connection.close() }
        try connection.execute("""
            CREATE TABLE settle_schema (version INTEGER PRIMARY KEY, applied_at TIMESTAMPTZ NOT NULL DEFAULT now())
            """)
        for (index, sql) in PostgresLedgerSchema.migrations.prefix(version).enumerated() {
            try connection.execute(sql)
            try connection.execute("INSERT INTO settle_schema(version) VALUES (\(index + 1))")
        }
        try connection.execute(seed)
    }
}
