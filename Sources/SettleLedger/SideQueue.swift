import SettleModel
import Synchronization

/// The ledger's side queues: work owed to a store or the hook outside an order's own settling
/// (Finish Transaction calls, revokes, consumption answers, Set App Account Token calls, Play
/// pushes and their refund reviews, support's actions). One value describes a queue, and its
/// claim, hold, release, record and rescue are written once here for both engines.
///
/// Each job is claimed by bumping its `claim` (the fencing token every later write checks) and
/// pushing its expiry out by a lease. A claim also names its owner (`claim_host`, `claim_pid`,
/// `claim_start`: SQLite migration 17, PostgreSQL 14), as an order's lease does, so that rescue
/// can tell a dead predecessor's claim from a live one: a claim of this host whose process is
/// gone (or whose pid now belongs to a process with another start time) is taken back at once,
/// not after its lease; a live owner's claim, and one of another host (its pid means nothing
/// here), wait for their expiry.
package struct SideQueue: Sendable {
    /// The table that holds the queue.
    package var table: String
    /// The columns that name one job (`SideQueueJob.queueKey` holds their values).
    package var key: [String]
    /// The column the claim's expiry is kept in (a job is due again once it is past).
    package var expiry = "next_attempt_at"
    /// Whether `expiry` is also the job's due time (a claim moves it a lease ahead, a backoff
    /// sets it), or a claim's lease alone: NULL while nobody holds the job, due while it is pending.
    package var expiryIsDueTime = true
    /// The column stamped by a claim and by each write; nil for a queue that keeps none.
    package var updatedAt: String? = "updated_at"
    /// The columns jobs are claimed in the order of.
    package var order: [String]

    package init(table: String, key: [String], expiry: String = "next_attempt_at", expiryIsDueTime: Bool = true,
                 updatedAt: String? = "updated_at", order: [String]) {
        self.table = table
        self.key = key
        self.expiry = expiry
        self.expiryIsDueTime = expiryIsDueTime
        self.updatedAt = updatedAt
        self.order = order
    }

    /// Every side queue, in the order rescue visits them: the core's, then each registered store's.
    package static var all: [SideQueue] { core + registered.withLock { $0 } }
    /// The core's own queues.
    static let core: [SideQueue] = [RevocationJob.queue, ConsumptionJob.queue, SupportAction.queue]
    private static let registered = Mutex<[SideQueue]>([])
    /// A store module's queues (`StoreModule.sideQueues`), added once each (by table) at registration.
    package static func register(_ queues: [SideQueue]) {
        registered.withLock { known in
            for queue in queues where !core.contains(where: { $0.table == queue.table })
                && !known.contains(where: { $0.table == queue.table }) {
                known.append(queue)
            }
        }
    }

    /// What a write under a claim does to a job. Every write but a release stamps it.
    package enum Change {
        /// Given back untouched: due again at once.
        case release
        /// Not worked on now (held back by a rate limit, waiting for a route or for an order), no
        /// attempt used: due again at `until` (nil: at once), with why as its last error.
        case hold(why: String, until: Int64? = nil)
        /// What an attempt concluded: `state` (`pending` again at `nextAttemptAt`, or final), its
        /// error, `attempts` more counted, and the queue's own columns (`also`).
        case outcome(state: String, nextAttemptAt: Int64, error: String?, attempts: Int64 = 1,
                     also: [(column: String, value: LedgerValue)] = [])
        /// The queue's own assignments, with their values.
        case set(String, [LedgerValue])
    }

    /// `column = ?` for each key column, for the values of `SideQueueJob.queueKey`.
    var matchesKey: String { key.map { "\($0) = ?" }.joined(separator: " AND ") }

    /// The assignment stamping a job written at `now`, with its value.
    func stamp(_ now: Int64) -> (sql: String, values: [LedgerValue]) {
        updatedAt.map { (", \($0) = ?", [.integer(now)]) } ?? ("", [])
    }

    /// The condition that a pending job of the table aliased `q` is due at `?`.
    var isDue: String { expiryIsDueTime ? "q.\(expiry) <= ?" : "(q.\(expiry) IS NULL OR q.\(expiry) <= ?)" }

    func assignments(_ change: Change, now: Int64) -> (sql: String, values: [LedgerValue]) {
        let stamp = stamp(now)
        switch change {
        case .release:
            return ("\(expiry) = ?", [expiryIsDueTime ? .integer(now) : .null])
        case let .hold(why, until):
            return ("\(expiry) = ?, last_error = ?" + stamp.sql, [.integer(until ?? now), .text(why)] + stamp.values)
        case let .outcome(state, nextAttemptAt, error, attempts, also):
            let own = also.map { ", \($0.column) = ?" }.joined()
            return ("state = ?, attempts = attempts + ?, \(expiry) = ?, last_error = ?" + own + stamp.sql,
                    [.text(state), .integer(attempts), .integer(nextAttemptAt), .from(error)] + also.map(\.value)
                        + stamp.values)
        case let .set(sql, values):
            return (sql + stamp.sql, values + stamp.values)
        }
    }
}

