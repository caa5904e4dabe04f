import CSQLite
import Foundation
import SettleBase

/// A failure of the ledger that a caller can act on.
package enum LedgerError: Error, Sendable, CustomStringConvertible {
    /// The database could not be opened, read or written (exit 74).
    case io(SQLiteError)
    /// The ledger was written by a newer settle.
    case newerSchema(found: Int, supported: Int)
    /// `enqueue` of an existing order id with different content (exit 65).
    case conflictingOrder(String)
    /// The request does not fit the ledger (unknown order, wrong state) (exit 65).
    case invalid(String)
    /// The operating system refused this user the ledger or its folder (exit 74).
    case permissionDenied(path: String)
    /// The ledger needs a migration and this command does not migrate (exit 74).
    case olderSchema(found: Int, needed: Int)
    /// The system's SQLite lacks what the ledger's schema uses (`unixepoch()`, `RETURNING`).
    case sqliteTooOld(found: String)
    /// The PostgreSQL ledger could not be reached, read or written (exit 74).
    case postgres(PostgresError)

    package var description: String {
        switch self {
        case let .io(error): return "ledger I/O error: \(error)"
        case let .newerSchema(found, supported):
            return "the ledger has schema version \(found), newer than this settle supports (\(supported)); upgrade settle"
        case let .conflictingOrder(id):
            return "order \(id) is already in the ledger with different content; refusing to change it"
        case let .invalid(message): return message
        case let .permissionDenied(path):
            return "permission denied: this user (uid \(getuid())) may not read \(path). Run as the settle user "
                + "(sudo -u settle settle ...) or join the settle-support group (sudo usermod -aG settle-support $USER, then log in again)"
        case let .olderSchema(found, needed):
            return "the ledger has schema version \(found) and this settle needs \(needed); run `settle migrate` "
                + "(it backs the ledger up first), or start settle run"
        case let .sqliteTooOld(found):
            return "settle needs SQLite \(SQLiteLedger.minimumSQLite) or newer, this system has \(found) "
                + "(Debian 12, Ubuntu 24.04 and newer have it)"
        case let .postgres(error): return "ledger database error: \(error)"
        }
    }
}

