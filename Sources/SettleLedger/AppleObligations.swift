import Foundation
import SettleModel

/// A revoke owed to the operator's hook after Apple took a delivered purchase back.
package struct RevocationJob: Sendable, Equatable {
    package var transactionId: String
    package var orderId: String
    package var kind: String
    package var attempts: Int
    /// 1 for the first refund of the transaction; one more for each refund after a reversed one.
    package var round: Int = 1
    /// Why the last attempt did not revoke (or why the revoke waits), nil before any.
    package var lastError: String? = nil
    /// The claim this job was handed out under (the row counts its claims): its outcome is
    /// recorded under it, and changes nothing once another host claimed the job since.
    package var claim: Int64 = 0
    /// How much of the purchase to take back (a quantity-based partial refund); nil: all of it.
    package var quantity: Int? = nil
    /// Apple's `revocationType` as sent (`REFUND_FULL`, `REFUND_PRORATED`, `FAMILY_REVOKE`); nil
    /// when Apple gave none, and for Google's voidings.
    package var revocationType: String? = nil
    /// Apple's `revocationPercentage` in milliunits (50000 = 50 %), nil when absent.
    package var revocationPercentage: Int64? = nil
}

/// An answer owed to Apple for a refund request (CONSUMPTION_REQUEST).
package struct ConsumptionJob: Sendable, Equatable {
    package var notificationUUID: String
    package var transactionId: String
    /// The notification's environment as the ledger holds it (Apple's spelling), kept as text
    /// so that other text in a row stays visible in history rather than read as some environment.
    package var storedEnvironment: String
    package var orderId: String?
    package var attempts: Int
    package var deadlineAt: Int64
    /// The claim this answer was handed out under, as for `RevocationJob.claim`.
    package var claim: Int64 = 0
}

extension RevocationJob: SideQueueJob {
    package static let queue = SideQueue(table: "revocations", key: ["transaction_id"], order: ["next_attempt_at"])
    package var queueKey: [LedgerValue] { [.text(transactionId)] }

    package init(row: any LedgerRow) {
        self.init(transactionId: row.string("transaction_id") ?? "", orderId: row.string("order_id") ?? "",
                  kind: row.string("kind") ?? "REFUND", attempts: row.count("attempts"),
                  round: row.count("round", default: 1), lastError: row.string("last_error"), claim: row.int("claim") ?? 0,
                  quantity: row.int("quantity").map { Int($0) }, revocationType: row.string("revocation_type"),
                  revocationPercentage: row.int("revocation_percentage"))
    }
}

extension ConsumptionJob: SideQueueJob {
    package static let queue = SideQueue(table: "consumption_answers", key: ["notification_uuid"],
                                         order: ["next_attempt_at"])
    package var queueKey: [LedgerValue] { [.text(notificationUUID)] }

    package init(row: any LedgerRow) {
        self.init(notificationUUID: row.string("notification_uuid") ?? "",
                  transactionId: row.string("transaction_id") ?? "", storedEnvironment: row.string("environment") ?? "",
                  orderId: row.string("order_id"), attempts: row.count("attempts"), deadlineAt: row.int("deadline_at") ?? 0,
                  claim: row.int("claim") ?? 0)
    }
}

/// What the ledger shows about a purchase's delivery, for an answer to a refund request.
package enum DeliveryEvidence: Sendable, Equatable {
    /// Delivered: settle finished it, or a grant is recorded outside settle.
    case delivered(String)
    /// An order about it is still being settled: ask again later.
    case inFlight(String)
    /// Settle does not know: no answer is sent (never "undelivered" from absence of evidence).
    case unknown(String)
}

/// Revokes and refund-request answers: work that notifications leave for passes, each retried
/// with backoff until done, like deliveries. Written once for both engines. With several hosts
/// each job is claimed by one of them: the claim takes the rows (`FOR UPDATE SKIP LOCKED` on
/// PostgreSQL, so two hosts never take the same), moves the job's due time a lease ahead and
/// counts the claim; the outcome is recorded only under the claim it was taken with, and
/// `holds` re-checks the claim just before the hook or Apple is called.
extension TransactionalLedger {
    /// Due revokes of orders that were, or may have been, delivered: finished, or holding their
    /// grant while the hook's outcome is unknown (it timed out, settle died during it). Only a
    /// revoke whose order never reached the hook (it holds no grant) is cancelled here; one
    /// whose delivery is in flight waits for it, and one whose order is being transferred waits
    /// for the transfer to see the refund (it then cancels itself, or this revoke when it took
    /// the goods back already), so the goods are taken back once, from whoever holds them. Each returned job is claimed for `leaseSeconds`.
    package func claimDueRevocations(limit: Int, leaseSeconds: Int64, owner: LeaseOwner) throws(LedgerError) -> [(RevocationJob, Order)] {
        let now = time.unixSeconds
        return try writing { db in
            try db.query("""
                UPDATE revocations SET state = 'cancelled', last_error = 'the order was never delivered', updated_at = ?
                WHERE state = 'pending' AND order_id IN (
                    SELECT order_id FROM orders o WHERE o.state IN ('rejected','pending','needs_attention')
                    AND NOT EXISTS (SELECT 1 FROM grants g WHERE g.order_id = o.order_id))
                """, [.integer(now)])
            return try db.claimDue(RevocationJob.self, limit: limit, leaseSeconds: leaseSeconds, owner: owner, now: now,
                                   joining: " JOIN orders o ON o.order_id = q.order_id", where: """
                 AND (o.state = 'finished' OR (o.state NOT IN ('verifying','delivering')
                                              AND EXISTS (SELECT 1 FROM grants g WHERE g.order_id = o.order_id)))
                 AND NOT EXISTS (SELECT 1 FROM support_actions s WHERE s.order_id = o.order_id AND s.kind = 'transfer'
                                 AND s.state IN ('pending','waiting'))
                """).compactMap { job in try db.order(job.orderId).map { (job, $0) } }
        }
    }