/// A job of a side queue, as its claim hands it out.
package protocol SideQueueJob {
    /// The queue it is a job of.
    static var queue: SideQueue { get }
    /// The values of the queue's key columns, in their order.
    var queueKey: [LedgerValue] { get }
    /// The claim it was handed out under: it is written to only under that claim, so a host
    /// whose claim lapsed (and another host took the job) changes nothing.
    var claim: Int64 { get }
    /// The job a row of its queue holds; nil for a row that is not one.
    init?(row: any LedgerRow)
}

extension LedgerTransaction {
    /// The due jobs of `Job`'s queue (aliased `q`; `joining` adds tables, `condition` narrows it
    /// with `values`), up to `limit` in the queue's order, each claimed for `owner` until
    /// `leaseSeconds` from `now`. The due rows are read as claimed (`FOR UPDATE SKIP LOCKED` on
    /// PostgreSQL), so two hosts never take the same job.
    package func claimDue<Job: SideQueueJob>(_: Job.Type, limit: Int, leaseSeconds: Int64, owner: LeaseOwner, now: Int64,
                                             joining: String = "", where condition: String = "",
                                     _ values: [LedgerValue] = []) throws -> [Job] {
        let queue = Job.queue
        let due = try query("""
            SELECT q.* FROM \(queue.table) q\(joining)
            WHERE q.state = 'pending' AND \(queue.isDue)\(condition)
            ORDER BY \(queue.order.map { "q.\($0)" }.joined(separator: ", ")) LIMIT ?\(dialect.claimRows("q"))
            """, [.integer(now)] + values + [.integer(Int64(limit))])
        let until = now + leaseSeconds
        let stamp = queue.stamp(now)
        // The expiry is kept apart as `claim_expires_at` too, so rescue can tell a claim still in
        // flight (its due time is still the claim's expiry) from a job whose outcome was recorded
        // with a backoff (a due time of its own): only the first is taken back.
        return try due.compactMap(Job.init(row:)).compactMap { job in
            try query("""
                UPDATE \(queue.table) SET claim = claim + 1, \(queue.expiry) = ?\(stamp.sql),
                       claim_host = ?, claim_pid = ?, claim_start = ?, claim_expires_at = ?
                WHERE \(queue.matchesKey) RETURNING *
                """, [.integer(until)] + stamp.values
                    + [.text(owner.host), .integer(Int64(owner.pid)), .text(owner.leaseStart), .integer(until)]
                    + job.queueKey).first.flatMap(Job.init(row:))
        }
    }

    /// Whether a due job of `Job`'s queue (narrowed by `condition` with `values`) is there:
    /// one read, for a queue that is nearly always empty.
    func hasDue<Job: SideQueueJob>(_: Job.Type, now: Int64, where condition: String = "",
                                   _ values: [LedgerValue] = []) throws -> Bool {
        let queue = Job.queue
        return try !query("""
            SELECT 1 AS due FROM \(queue.table) q WHERE q.state = 'pending' AND \(queue.isDue)\(condition) LIMIT 1
            """, [.integer(now)] + values).isEmpty
    }

    /// Whether `job`'s claim is still the job's and unexpired at `now` (and `condition` holds).
    func holds<Job: SideQueueJob>(_ job: Job, now: Int64, and condition: String = "",
                                  _ values: [LedgerValue] = []) throws -> Bool {
        let queue = Job.queue
        return try !query("""
            SELECT 1 AS held FROM \(queue.table)
            WHERE \(queue.matchesKey) AND state = 'pending' AND claim = ? AND \(queue.expiry) > ?\(condition)
            """, job.queueKey + [.integer(job.claim), .integer(now)] + values).isEmpty
    }

