import Foundation
import SettleBase
import SettleModel
import SettleLedger
import SettleDelivery

/// Takes back goods through the operator's revoke hook: every revoke any store enqueued (a
/// refund, a revocation, a voided purchase), claimed from the ledger, run once under its
/// idempotency key and retried with the order backoff until done. The core's, not a store's:
/// a store only enqueues.
package struct Revoker: Sendable {
    package let ledger: any SettleLedger
    package let hook: RevokeHook?
    package let policy: RetryPolicy
    package let log: Log

    /// Most revokes done in one run; the rest wait for the next.
    package static let batch = 100
    /// How long a claimed revoke is this host's: longer than a hook takes. A host that dies
    /// holding one leaves it to the others this much later.
    package static let claimSeconds: Int64 = 900
    /// Why a revoke waits when no route for revokes is configured.
    package static let noRevokeRoute = "no revoke route configured (delivery.revoke_command, or delivery.webhook.revoke_url for a webhook)"

    package init(ledger: any SettleLedger, hook: RevokeHook?, policy: RetryPolicy, log: Log) {
        self.ledger = ledger
        self.hook = hook
        self.policy = policy
        self.log = log
    }

    /// Runs every due revoke; returns how many finished.
    package func run() throws(LedgerError) -> Int {
        var done = 0
        for (job, order) in try ledger.claimDueRevocations(limit: Self.batch, leaseSeconds: Self.claimSeconds) {
            let key = RevokeHook.idempotencyKey(transactionId: job.transactionId, round: job.round)
            guard let hook else {
                try wait(job, order, key: key)
                continue
            }
            // The claim is re-checked at the last moment: once it lapsed, another host may run this revoke.
            guard try ledger.holds(job) else {
                log.warning("order.revoke_lease_lost", ["order": order.orderId, "transaction": job.transactionId])
                continue
            }
            if try revoke(job, order, key: key, hook: hook) { done += 1 }
        }
        return done
    }

    /// Never to the grant route: the revoke waits, pending, and runs once a route is configured.
    private func wait(_ job: RevocationJob, _ order: Order, key: String) throws(LedgerError) {
        guard job.lastError != Self.noRevokeRoute else {
            try ledger.releaseRevocation(job)
            return
        }
        try ledger.recordRevocationWaiting(job, reason: Self.noRevokeRoute, history: HistoryEntry(
            at: ledger.time.unixSeconds, kind: .revoke, outcome: "waiting",
            detail: "\(order.store.owner) took transaction \(job.transactionId) back; the revoke (key \(key)) waits: \(Self.noRevokeRoute)"))
        log.error("order.revoke_waiting", ["order": order.orderId, "transaction": job.transactionId, "why": Self.noRevokeRoute])
    }

    /// Runs one revoke through the hook and records what it said; true once it is done.
    private func revoke(_ job: RevocationJob, _ order: Order, key: String, hook: RevokeHook) throws(LedgerError) -> Bool {
        let now = ledger.time.unixSeconds
        let report = hook.revoke(order: order, transactionId: job.transactionId, round: job.round, quantity: job.quantity,
                                 revocation: (job.revocationType, job.revocationPercentage))
        var entry = HistoryEntry(at: now, kind: .revoke, outcome: "", hookExit: report.exitCode, durationMs: report.durationMs,
                                 detail: report.output.isEmpty ? "key \(key)" : report.output)
        switch report.outcome {
        case .delivered, .alreadyGranted:
            entry.outcome = "revoked"
            try ledger.recordRevocation(job, state: "revoked", error: nil, nextAttemptAt: now, history: entry)
            log.info("order.revoked", ["order": order.orderId, "transaction": job.transactionId, "idempotency_key": key])
            return true
        case let .retry(message), let .cannotStart(message), let .unconfirmed(message):
            entry.outcome = "retry"
            let exhausted = job.attempts + 1 >= policy.maxAttempts
            try ledger.recordRevocation(job, state: exhausted ? "needs_attention" : "pending", error: message,
                                        nextAttemptAt: now + Int64(policy.delay(afterAttempt: job.attempts + 1)), history: entry)
            log.warning("order.revoke_failed", ["order": order.orderId, "attempt": job.attempts + 1, "error": message])
        case let .refused(message):
            entry.outcome = "needs_attention"
            try ledger.recordRevocation(job, state: "needs_attention", error: message, nextAttemptAt: now, history: entry)
            log.error("order.revoke_refused", ["order": order.orderId, "error": message])
        }
        return false
    }
}