/// The SQLite ledger: the one place where orders change state.
///
/// One writing connection per process, used behind a lock (reads have a connection of their
/// own, `read`), so every write is one short
/// `BEGIN IMMEDIATE` transaction and no transaction ever spans network I/O or a hook run.
package final class SQLiteLedger: @unchecked Sendable {
    package let database: SQLiteDatabase
    package let schemaFloor = SchemaFloor()
    package let lock = NSLock()
    /// A second connection for read transactions (`read`), opened at the first one: in WAL
    /// mode a reader sees the last commit and never waits for the writer, so a verification
    /// reading its receipt does not queue behind a group commit's fsync.
    private var readConnection: SQLiteDatabase?
    private let readLock = NSLock()
    package let groupCommit = GroupCommit()
    /// The batch the group commit runs now (`runBatch`); read and written under `lock`.
    var batchRun = BatchRun()
    package let time: any TimeSource
    package let path: String

    /// The oldest SQLite the schema and the queries work with: `unixepoch()` came in 3.38.0.
    package static let minimumSQLite = "3.38.0"
    package static let minimumSQLiteNumber: Int32 = 3_038_000

    /// Opens (creating and migrating if needed) the ledger for writing. Only the commands that
    /// own the ledger's life call this (`settle migrate`, `run`, `reconcile`); an existing ledger
    /// is backed up next to itself before its schema changes.
    package init(path: String, time: any TimeSource = SystemTimeSource()) throws(LedgerError) {
        self.path = path
        self.time = time
        database = try SQLiteLedger.openForWriting(path)
        try migrate(backingUp: true)
    }

    /// Opens the ledger for writing without migrating it, for support and backend commands
    /// (`enqueue`, `retry`, `resolve`): a brand-new ledger is created, an older one is refused
    /// with a pointer to `settle migrate`, so a schema never changes behind an operator's back.
    package init(existingPath path: String, time: any TimeSource = SystemTimeSource()) throws(LedgerError) {
        self.path = path
        self.time = time
        database = try SQLiteLedger.openForWriting(path)
        let version = try schemaVersion()
        let target = LedgerSchema.migrations.count
        guard version <= target else { throw .newerSchema(found: version, supported: target) }
        guard version == 0 || version == target else { throw .olderSchema(found: version, needed: target) }
        try migrate(backingUp: false)
    }

    /// Opens a ledger that exists and is at this settle's schema, for support commands that
    /// name orders (`retry`, `resolve`, `assign`): never creates one (a typo in an order id
    /// must not leave an empty ledger behind), never migrates.
    package init(currentPath path: String, time: any TimeSource = SystemTimeSource()) throws(LedgerError) {
        self.path = path
        self.time = time
        try SQLiteLedger.checkExisting(path, writing: true)
        database = try SQLiteLedger.openForWriting(path)
        let version = try schemaVersion()
        let target = LedgerSchema.migrations.count
        guard version <= target else { throw .newerSchema(found: version, supported: target) }
        guard version > 0 else {
            throw .io(SQLiteError(code: SQLITE_CANTOPEN, message: "\(path) holds no settle ledger yet (settle creates it at the first enqueue, reconcile or start)", sql: nil))
        }
        guard version == target else { throw .olderSchema(found: version, needed: target) }
    }

    private static func openForWriting(_ path: String) throws(LedgerError) -> SQLiteDatabase {
        try checkSQLiteVersion()
        try checkAccess(path, writing: true)
        do {
            let database = try SQLiteDatabase(path: path, mode: .readWrite)
            // WAL lets `settle status` read while a pass writes; it persists in the file.
            try database.execute("PRAGMA journal_mode = WAL")
            try database.persistWAL()
            // FULL: every commit is fsynced, so an acknowledged transition survives power loss
            // (https://www.sqlite.org/pragma.html#pragma_synchronous).
            try database.execute("PRAGMA synchronous = FULL")
            try database.execute("PRAGMA foreign_keys = ON")
            // Each statement of a group commit's transaction, and each savepoint of a batch run
            // again (`runBatch`), journals the pages it changes: in memory, not in a temporary
            // file (Debian builds SQLite with TEMP_STORE=1), which cost about 35 page-sized writes
            // an order. Crash recovery never reads it: it only rolls back a statement or a
            // transition inside a transaction still open
            // (https://www.sqlite.org/tempfiles.html#statement_journals). A spill size with the
            // file store measured worse (docs/performance.md, "SQLite's savepoint journals").
            try database.execute("PRAGMA temp_store = MEMORY")
            return database
        } catch {
            throw .io(error)
        }
    }

    package static func checkSQLiteVersion() throws(LedgerError) {
        guard sqlite3_libversion_number() >= minimumSQLiteNumber else {
            throw .sqliteTooOld(found: String(cString: sqlite3_libversion()))
        }
    }

    /// A ledger that must exist already (support commands, status): never created by a typo.
    package static func checkExisting(_ path: String, writing: Bool) throws(LedgerError) {
        try checkSQLiteVersion()
        try checkAccess(path, writing: writing)
        guard FileManager.default.fileExists(atPath: path) else {
            throw .io(SQLiteError(code: SQLITE_CANTOPEN, message: "no ledger at \(path) (settle creates it at the first enqueue, reconcile or start)", sql: nil))
        }
    }

    /// SQLite reports a folder this user cannot enter as "unable to open", and a missing file
    /// looks the same to `fileExists`: ask the operating system, so support hears "permission
    /// denied" and what to do, not "no ledger".
    package static func checkAccess(_ path: String, writing: Bool) throws(LedgerError) {
        let folder = (path as NSString).deletingLastPathComponent
        if access(folder.isEmpty ? "." : folder, X_OK) != 0 && errno == EACCES { throw .permissionDenied(path: path) }
        if access(path, writing ? R_OK | W_OK : R_OK) != 0 && errno == EACCES { throw .permissionDenied(path: path) }
    }

    /// Opens an existing ledger read-only, for `settle status`: never creates, never writes.
    package init(readOnlyPath path: String, time: any TimeSource = SystemTimeSource()) throws(LedgerError) {
        self.path = path
        self.time = time
        try SQLiteLedger.checkExisting(path, writing: false)
        do {
            database = try SQLiteDatabase(path: path, mode: .readOnly)
        } catch {
            throw .io(error)
        }
        let version = try schemaVersion()
        guard version <= LedgerSchema.migrations.count else {
            throw .newerSchema(found: version, supported: LedgerSchema.migrations.count)
        }
    }

    package func close() throws(LedgerError) {
        readLock.withLock {
            try? readConnection?.close()
            readConnection = nil
        }
        lock.lock()
        defer { lock.unlock() }
        do { try database.close() } catch { throw .io(error) }
    }

    /// One read transaction on the read connection, opened the first time, so that a status
    /// view is a consistent snapshot of the last commit.
    package func read<T>(_ body: (SQLiteDatabase) throws -> T) throws(LedgerError) -> T {
        try read(inTransaction: true, body)
    }

    /// One statement on the read connection, without BEGIN and COMMIT: a statement run alone is
    /// its own read transaction in SQLite, a snapshot of the last commit by itself. For the reads
    /// every order makes (its receipt, its buyer's refunds), two statements fewer each.
    package func readStatement<T>(_ body: (SQLiteDatabase) throws -> T) throws(LedgerError) -> T {
        try read(inTransaction: false, body)
    }

    private func read<T>(inTransaction: Bool, _ body: (SQLiteDatabase) throws -> T) throws(LedgerError) -> T {
        readLock.lock()
        defer { readLock.unlock() }
        do {
            if readConnection == nil {
                // Read-only: it never creates a file where the ledger was, nor writes.
                let connection = try SQLiteDatabase(path: path, mode: .readOnly)
                try connection.execute("PRAGMA temp_store = MEMORY")
                readConnection = connection
            }
            let connection = readConnection!
            return try inTransaction ? connection.readTransaction { try body(connection) } : body(connection)
        } catch {
            throw SQLiteLedger.ledgerError(error)
        }
    }

    /// The ledger's schema version (`PRAGMA user_version`).
    package func schemaVersion() throws(LedgerError) -> Int {
        try locked { () throws(LedgerError) in try userVersion() }
    }

    /// Callers hold the lock.
    package func userVersion() throws(LedgerError) -> Int {
        do {
            return Int(try database.query("PRAGMA user_version").first?.int("user_version") ?? 0)
        } catch {
            throw .io(error)
        }
    }

    private func migrate(backingUp: Bool) throws(LedgerError) {
        try migrateCore(backingUp: backingUp)
        try applyStoreMigrations()
    }

    /// The store modules' named migrations not applied yet, each once, in one transaction.
    private func applyStoreMigrations() throws(LedgerError) {
        let migrations = LedgerMigrations.all
        guard !migrations.isEmpty else { return }
        try locked { () throws(LedgerError) in
            try write {
                try database.execute(LedgerMigrations.sqliteTable)
                let applied = Set(try database.query("SELECT name FROM ledger_migrations").compactMap { $0.string("name") })
                for migration in migrations where !applied.contains(migration.name) {
                    try database.execute(migration.sqlite)
                    try database.query("INSERT INTO ledger_migrations(name, applied_at) VALUES (?, ?)",
                                       [.text(migration.name), .integer(time.unixSeconds)])
                }
            }
        }
    }

    /// Whether the store migration `name` was applied to this ledger.
    package func hasMigration(_ name: String) throws(LedgerError) -> Bool {
        try reading { db in
            guard try db.query("SELECT 1 FROM sqlite_schema WHERE type = 'table' AND name = 'ledger_migrations'").first != nil else {
                return false
            }
            return try db.query("SELECT 1 FROM ledger_migrations WHERE name = ?", [.text(name)]).first != nil
        }
    }

    private func migrateCore(backingUp: Bool) throws(LedgerError) {
        let current = try schemaVersion()
        let target = LedgerSchema.migrations.count
        guard current <= target else { throw .newerSchema(found: current, supported: target) }
        guard current < target else { return }
        // A ledger with orders in it is copied before its schema changes: a rollback to the
        // previous settle restores this file.
        if backingUp && current > 0 { try backupBeforeMigration(from: current) }
        try locked { () throws(LedgerError) in
            try write {
                // Re-read inside the write lock: another process may have migrated meanwhile.
                let version = Int(try database.query("PRAGMA user_version").first?.int("user_version") ?? 0)
                for (index, sql) in LedgerSchema.migrations.enumerated() where index >= version {
                    try database.execute(sql)
                    try LedgerSchema.afterMigration[index + 1]?(database)
                }
                try database.execute("PRAGMA user_version = \(target)")
            }
        }
    }

    /// Runs `body` holding this process's connection.
    package func locked<T>(_ body: () throws(LedgerError) -> T) throws(LedgerError) -> T {
        lock.lock()
        defer { lock.unlock() }
        return try body()
    }

    /// One write transaction; SQLite errors become `.io`, domain errors pass through.
    package func write<T>(_ body: () throws -> T) throws(LedgerError) -> T {
        do {
            return try database.writeTransaction(body)
        } catch {
            throw SQLiteLedger.ledgerError(error)
        }
    }

    /// SQLite errors become `.io`, domain errors pass through.
    package static func ledgerError(_ error: any Error) -> LedgerError {
        switch error {
        case let error as LedgerError: return error
        case let error as SQLiteError: return .io(error)
        default: return .invalid("\(error)")
        }
    }
}