    /// Writes `change` to `job` while it is pending under its claim, and returns its row's
    /// `order_id` (the order whose history tells of the job); nil, and nothing changes, once
    /// the job was claimed again since.
    func write<Job: SideQueueJob>(_ change: SideQueue.Change, to job: Job, now: Int64) throws -> (any LedgerRow)? {
        let queue = Job.queue
        let set = queue.assignments(change, now: now)
        return try query("""
            UPDATE \(queue.table) SET \(set.sql)
            WHERE \(queue.matchesKey) AND state = 'pending' AND claim = ? RETURNING order_id
            """, set.values + job.queueKey + [.integer(job.claim)]).first
    }

    /// Takes back every side-queue claim that `rescuer` can prove dead (see `SideQueue`): the
    /// job is due at once, its claim bumped so a write under the dead claim changes nothing,
    /// and its owner cleared. Returns how many jobs were taken back.
    func rescueSideQueueClaims(by rescuer: LeaseOwner, now: Int64) throws -> Int {
        var taken = 0
        for queue in SideQueue.all {
            let owners = try query("""
                SELECT DISTINCT claim_host, claim_pid, claim_start FROM \(queue.table)
                WHERE state = 'pending' AND claim_host = ? AND \(queue.expiry) > ?
                  AND \(queue.expiry) = claim_expires_at
                """, [.text(rescuer.host), .integer(now)])
            for row in owners {
                guard let host = row.string("claim_host"), let pid = row.int("claim_pid"),
                      let start = row.string("claim_start"),
                      // kill(2) reads 0 and negative pids as process groups: such a row was not
                      // written by settle, and its claim waits for its expiry.
                      let pid32 = Int32(exactly: pid), pid32 > 0 else { continue }
                let holder = LeaseOwner(host: host, pid: pid32, leaseStart: start)
                guard holder != rescuer, holder.isKnownDead(comparedWith: rescuer) else { continue }
                taken += try changedRows("""
                    UPDATE \(queue.table) SET claim = claim + 1, \(queue.expiry) = ?,
                           claim_host = NULL, claim_pid = NULL, claim_start = NULL, claim_expires_at = NULL
                    WHERE state = 'pending' AND claim_host = ? AND claim_pid = ? AND claim_start = ?
                      AND \(queue.expiry) > ? AND \(queue.expiry) = claim_expires_at
                    """, [.integer(now), .text(host), .integer(pid), .text(start), .integer(now)])
            }
        }
        return taken
    }
}

/// The side queues' claims, holds, releases and records as the engine calls them, each its own
/// transaction; each queue's file adds its claim (what makes its jobs due) and thin wrappers.
extension TransactionalLedger {
    /// Whether this job's claim is still this one's and unexpired: checked just before the store
    /// or the hook is called.
    package func holds<Job: SideQueueJob>(_ job: Job) throws(LedgerError) -> Bool {
        let now = time.unixSeconds
        return try reading { db in try db.holds(job, now: now) }
    }

    /// Gives claimed jobs back untouched, in one transaction: due again at once, for any host.
    package func release<Job: SideQueueJob>(_ jobs: [Job]) throws(LedgerError) {
        guard !jobs.isEmpty else { return }
        let now = time.unixSeconds
        try writing { db in
            for job in jobs { _ = try db.write(.release, to: job, now: now) }
        }
    }

    /// Writes `change` to `job` under the claim it was handed out under at `now` (nil: the
    /// ledger's clock) and, when it changed, runs `effect` and adds `history` to the order the
    /// job is about (none for a job about no order), all in one transaction. False, and nothing changes, once the job was claimed again since.
    @discardableResult
    package func record<Job: SideQueueJob>(_ job: Job, _ change: SideQueue.Change, at now: Int64? = nil,
                                           history: HistoryEntry? = nil,
                                           effect: (any LedgerTransaction) throws -> Void = { _ in })
        throws(LedgerError) -> Bool {
        let now = now ?? time.unixSeconds
        return try writing { db in
            guard let written = try db.write(change, to: job, now: now) else { return false }
            try effect(db)
            if let history, let orderId = written.string("order_id") { try db.appendHistory(orderId, history) }
            return true
        }
    }
}
