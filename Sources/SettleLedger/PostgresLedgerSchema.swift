
/// The PostgreSQL ledger's migrations. Each runs once, in its own transaction, under an
/// advisory lock (`PostgresLedger.migrate`), and is recorded in `settle_schema`. Columns,
/// states and constraints are those of the SQLite ledger (`LedgerSchema`), so a ledger can
/// be copied between them; what differs is what several hosts need: the fencing token, the
/// daemons' heartbeats, and timestamps a backend can fill from the database's clock.
package enum PostgresLedgerSchema {
    /// Taken by `pg_advisory_xact_lock` around each migration: the first bytes of "settle" as an integer.
    package static let migrationLock: Int64 = 0x7365_7474_6C65_0001

    /// The first schema with App Store Server Notifications' tables.
    package static let notificationsVersion = 3
    /// The migration that names each order's store (`store`, `purchase_token`; with Google Play's tables).
    package static let storeColumnVersion = 4
    /// The migration that gives each store a breaker of its own.
    package static let storeBreakersVersion = 5
    /// The migration that keeps each host's pacer buckets.
    package static let pacerBucketsVersion = 10
    /// The migration that records support's transfers and redeliveries (`support_actions`).
    package static let supportActionsVersion = 11
    /// The migration that names a side queue's claim's owner (`SideQueue`).
    package static let sideClaimOwnersVersion = 14
    /// The migration after which the schema names no store.
    package static let openStoresVersion = 15
    /// The migration that keeps a store module's proof as data.
    package static let storeProofVersion = 16
    /// The migration that keeps the audit log (`audit_log`, issue 36).
    package static let auditLogVersion = 17
}

extension PostgresLedgerSchema {
    /// The version `migration` makes: its place in `migrations`, counted from 1.
    static func version(of migration: String) -> Int {
        guard let index = migrations.firstIndex(of: migration) else { preconditionFailure("not a migration of the PostgreSQL ledger") }
        return index + 1
    }
}
