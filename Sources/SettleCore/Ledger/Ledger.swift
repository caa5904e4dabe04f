import CSQLite
import Foundation

/// A failure of the ledger that a caller can act on.
public enum LedgerError: Error, Sendable, CustomStringConvertible {
    /// The database could not be opened, read or written (exit 74).
    case io(SQLiteError)
    /// The ledger was written by a newer settle.
    case newerSchema(found: Int, supported: Int)
    /// `enqueue` of an existing order id with different content (exit 65).
    case conflictingOrder(String)
    /// The request does not fit the ledger (unknown order, wrong state) (exit 65).
    case invalid(String)

    public var description: String {
        switch self {
        case let .io(error): return "ledger I/O error: \(error)"
        case let .newerSchema(found, supported):
            return "the ledger has schema version \(found), newer than this settle supports (\(supported)); upgrade settle"
        case let .conflictingOrder(id):
            return "order \(id) is already in the ledger with different content; refusing to change it"
        case let .invalid(message): return message
        }
    }
}

/// The SQLite ledger: the one place where orders change state.
///
/// One connection per process, used behind a lock, so every write is one short
/// `BEGIN IMMEDIATE` transaction and no transaction ever spans network I/O or a hook run.
public final class Ledger: @unchecked Sendable {
    let database: SQLiteDatabase
    let lock = NSLock()
    let groupCommit = GroupCommit()
    public let time: any TimeSource
    public let path: String

    /// Opens (creating and migrating if needed) the ledger for writing.
    public init(path: String, time: any TimeSource = SystemTimeSource()) throws(LedgerError) {
        self.path = path
        self.time = time
        do {
            database = try SQLiteDatabase(path: path, mode: .readWrite)
            // WAL lets `settle status` read while a pass writes; it persists in the file.
            try database.execute("PRAGMA journal_mode = WAL")
            try database.persistWAL()
            // FULL: every commit is fsynced, so an acknowledged transition survives power loss
            // (https://www.sqlite.org/pragma.html#pragma_synchronous).
            try database.execute("PRAGMA synchronous = FULL")
            try database.execute("PRAGMA foreign_keys = ON")
        } catch {
            throw .io(error)
        }
        try migrate()
    }

    /// Opens an existing ledger read-only, for `settle status`: never creates, never writes.
    public init(readOnlyPath path: String, time: any TimeSource = SystemTimeSource()) throws(LedgerError) {
        self.path = path
        self.time = time
        guard FileManager.default.fileExists(atPath: path) else {
            throw .io(SQLiteError(code: SQLITE_CANTOPEN, message: "no ledger at \(path)", sql: nil))
        }
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

    public func close() throws(LedgerError) {
        lock.lock()
        defer { lock.unlock() }
        do { try database.close() } catch { throw .io(error) }
    }

    /// The ledger's schema version (`PRAGMA user_version`).
    func schemaVersion() throws(LedgerError) -> Int {
        try locked { () throws(LedgerError) in try userVersion() }
    }

    /// Callers hold the lock.
    func userVersion() throws(LedgerError) -> Int {
        do {
            return Int(try database.query("PRAGMA user_version").first?.int("user_version") ?? 0)
        } catch {
            throw .io(error)
        }
    }

    private func migrate() throws(LedgerError) {
        try locked { () throws(LedgerError) in
            let current = try userVersion()
            let target = LedgerSchema.migrations.count
            guard current <= target else { throw .newerSchema(found: current, supported: target) }
            guard current < target else { return }
            try write {
                // Re-read inside the write lock: another process may have migrated meanwhile.
                let version = Int(try database.query("PRAGMA user_version").first?.int("user_version") ?? 0)
                for (index, sql) in LedgerSchema.migrations.enumerated() where index >= version {
                    try database.execute(sql)
                }
                try database.execute("PRAGMA user_version = \(target)")
            }
        }
    }

    /// Runs `body` holding this process's connection.
    func locked<T>(_ body: () throws(LedgerError) -> T) throws(LedgerError) -> T {
        lock.lock()
        defer { lock.unlock() }
        return try body()
    }

    /// One write transaction; SQLite errors become `.io`, domain errors pass through.
    func write<T>(_ body: () throws -> T) throws(LedgerError) -> T {
        do {
            return try database.writeTransaction(body)
        } catch let error as LedgerError {
            throw error
        } catch let error as SQLiteError {
            throw .io(error)
        } catch {
            throw .invalid("\(error)")
        }
    }

    /// One read transaction, so that a status view is a consistent snapshot.
    func read<T>(_ body: () throws -> T) throws(LedgerError) -> T {
        try locked { () throws(LedgerError) in
            do {
                return try database.readTransaction(body)
            } catch let error as LedgerError {
                throw error
            } catch let error as SQLiteError {
                throw .io(error)
            } catch {
                throw .invalid("\(error)")
            }
        }
    }
}
