import Foundation
import SettleModel

/// Work done once for all daemons and the daemons themselves on the PostgreSQL ledger, as in
/// the SQLite ledger's `+Daemon`: several hosts share the breaker and each keeps its own row.
extension PostgresLedger {
    // MARK: - Once for all daemons

    package func breakers() throws(LedgerError) -> [Store: StoreBreaker] {
        try reading { db in try db.breakers() }
    }

    /// Every store's breaker, shared by every daemon. When one is due for a probe, the first
    /// daemon to start a pass takes that probe by pushing its `retry_at` one cooldown further in
    /// the same statement; the others read the pushed time and wait, so one host probes, not all.
    package func breakersForPass() throws(LedgerError) -> [Store: StoreBreaker] {
        let now = time.unixSeconds
        return try writing { db in
            let probed = try db.query("""
                UPDATE store_breakers SET retry_at = ? + greatest(cooldown_seconds, 1)
                WHERE state = 'open' AND retry_at <= ?
                RETURNING store
                """, [.integer(now), .integer(now)]).compactMap { $0.string("store").flatMap(Store.init(rawValue:)) }
            var breakers = try db.breakers()
            // Ours to probe: the caller sees it due now, as on a ledger of its own.
            for store in probed { breakers[store]?.retryAt = now }
            return breakers
        }
    }

    package func recordDaemonStarted(_ owner: LeaseOwner) throws(LedgerError) {
        let now = time.unixSeconds
        try write { db in
            try db.run("""
                INSERT INTO daemons(host, pid, process_start, started_at, heartbeat_at) VALUES (?, ?, ?, ?, \(PostgresLedger.databaseNow))
                ON CONFLICT (host, pid, process_start) DO UPDATE SET started_at = excluded.started_at,
                    heartbeat_at = excluded.heartbeat_at, stopped_at = NULL
                """, [.text(owner.host), .integer(Int64(owner.pid)), .text(owner.leaseStart), .integer(now)])
            // A restart replaces this host's registrations whose process is provably gone (a
            // daemon killed with -9 never said it stopped): each would count as one more live
            // host in the pacer's share for the whole live window.
            let ours = try db.run("SELECT host, pid, process_start FROM daemons WHERE host = ? AND stopped_at IS NULL",
                                  [.text(owner.host)]).map(PostgresLedger.daemonOwner)
            for dead in ours where dead != owner && dead.isKnownDead(comparedWith: owner) {
                try db.run("UPDATE daemons SET stopped_at = ? WHERE host = ? AND pid = ? AND process_start = ?",
                           [.integer(now), .text(dead.host), .integer(Int64(dead.pid)), .text(dead.leaseStart)])
            }
        }
    }

    package func recordDaemonPass(_ owner: LeaseOwner, summary: String) throws(LedgerError) {
        let now = time.unixSeconds
        try write { db in
            try db.run("""
                UPDATE daemons SET last_pass_at = ?, last_pass_summary = ?, heartbeat_at = \(PostgresLedger.databaseNow)
                WHERE host = ? AND pid = ? AND process_start = ?
                """, [.integer(now), .text(summary), .text(owner.host), .integer(Int64(owner.pid)), .text(owner.leaseStart)])
        }
    }

    /// Records the outcome of this daemon's reload: its error when it failed (nil clears it).
    package func recordDaemonReload(_ owner: LeaseOwner, error: String?) throws(LedgerError) {
        let now = time.unixSeconds
        _ = try write { db in
            try db.run("""
                UPDATE daemons SET reload_error = ?, reload_failed_at = ? WHERE host = ? AND pid = ? AND process_start = ?
                """, [.from(error), .from(error.map { _ in now }), .text(owner.host), .integer(Int64(owner.pid)), .text(owner.leaseStart)])
        }
    }

    package func recordDaemonStopped(_ owner: LeaseOwner) throws(LedgerError) {
        let now = time.unixSeconds
        try write { db in
            try db.run("UPDATE daemons SET stopped_at = ? WHERE host = ? AND pid = ? AND process_start = ?",
                       [.integer(now), .text(owner.host), .integer(Int64(owner.pid)), .text(owner.leaseStart)])
        }
    }

    package func daemonRecord() throws(LedgerError) -> DaemonRecord? {
        try read { db in
            try db.run("SELECT * FROM daemons ORDER BY started_at DESC, heartbeat_at DESC LIMIT 1").first.map(PostgresLedger.daemon)
        }
    }

    /// How long after its last heartbeat a daemon still counts as live in `settle status`.
    package static let liveWindowSeconds: Int64 = 600

    package func liveDaemons() throws(LedgerError) -> [DaemonRecord] {
        try read { db in
            try db.run("""
                SELECT * FROM daemons WHERE stopped_at IS NULL AND heartbeat_at > \(PostgresLedger.databaseNow) - ?::bigint
                ORDER BY heartbeat_at DESC, host, pid
                """, [.integer(PostgresLedger.liveWindowSeconds)]).map(PostgresLedger.daemon)
                // A registration of this host whose process is gone is not live, whatever its heartbeat.
                .filter { !$0.owner.isKnownDead }
        }
    }

    /// The live daemons (heartbeat within `liveWindowSeconds`, not stopped), counting `owner`
    /// once whether it is one (a daemon) or not (a one-shot `settle reconcile`). Read once a
    /// pass: no request waits on the ledger, and a dead host's share comes back once its
    /// heartbeat is older than the live window.
    package func pacerHosts(besides owner: LeaseOwner) throws(LedgerError) -> Int {
        let live = try liveDaemons()
        return live.count + (live.contains { $0.owner == owner } ? 0 : 1)
    }

    private static func daemonOwner(_ row: PostgresRow) -> LeaseOwner {
        LeaseOwner(host: row.string("host") ?? "", pid: Int32(truncatingIfNeeded: row.int("pid") ?? 0),
                   leaseStart: row.string("process_start") ?? "")
    }

    private static func daemon(_ row: PostgresRow) -> DaemonRecord {
        var record = DaemonRecord(owner: daemonOwner(row),
                                  startedAt: row.int("started_at") ?? 0, lastPassAt: row.int("last_pass_at"),
                                  lastPassSummary: row.string("last_pass_summary"), stoppedAt: row.int("stopped_at"))
        record.heartbeatAt = row.int("heartbeat_at")
        (record.reloadError, record.reloadFailedAt) = (row.string("reload_error"), row.int("reload_failed_at"))
        return record
    }
}
