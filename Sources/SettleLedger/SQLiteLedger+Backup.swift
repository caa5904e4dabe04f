import CSQLite
import Foundation
import SettleModel

/// What `settle verify-backup` found in a backup file.
package struct BackupCheck: Sendable, Equatable {
    package var schemaVersion: Int
    package var counts: [OrderState: Int]
    package var grants: Int
    package var historyRows: Int
}

/// Consistent copies of a live ledger, and checks that a copy is whole.
extension SQLiteLedger {
    /// Copies the ledger to `destination` while passes keep running: `VACUUM INTO` reads one
    /// snapshot in a read transaction and writes a compact, self-contained file (no WAL), which
    /// is then fsynced. "The VACUUM INTO command is transactional in the sense that the
    /// generated output database is a consistent snapshot of the original database."
    /// (https://www.sqlite.org/lang_vacuum.html#vacuuminto). An existing destination is never
    /// overwritten: the copy goes to a temporary name and is linked into place.
    package func backup(to destination: String) throws(LedgerError) {
        let temporary = destination + ".partial-\(getpid())"
        unlink(temporary)
        try locked { () throws(LedgerError) in
            do {
                try database.query("VACUUM INTO ?", [.text(temporary)])
            } catch let error as SQLiteError {
                unlink(temporary)
                throw .io(error)
            } catch {
                unlink(temporary)
                throw .invalid("\(error)")
            }
        }
        let fd = open(temporary, O_RDONLY | O_CLOEXEC)
        let synced = fd >= 0 && fsync(fd) == 0
        if fd >= 0 { Glibc.close(fd) }
        // link() fails when the destination exists, where rename() would replace it.
        guard synced, link(temporary, destination) == 0 else {
            let reason = errno == EEXIST ? "it already exists" : String(cString: strerror(errno))
            unlink(temporary)
            throw .invalid("cannot write the backup to \(destination): \(reason)")
        }
        unlink(temporary)
        let folder = (destination as NSString).deletingLastPathComponent
        let dfd = open(folder.isEmpty ? "." : folder, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        if dfd >= 0 { fsync(dfd); Glibc.close(dfd) }
    }

    /// The copy taken before a migration: `<ledger>.schema-<N>.backup`, or with a time suffix
    /// when an earlier one is in the way.
    package func backupBeforeMigration(from version: Int) throws(LedgerError) {
        var destination = path + ".schema-\(version).backup"
        if FileManager.default.fileExists(atPath: destination) { destination += ".\(time.unixSeconds)" }
        try backup(to: destination)
    }

    /// Opens `path` read-only and checks it is a whole settle ledger this settle can read:
    /// SQLite's integrity check passes, the schema version is known and the tables are there.
    package static func verifyBackup(path: String) throws(LedgerError) -> BackupCheck {
        try checkSQLiteVersion()
        try checkAccess(path, writing: false)
        guard FileManager.default.fileExists(atPath: path) else { throw .invalid("no file at \(path)") }
        do {
            let database = try SQLiteDatabase(path: path, mode: .readOnly)
            defer { try? database.close() }
            let integrity = try database.query("PRAGMA integrity_check").compactMap { $0.string("integrity_check") }
            guard integrity == ["ok"] else {
                throw LedgerError.invalid("\(path) is damaged: \(integrity.prefix(3).joined(separator: "; "))")
            }
            let version = Int(try database.query("PRAGMA user_version").first?.int("user_version") ?? 0)
            guard version > 0 else { throw LedgerError.invalid("\(path) is an SQLite file but not a settle ledger (schema version 0)") }
            guard version <= LedgerSchema.migrations.count else {
                throw LedgerError.newerSchema(found: version, supported: LedgerSchema.migrations.count)
            }
            var counts = Dictionary(uniqueKeysWithValues: OrderState.allCases.map { ($0, 0) })
            for row in try database.query("SELECT state, count(*) AS n FROM orders GROUP BY state") {
                if let state = OrderState(rawValue: row.string("state") ?? "") { counts[state] = Int(row.int("n") ?? 0) }
            }
            let grants = Int(try database.query("SELECT count(*) AS n FROM grants").first?.int("n") ?? 0)
            let history = Int(try database.query("SELECT count(*) AS n FROM history").first?.int("n") ?? 0)
            return BackupCheck(schemaVersion: version, counts: counts, grants: grants, historyRows: history)
        } catch let error as LedgerError {
            throw error
        } catch let error as SQLiteError {
            // "file is not a database" (SQLITE_NOTADB) and friends: the file is not a usable backup.
            throw .invalid("\(path) is not a readable settle ledger: \(error.message)")
        } catch {
            throw .invalid("\(error)")
        }
    }
}