    /// A revoke that cannot run yet because no route for revokes is configured: it stays
    /// `pending` and due (so it runs once one is) with the reason as its last error, without using an attempt.
    package func recordRevocationWaiting(_ job: RevocationJob, reason: String, history: HistoryEntry) throws(LedgerError) {
        try record(job, .hold(why: reason), history: history)
    }

    /// Gives a claimed revoke back untouched: due again at once.
    package func releaseRevocation(_ job: RevocationJob) throws(LedgerError) { try release([job]) }

    /// The revoke owed for one order, for `settle status`: nil when none was ever owed.
    package func revocation(orderId: String) throws(LedgerError) -> (state: String, job: RevocationJob)? {
        guard try hasNotificationTables() else { return nil }
        return try reading { db in
            try db.query("SELECT * FROM revocations WHERE order_id = ? ORDER BY updated_at DESC LIMIT 1", [.text(orderId)]).first
                .map { row in (row.string("state") ?? "", RevocationJob(row: row)) }
        }
    }

    /// What a revoke attempt concluded: `revoked`, `pending` (retry at `nextAttemptAt`) or
    /// `needs_attention`. Nothing changes when the job was claimed again since (false).
    @discardableResult
    package func recordRevocation(_ job: RevocationJob, state: String, error: String?, nextAttemptAt: Int64,
                                 history: HistoryEntry) throws(LedgerError) -> Bool {
        try record(job, .outcome(state: state, nextAttemptAt: nextAttemptAt, error: error), history: history)
    }

    /// Due refund-request answers, each claimed for `leaseSeconds` as revokes are.
    package func claimDueConsumptionAnswers(limit: Int, leaseSeconds: Int64,
                                           owner: LeaseOwner) throws(LedgerError) -> [(ConsumptionJob, Order?)] {
        let now = time.unixSeconds
        return try writing { db in
            try db.claimDue(ConsumptionJob.self, limit: limit, leaseSeconds: leaseSeconds, owner: owner, now: now)
                .map { job in (job, try job.orderId.flatMap(db.order)) }
        }
    }

    /// What the ledger can show about whether a purchase was delivered, for an answer to a
    /// refund request. Only evidence counts: a finished order of settle's (not refunded since) or
    /// a grant recorded outside settle. Absence of evidence is never "undelivered".
    package func deliveryEvidence(transactionId: String) throws(LedgerError) -> DeliveryEvidence {
        try reading { db in
            let grants = try db.query("""
                SELECT g.order_id AS holder, g.source AS source, o.state AS state, o.refunded_at AS refunded_at
                FROM grants g LEFT JOIN orders o ON o.order_id = g.order_id
                WHERE g.transaction_id = ? OR g.grant_key = ?
                """, [.text(transactionId), .text(transactionId)])
            for row in grants {
                if row.string("source") == "outside" { return .delivered("a grant of transaction \(transactionId) is recorded outside settle") }
                if row.string("state") == OrderState.finished.rawValue, row.int("refunded_at") == nil, let holder = row.string("holder") {
                    // A transfer past its revoke and before its grant holds the goods nowhere.
                    if let moving = try db.query("""
                        SELECT number, state, from_user, to_user FROM support_actions
                        WHERE order_id = ? AND kind = 'transfer' AND revoked_at IS NOT NULL AND granted_at IS NULL
                          AND state IN ('pending','waiting') LIMIT 1
                        """, [.text(holder)]).first {
                        let what = "transfer \(moving.int("number") ?? 0) of order \(holder) took the goods back from "
                            + "\(moving.string("from_user") ?? "?") and has not granted them to \(moving.string("to_user") ?? "?") yet"
                        if moving.string("state") == "pending" { return .inFlight(what) }
                        return .unknown(what + " (it waits for a person); the goods are with nobody")
                    }
                    return .delivered("settle delivered transaction \(transactionId) (order \(holder))")
                }
            }
            let live = try db.query("""
                SELECT order_id FROM orders WHERE (transaction_id = ? OR verified_transaction_id = ? OR proof_key = ?)
                AND state IN ('pending','verifying','delivering') LIMIT 1
                """, [.text(transactionId), .text(transactionId), .text(transactionId)]).first?.string("order_id")
            if let live { return .inFlight("order \(live) about transaction \(transactionId) is still being settled") }
            if let row = grants.first, let holder = row.string("holder") {
                return .unknown("order \(holder) holds transaction \(transactionId) but is \(row.string("state") ?? "?")"
                                + (row.int("refunded_at") != nil ? " and refunded" : "") + "; whether the goods are still delivered is not known")
            }
            return .unknown("settle holds no finished order and no recorded grant of transaction \(transactionId)")
        }
    }

    /// An answer that waits for an order still being settled: looked at again at `until`, no attempt used.
    package func postponeConsumptionAnswer(_ job: ConsumptionJob, until: Int64, why: String) throws(LedgerError) {
        try record(job, .hold(why: "waiting: \(why)", until: until))
    }

    /// What an answer attempt concluded: `sent`, `pending` (retry at `nextAttemptAt`) or `failed`.
    /// Nothing changes when the answer was claimed again since (false).
    @discardableResult
    package func recordConsumptionAnswer(_ job: ConsumptionJob, state: String, body: String, appleStatus: Int?, error: String?,
                                        nextAttemptAt: Int64, history: HistoryEntry) throws(LedgerError) -> Bool {
        try record(job, .outcome(state: state, nextAttemptAt: nextAttemptAt, error: error,
                                 also: [("body", .text(body)), ("apple_status", .from(appleStatus))]), history: history)
    }
}
