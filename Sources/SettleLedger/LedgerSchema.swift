
/// The ledger's migrations. Each runs once, in one transaction, and is recorded in
/// `PRAGMA user_version`. The tables and columns that backends write only ever grow.
package enum LedgerSchema {
    /// The migration that names each order's store (`store`, `purchase_token`; with Google Play's tables).
    package static let storeColumnVersion = 8
    /// The migration that gives each store a breaker of its own.
    package static let storeBreakersVersion = 9
    /// The migration that keeps each host's pacer buckets.
    package static let pacerBucketsVersion = 14
    /// The migration that records support's transfers and redeliveries (`support_actions`).
    package static let supportActionsVersion = 15
    /// The migration that names a side queue's claim's owner (`SideQueue`).
    package static let sideClaimOwnersVersion = 17
    /// The migration after which the schema names no store: any registered store's orders fit.
    package static let openStoresVersion = 18
    /// The migration that keeps a store module's proof as data (`proof_kind`, `proof`, `proof_key`).
    package static let storeProofVersion = 19
    /// The migration that keeps the audit log (`audit_log`, issue 36).
    package static let auditLogVersion = 20
    /// The migration that writes the CHECKs' `IN` lists as comparisons (`InListChecks`, issue 38).
    package static let inListChecksVersion = 21

    /// What a migration needs beyond its SQL, run after it in the same transaction.
    package static let afterMigration: [Int: @Sendable (SQLiteDatabase) throws -> Void] = [
        openStoresVersion: dropStoreLists, storeProofVersion: acceptStoreProofs, inListChecksVersion: InListChecks.rewrite,
    ]

    /// An order's proof may be a module's (`proof`): the proof CHECK of `orders` accepts it.
    static func acceptStoreProofs(_ database: SQLiteDatabase) throws {
        try editStoredTables(database, ["orders"], replacing: "OR transaction_id IS NOT NULL END",
                             with: "OR transaction_id IS NOT NULL OR proof IS NOT NULL END")
    }

    /// Changes a CHECK of `tables` as SQLite documents for it without rebuilding a table (a
    /// million orders): the stored CREATE TABLE text is edited and the schema version raised, in
    /// the migration's transaction. `text` and `replacement` are SQL string literals' contents.
    /// https://www.sqlite.org/lang_altertable.html#otheralter
    static func editStoredTables(_ database: SQLiteDatabase, _ tables: [String], replacing text: String,
                                         with replacement: String) throws {
        let version = try database.query("PRAGMA schema_version").first?.int("schema_version") ?? 0
        try database.execute("PRAGMA writable_schema = ON")
        try database.execute("""
            UPDATE sqlite_schema SET sql = replace(sql, '\(text)', '\(replacement)')
            WHERE type = 'table' AND name IN (\(tables.map { "'\($0)'" }.joined(separator: ", ")))
            """)
        try database.execute("PRAGMA schema_version = \(version + 1)")
        try database.execute("PRAGMA writable_schema = OFF")
    }

}

extension LedgerSchema {
    /// The version `migration` makes: its place in `migrations`, counted from 1 (a migration's
    /// version is never a number kept by hand beside the list).
    static func version(of migration: String) -> Int {
        guard let index = migrations.firstIndex(of: migration) else { preconditionFailure("not a migration of the SQLite ledger") }
        return index + 1
    }
}
