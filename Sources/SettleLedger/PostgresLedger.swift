import Foundation
import SettleBase
import SettleConfig

/// The PostgreSQL ledger: the same orders, states and grants as `SQLiteLedger`, shared by
/// any number of `settle run` processes on any number of hosts.
///
/// What keeps several hosts safe: a claim takes a row with `FOR UPDATE SKIP LOCKED` and
/// re-checks its state in the same statement; each claim bumps the order's fencing token and
/// every transition names the token it holds, so a worker whose claim was taken over changes
/// nothing; leases are measured on the database's clock (`now()`), never a host's; an owner on
/// another host is judged dead only by its lease expiring. Each transition is one short
/// transaction on a pooled connection; none spans network I/O or a hook run.
///
/// Due times (`next_attempt_at`) and history timestamps come from `time`, as on SQLite: a
/// host's clock skew can move a retry by that much, never hand one order to two workers.
package final class PostgresLedger: LedgerStore, @unchecked Sendable {
    package let pool: PostgresPool
    package let schemaFloor = SchemaFloor()
    package let time: any TimeSource
    package let location: String
    package var isShared: Bool { true }
    package var sharesCommits: Bool { false }

    /// The database's clock in the ledger's unit (seconds since the epoch).
    package static let databaseNow = "extract(epoch FROM now())::bigint"

    /// How the ledger is opened: as for SQLite, only the commands that own its life migrate.
    /// How a command opens the ledger. `migrating`: creates and migrates it (`migrate`, `run`,
    /// `reconcile`). `existing`: a backend's command (`enqueue`, `grant-recorded`) may create a
    /// brand-new ledger but refuses one that needs a migration. `current`: a support command
    /// (`retry`, `resolve`, `assign`) works on a ledger that exists and is up to date, never
    /// creating one. `readOnly`: `status` and a console without actions, on sessions the database
    /// itself keeps read-only (`default_transaction_read_only`), so no code path can write.
    package enum Access: Sendable { case migrating, existing, current, readOnly }

    /// Connects (lazily, per worker) and checks or brings the schema up to date.
    /// `connections` bounds the pool: a pass's workers, a lease-renewal timer and status.
    package init(url: String, password: Secret? = nil, access: Access = .migrating, time: any TimeSource = SystemTimeSource(),
                connections: Int = 8) throws(LedgerError) {
        pool = PostgresPool(url: url, password: password, capacity: connections, readOnly: access == .readOnly)
        self.time = time
        location = PostgresLedger.redacted(url)
        let version = try schemaVersion()
        let target = PostgresLedgerSchema.migrations.count
        guard version <= target else { throw .newerSchema(found: version, supported: target) }
        switch access {
        case .migrating: try migrate()
        case .existing:
            guard version == 0 || version == target else { throw .olderSchema(found: version, needed: target) }
            try migrate()
        case .current:
            guard version > 0 else { throw .invalid("no settle ledger in \(location) yet (run settle migrate)") }
            guard version == target else { throw .olderSchema(found: version, needed: target) }
        case .readOnly:
            guard version > 0 else { throw .invalid("no settle ledger in \(location) yet (run settle migrate)") }
        }
    }

    package func close() throws(LedgerError) { pool.close() }

    package func schemaVersion() throws(LedgerError) -> Int {
        try read { connection in
            let exists = try connection.query("SELECT to_regclass('settle_schema') IS NOT NULL AS present").first?.bool("present") ?? false
            guard exists else { return 0 }
            return Int(try connection.query("SELECT coalesce(max(version), 0) AS version FROM settle_schema").first?.int("version") ?? 0)
        }
    }

    /// Applies the missing migrations, each in its own transaction under a transaction-level
    /// advisory lock: two hosts starting together apply each migration once, the second
    /// waiting for the first and then finding nothing to do. Returns the versions applied.
    @discardableResult
    package func migrate() throws(LedgerError) -> [Int] {
        var applied: [Int] = []
        for (index, sql) in PostgresLedgerSchema.migrations.enumerated() {
            let version = index + 1
            let ran = try write { connection in
                try connection.query("SELECT pg_advisory_xact_lock($1)", [.integer(PostgresLedgerSchema.migrationLock)])
                try connection.execute("CREATE TABLE IF NOT EXISTS settle_schema (version INTEGER PRIMARY KEY, applied_at TIMESTAMPTZ NOT NULL DEFAULT now())")
                let current = Int(try connection.query("SELECT coalesce(max(version), 0) AS version FROM settle_schema").first?.int("version") ?? 0)
                guard current < version else { return false }
                try connection.execute(sql)
                try connection.query("INSERT INTO settle_schema(version) VALUES ($1)", [.integer(Int64(version))])
                return true
            }
            if ran { applied.append(version) }
        }
        try applyStoreMigrations()
        return applied
    }

    /// The store modules' named migrations not applied yet, each once in its own transaction
    /// under the migrations' advisory lock.
    private func applyStoreMigrations() throws(LedgerError) {
        for migration in LedgerMigrations.all {
            try write { connection in
                try connection.query("SELECT pg_advisory_xact_lock($1)", [.integer(PostgresLedgerSchema.migrationLock)])
                try connection.execute(LedgerMigrations.postgresTable)
                guard try connection.query("SELECT 1 AS one FROM ledger_migrations WHERE name = $1", [.text(migration.name)]).isEmpty else {
                    return
                }
                try connection.execute(migration.postgres)
                try connection.query("INSERT INTO ledger_migrations(name, applied_at) VALUES ($1, $2)",
                                     [.text(migration.name), .integer(time.unixSeconds)])
            }
        }
    }

    /// Whether the store migration `name` was applied to this ledger.
    package func hasMigration(_ name: String) throws(LedgerError) -> Bool {
        try read { connection in
            guard try connection.query("SELECT to_regclass('ledger_migrations') IS NOT NULL AS present").first?.bool("present") ?? false else {
                return false
            }
            return !(try connection.query("SELECT 1 AS one FROM ledger_migrations WHERE name = $1", [.text(name)]).isEmpty)
        }
    }

    // MARK: - Transactions

    /// One read-write transaction on a pooled connection. PostgreSQL errors become `.postgres`,
    /// domain errors pass through.
    package func write<T>(_ body: (PostgresConnection) throws -> T) throws(LedgerError) -> T {
        try run(begin: "BEGIN", body)
    }

    /// One read-only transaction with one snapshot, so a status view is consistent.
    package func read<T>(_ body: (PostgresConnection) throws -> T) throws(LedgerError) -> T {
        try run(begin: "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY", body)
    }

    private func run<T>(begin: String, _ body: (PostgresConnection) throws -> T) throws(LedgerError) -> T {
        do {
            return try attempt(begin: begin, body)
        } catch let error as PostgresError where error.isConnectionLost && error.sql == begin {
            // The connection had died while idle (the server restarted): nothing of the
            // transaction ran, so it runs once more, on a fresh connection.
            do { return try attempt(begin: begin, body) } catch { throw Self.ledgerError(error) }
        } catch {
            throw Self.ledgerError(error)
        }
    }

    private static func ledgerError(_ error: any Error) -> LedgerError {
        switch error {
        case let error as LedgerError: return error
        case let error as PostgresError: return .postgres(error)
        default: return .invalid("\(error)")
        }
    }

    private func attempt<T>(begin: String, _ body: (PostgresConnection) throws -> T) throws -> T {
        try pool.with { connection in
            try connection.execute(begin)
            do {
                let result = try body(connection)
                try connection.execute("COMMIT")
                return result
            } catch {
                if connection.isHealthy { try? connection.execute("ROLLBACK") }
                throw error
            }
        }
    }
}

extension PostgresConnection {
    /// Runs a ledger statement written with `?` placeholders (as the SQLite ledger's are),
    /// numbered `$1`, `$2`, ... for PostgreSQL.
    @discardableResult
    package func run(_ sql: String, _ arguments: [PostgresValue] = []) throws(PostgresError) -> [PostgresRow] {
        try query(PostgresConnection.numbered(sql), arguments)
    }

    package static func numbered(_ sql: String) -> String {
        guard sql.contains("?") else { return sql }
        var result = ""
        result.reserveCapacity(sql.utf8.count + 16)
        var next = 1
        for character in sql {
            if character == "?" {
                result += "$\(next)"
                next += 1
            } else {
                result.append(character)
            }
        }
        return result
    }
}
