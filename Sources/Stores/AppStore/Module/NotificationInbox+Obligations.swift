import Foundation
import SettleBase
import SettleModel
import SettleLedger
import SettleEngine
import SettleDelivery

/// What Apple's notifications leave for a pass to do: answers to its refund requests, each
/// retried with the order backoff until done. (Revokes are the core's: `Revoker`.)
extension NotificationInbox {
    /// Most revokes or answers done in one pass; the rest wait for the next.
    package static let batch = 100
    /// How long a claimed revoke or answer is this host's: longer than a hook or Apple call
    /// takes. A host that dies holding one leaves it to the others this much later.
    package static let claimSeconds: Int64 = 900

    /// Answers every due refund request. Returns how many were answered. An answer about a
    /// purchase still being settled looks again `recheckSeconds` later: a run before the pass's
    /// deliveries passes 0, so the run after them answers what they delivered.
    @discardableResult
    package func answerRefundRequests(recheckSeconds: Int64 = evidenceRecheckSeconds) throws(LedgerError) -> Int {
        try answerConsumptionRequests(recheckSeconds: recheckSeconds)
    }

    /// How long an answer waits for an order still being settled before it looks again.
    package static let evidenceRecheckSeconds: Int64 = 600

    private func answerConsumptionRequests(recheckSeconds: Int64) throws(LedgerError) -> Int {
        guard let api else { return 0 }
        var done = 0
        var pacedBy: String?
        for (job, _) in try ledger.claimDueConsumptionAnswers(limit: Self.batch, leaseSeconds: Self.claimSeconds) {
            let now = ledger.time.unixSeconds
            if let pacedBy {
                // The bucket is spent: the rest wait for the next pass (well before Apple's deadline).
                try ledger.postponeConsumptionAnswer(job, until: now, why: pacedBy)
                continue
            }
            var entry = HistoryEntry(at: now, kind: .consumption, outcome: "", environment: job.storedEnvironment,
                                     detail: "answer to refund request \(job.notificationUUID)")
            guard now < job.deadlineAt else {
                entry.outcome = "not_answered"
                entry.detail = (entry.detail ?? "") + ": no answer sent; past Apple's 12-hour deadline"
                try ledger.recordConsumptionAnswer(job, state: "failed", body: "", appleStatus: nil, error: "past Apple's 12-hour deadline",
                                                   nextAttemptAt: now, history: entry)
                log.warning("consumption.not_answered", ["transaction": job.transactionId, "why": "past Apple's 12-hour deadline"])
                continue
            }
            // Only a verified notification writes the row, in Apple's spelling; other text was
            // put there by something else, and Apple hears nothing sent to a guessed environment.
            guard let environment = job.environment else {
                try leaveUnanswered(job, why: "the ledger holds environment '\(job.storedEnvironment)', which is not Apple's",
                                    entry: entry, now: now)
                continue
            }
            let evidence = try ledger.deliveryEvidence(transactionId: job.transactionId)
            switch evidence {
            case let .inFlight(why):
                // Not known yet, perhaps soon: look again before the deadline, send nothing now.
                try ledger.postponeConsumptionAnswer(job, until: min(now + recheckSeconds, job.deadlineAt.saturatingSubtracting(1)),
                                                     why: why)
                continue
            case let .unknown(why):
                // Settle cannot show whether it was delivered: no answer is better than a wrong one
                // (Apple weighs "undelivered" toward a refund).
                try leaveUnanswered(job, why: why, entry: entry, now: now)
                continue
            case .delivered:
                break
            }
            let answer = try consumptionAnswer(orderId: job.orderId) // the customer's part: +CustomerEvidence
            if let why = answer.withheldBecause { try leaveUnanswered(job, why: why, entry: entry, now: now); continue }
            guard case let .send(body, note) = answer else { continue }
            let text = body.serialized()
            // Re-checked at the last moment: Apple hears one answer, from the host that holds it.
            guard try ledger.holds(job) else {
                log.warning("consumption.lease_lost", ["transaction": job.transactionId])
                continue
            }
            entry.detail = (entry.detail ?? "") + ": \(text)" + (note.isEmpty ? "" : " (\(note))")
            switch api.sendConsumptionInformation(transactionId: job.transactionId, environment: environment, body: body) {
            case .ok:
                entry.outcome = "answered"
                entry.appleStatus = 202
                try ledger.recordConsumptionAnswer(job, state: "sent", body: text, appleStatus: 202, error: nil, nextAttemptAt: now, history: entry)
                log.info("consumption.answered", ["transaction": job.transactionId, "order": job.orderId, "body": text])
                done += 1
            case let .failed(.paced(message), _):
                // settle's own pace: due again at once, no attempt used.
                try ledger.postponeConsumptionAnswer(job, until: now, why: message)
                log.info("consumption.paced", ["transaction": job.transactionId, "why": message])
                pacedBy = message
            case let .failed(outcome, _):
                let (permanent, message) = Self.failure(outcome)
                entry.outcome = permanent ? "failed" : "retry"
                entry.detail = (entry.detail ?? "") + "; Apple: \(message)"
                let next = now + Int64(policy.appleDelay(retryAfter: nil))
                try ledger.recordConsumptionAnswer(job, state: permanent ? "failed" : "pending", body: text, appleStatus: nil, error: message,
                                                   nextAttemptAt: min(next, job.deadlineAt), history: entry)
                log.warning("consumption.failed", ["transaction": job.transactionId, "error": message, "retry": !permanent])
            case .paginationExpired:
                continue
            }
        }
        return done
    }

    /// Whether a failed call is worth trying again, and what to say about it.
    package static func failure(_ outcome: VerificationOutcome) -> (permanent: Bool, message: String) {
        switch outcome {
        case let .rejected(_, detail): return (true, detail)
        case let .needsAttention(_, detail): return (true, detail)
        case let .retry(message): return (false, message)
        case let .storeUnavailable(message, _): return (false, message)
        case let .paced(message): return (false, message)
        case let .configurationFault(message): return (false, message)
        case .verified: return (false, "unexpected answer")
        }
    }

    /// No answer is better than a wrong one (Apple weighs "undelivered" toward a refund): the
    /// request is closed unanswered, saying why.
    private func leaveUnanswered(_ job: ConsumptionJob, why: String, entry: HistoryEntry, now: Int64) throws(LedgerError) {
        var entry = entry
        entry.outcome = "not_answered"
        entry.detail = (entry.detail ?? "") + ": no answer sent: \(why)"
        try ledger.recordConsumptionAnswer(job, state: "failed", body: "", appleStatus: nil, error: "no answer sent: \(why)",
                                           nextAttemptAt: now, history: entry)
        log.warning("consumption.not_answered", ["transaction": job.transactionId, "order": job.orderId, "why": why])
    }
}
