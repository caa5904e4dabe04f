import Foundation
import SettleModel

/// What `settle status` shows about the daemon.
package struct DaemonRecord: Sendable, Equatable {
    package var owner: LeaseOwner
    package var startedAt: Int64
    package var lastPassAt: Int64?
    package var lastPassSummary: String?
    package var stoppedAt: Int64?
    /// The last sign of life on a shared ledger (PostgreSQL's clock); nil on SQLite.
    package var heartbeatAt: Int64? = nil
    /// The last reload that failed (the daemon runs on with its previous configuration), until one works.
    package var reloadError: String? = nil
    package var reloadFailedAt: Int64? = nil

    /// Whether the recorded daemon is running now, judged without its lock: not stopped, and
    /// its process (same host, pid and start time) still alive.
    package var isRunning: Bool { stoppedAt == nil && !owner.isKnownDead }
}

extension SQLiteLedger {
    /// Every store's persisted breaker (closed in a ledger too old to have them).
    package func breakers() throws(LedgerError) -> [Store: StoreBreaker] {
        guard try schemaVersion() >= LedgerSchema.storeBreakersVersion else {
            return Dictionary(uniqueKeysWithValues: Store.allCases.map { ($0, StoreBreaker()) })
        }
        return try reading { db in try db.breakers() }
    }

    /// Records that a daemon started (replacing the record of any previous one).
    package func recordDaemonStarted(_ owner: LeaseOwner) throws(LedgerError) {
        let now = time.unixSeconds
        _ = try locked { () throws(LedgerError) in
            try write {
                try database.query("""
                    INSERT OR REPLACE INTO daemon(id, host, pid, process_start, started_at) VALUES (1, ?, ?, ?, ?)
                    """, [.text(owner.host), .integer(Int64(owner.pid)), .text(owner.leaseStart), .integer(now)])
            }
        }
    }

    package func recordDaemonPass(_ owner: LeaseOwner, summary: String) throws(LedgerError) {
        let now = time.unixSeconds
        _ = try locked { () throws(LedgerError) in
            try write {
                try database.query("UPDATE daemon SET last_pass_at = ?, last_pass_summary = ? WHERE id = 1",
                                   [.integer(now), .text(summary)])
            }
        }
    }

    package func recordDaemonStopped(_ owner: LeaseOwner) throws(LedgerError) {
        let now = time.unixSeconds
        _ = try locked { () throws(LedgerError) in
            try write { try database.query("UPDATE daemon SET stopped_at = ? WHERE id = 1", [.integer(now)]) }
        }
    }

    /// Records the outcome of a reload: its error when it failed (nil clears it: it worked).
    package func recordDaemonReload(_ owner: LeaseOwner, error: String?) throws(LedgerError) {
        guard try schemaVersion() >= LedgerSchema.auditLogVersion else { return }
        let now = time.unixSeconds
        _ = try locked { () throws(LedgerError) in
            try write {
                try database.query("UPDATE daemon SET reload_error = ?, reload_failed_at = ? WHERE id = 1",
                                   [.from(error), .from(error.map { _ in now })])
            }
        }
    }

    /// One host: a due breaker is this daemon's to probe.
    package func breakersForPass() throws(LedgerError) -> [Store: StoreBreaker] { try breakers() }

    /// SQLite keeps the last daemon started: live while it runs.
    package func liveDaemons() throws(LedgerError) -> [DaemonRecord] {
        try daemonRecord().map { $0.isRunning ? [$0] : [] } ?? []
    }

    /// One host, one budget: the file is on this machine, so is every process pacing against it.
    package func pacerHosts(besides owner: LeaseOwner) throws(LedgerError) -> Int { 1 }

    package func daemonRecord() throws(LedgerError) -> DaemonRecord? {
        guard try schemaVersion() >= 2 else { return nil }
        return try read { db in
            try db.query("SELECT * FROM daemon WHERE id = 1").first.map { row in
                var record = DaemonRecord(owner: LeaseOwner(host: row.string("host") ?? "", pid: Int32(truncatingIfNeeded: row.int("pid") ?? 0),
                                                            leaseStart: row.string("process_start") ?? ""),
                                          startedAt: row.int("started_at") ?? 0, lastPassAt: row.int("last_pass_at"),
                                          lastPassSummary: row.string("last_pass_summary"), stoppedAt: row.int("stopped_at"))
                (record.reloadError, record.reloadFailedAt) = (row.string("reload_error"), row.int("reload_failed_at"))
                return record
            }
        }
    }
}
