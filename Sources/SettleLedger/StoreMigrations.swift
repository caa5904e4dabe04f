import Synchronization
import SettleBase

/// A store module's own tables, by name (`bogus.sales_seen`, `huawei.notifications`), as GRDB's
/// `DatabaseMigrator` names migrations: each is applied once, after the core's numbered
/// migrations, in the order the modules registered them, and recorded in `ledger_migrations`.
/// "Are this store's tables there" is a question about the name (`hasMigration`), never about
/// the core's schema version.
package struct LedgerMigration: Sendable, Equatable {
    /// `<store>.<what>`: unique across every module.
    package var name: String
    package var sqlite: String
    package var postgres: String
    /// The tables it makes that `settle ledger copy` carries from SQLite to PostgreSQL, with
    /// their columns: a store's rows move with the ledger.
    package var copied: [CopiedTable]

    package init(name: String, sqlite: String, postgres: String, copied: [CopiedTable] = []) {
        self.name = name
        self.sqlite = sqlite
        self.postgres = postgres
        self.copied = copied
    }
}

/// A table `settle ledger copy` carries, with the columns it copies.
package struct CopiedTable: Sendable, Equatable {
    package var name: String
    package var columns: [String]

    package init(_ name: String, columns: [String]) {
        self.name = name
        self.columns = columns
    }
}

/// The registered modules' migrations (`StoreModule.migrations`, registered as the process starts).
package enum LedgerMigrations {
    private static let registered = Mutex<[LedgerMigration]>([])

    /// Adds `migrations` after those registered before; one already registered by name stays
    /// where it was (the same module registered twice).
    package static func register(_ migrations: [LedgerMigration]) {
        registered.withLock { list in
            for migration in migrations where !list.contains(where: { $0.name == migration.name }) { list.append(migration) }
        }
    }

    package static var all: [LedgerMigration] { registered.withLock { $0 } }

    static let sqliteTable = "CREATE TABLE IF NOT EXISTS ledger_migrations (name TEXT PRIMARY KEY NOT NULL, applied_at INTEGER NOT NULL)"
    static let postgresTable = "CREATE TABLE IF NOT EXISTS ledger_migrations (name TEXT PRIMARY KEY, applied_at BIGINT NOT NULL)"
}
