import SettleModel

/// The ledger's side queues: work owed to a store or the hook outside an order's own settling
/// (Finish Transaction calls, revokes, consumption answers, Set App Account Token calls, Play
/// pushes and their refund reviews, support's actions). Each job is claimed by bumping its
/// `claim` (the fencing token every later write checks) and pushing its expiry out by a lease.
///
/// A claim also names its owner (`claim_host`, `claim_pid`, `claim_start`: SQLite migration 17,
/// PostgreSQL 14), as an order's lease does, so that rescue can tell a dead predecessor's claim
/// from a live one: a claim of this host whose process is gone (or whose pid now belongs to a
/// process with another start time) is taken back at once, not after its lease; a live owner's
/// claim, and one of another host (its pid means nothing here), wait for their expiry.
package struct SideQueue: Sendable {
    /// The table that holds the queue.
    package var table: String
    /// The column the claim's expiry is kept in (a job is due again once it is past).
    package var expiry: String

    /// Every side queue, in the order rescue visits them.
    package static let all: [SideQueue] = [
        SideQueue(table: "apple_finishes", expiry: "next_attempt_at"),
        SideQueue(table: "revocations", expiry: "next_attempt_at"),
        SideQueue(table: "consumption_answers", expiry: "next_attempt_at"),
        SideQueue(table: "account_token_updates", expiry: "next_attempt_at"),
        SideQueue(table: "support_actions", expiry: "next_attempt_at"),
        SideQueue(table: "play_notifications", expiry: "claimed_until"),
    ]

    /// The assignments that name `owner` as the owner of a claim that expires at `until` (the
    /// job's new due time), for a claim's `UPDATE ... SET`. The expiry is kept apart so rescue
    /// can tell a claim still in flight (its due time is still the claim's expiry) from a job
    /// whose outcome was recorded with a backoff (a due time of its own): only the first is
    /// taken back, so a dead process's backoffs are kept.
    package static func owner(_ owner: LeaseOwner, until: Int64) -> (sql: String, values: [LedgerValue]) {
        ("claim_host = ?, claim_pid = ?, claim_start = ?, claim_expires_at = ?",
         [.text(owner.host), .integer(Int64(owner.pid)), .text(owner.leaseStart), .integer(until)])
    }
}

extension LedgerTransaction {
    /// Takes back every side-queue claim that `rescuer` can prove dead (see `SideQueue`): the
    /// job is due at once, its claim bumped so a write under the dead claim changes nothing,
    /// and its owner cleared. Returns how many jobs were taken back.
    func rescueSideQueueClaims(by rescuer: LeaseOwner, now: Int64) throws -> Int {
        var taken = 0
        for queue in SideQueue.all {
            let owners = try query("""
                SELECT DISTINCT claim_host, claim_pid, claim_start FROM \(queue.table)
                WHERE state = 'pending' AND claim_host = ? AND \(queue.expiry) > ? AND \(queue.expiry) = claim_expires_at
                """, [.text(rescuer.host), .integer(now)])
            for row in owners {
                guard let host = row.string("claim_host"), let pid = row.int("claim_pid"), let start = row.string("claim_start"),
                      // kill(2) reads 0 and negative pids as process groups: such a row was not
                      // written by settle, and its claim waits for its expiry.
                      let pid32 = Int32(exactly: pid), pid32 > 0 else { continue }
                let holder = LeaseOwner(host: host, pid: pid32, leaseStart: start)
                guard holder != rescuer, holder.isKnownDead(comparedWith: rescuer) else { continue }
                taken += try query("""
                    UPDATE \(queue.table) SET claim = claim + 1, \(queue.expiry) = ?, claim_host = NULL, claim_pid = NULL, claim_start = NULL,
                           claim_expires_at = NULL
                    WHERE state = 'pending' AND claim_host = ? AND claim_pid = ? AND claim_start = ? AND \(queue.expiry) > ?
                      AND \(queue.expiry) = claim_expires_at
                    RETURNING claim
                    """, [.integer(now), .text(host), .integer(pid), .text(start), .integer(now)]).count
            }
        }
        return taken
    }
}
