import Foundation

/// What notifications leave for a pass to do: revokes through the operator's hook and answers
/// to Apple's refund requests, each retried with the order backoff until done.
extension NotificationInbox {
    /// Most revokes or answers done in one pass; the rest wait for the next.
    static let batch = 100

    /// Runs every due revoke and refund-request answer. Returns how many of each finished.
    @discardableResult
    public func settleObligations() throws(LedgerError) -> (revoked: Int, answered: Int) {
        (try runRevocations(), try answerConsumptionRequests())
    }

    private func runRevocations() throws(LedgerError) -> Int {
        var done = 0
        for (job, order) in try ledger.dueRevocations(limit: Self.batch) {
            let now = ledger.time.unixSeconds
            guard let revokeHook else {
                try ledger.recordRevocation(job, state: "needs_attention", error: "no revoke hook is configured (delivery.revoke_command)",
                                            nextAttemptAt: now, history: HistoryEntry(at: now, kind: .revoke, outcome: "needs_attention",
                                            detail: "Apple took transaction \(job.transactionId) back; no revoke hook is configured, take the goods back by hand"))
                log.error("order.revoke_unconfigured", ["order": order.orderId, "transaction": job.transactionId])
                continue
            }
            let report = revokeHook.revoke(order: order, transactionId: job.transactionId)
            var entry = HistoryEntry(at: now, kind: .revoke, outcome: "", hookExit: report.exitCode, durationMs: report.durationMs,
                                     detail: report.output.isEmpty ? "key \(RevokeHook.idempotencyKey(transactionId: job.transactionId))" : report.output)
            switch report.outcome {
            case .delivered, .alreadyGranted:
                entry.outcome = "revoked"
                try ledger.recordRevocation(job, state: "revoked", error: nil, nextAttemptAt: now, history: entry)
                log.info("order.revoked", ["order": order.orderId, "transaction": job.transactionId,
                                           "idempotency_key": RevokeHook.idempotencyKey(transactionId: job.transactionId)])
                done += 1
            case let .retry(message), let .cannotStart(message):
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
        }
        return done
    }

    /// The Send Consumption Information v2 body from the ledger's facts: delivered or not.
    /// https://developer.apple.com/documentation/appstoreserverapi/consumptionrequest
    func consumptionBody(order: Order?) -> JSONValue {
        let delivered = order?.state == .finished && order?.refund == nil
        var members: [(String, JSONValue)] = [
            ("customerConsented", .bool(true)),
            ("deliveryStatus", .string(delivered ? "DELIVERED" : "UNDELIVERED_OTHER")),
            ("sampleContentProvided", .bool(consumption.sampleContentProvided)),
        ]
        // Apple requires 0 for anything not delivered; how much of a delivered purchase was used
        // is the operator's knowledge, not the ledger's, so it is left out then.
        if !delivered { members.append(("consumptionPercentage", .number(0))) }
        if let preference = consumption.refundPreference { members.append(("refundPreference", .string(preference.rawValue))) }
        return .object(members)
    }

    private func answerConsumptionRequests() throws(LedgerError) -> Int {
        guard let api else { return 0 }
        var done = 0
        for (job, order) in try ledger.dueConsumptionAnswers(limit: Self.batch) {
            let now = ledger.time.unixSeconds
            let body = consumptionBody(order: order)
            let text = body.serialized()
            var entry = HistoryEntry(at: now, kind: .consumption, outcome: "", environment: job.environment,
                                     detail: "answer to refund request \(job.notificationUUID): \(text)")
            guard now < job.deadlineAt else {
                entry.outcome = "failed"
                try ledger.recordConsumptionAnswer(job, state: "failed", body: text, appleStatus: nil, error: "past Apple's 12-hour deadline",
                                                   nextAttemptAt: now, history: entry)
                continue
            }
            switch api.sendConsumptionInformation(transactionId: job.transactionId, environment: job.environment, body: body) {
            case .ok:
                entry.outcome = "answered"
                entry.appleStatus = 202
                try ledger.recordConsumptionAnswer(job, state: "sent", body: text, appleStatus: 202, error: nil, nextAttemptAt: now, history: entry)
                log.info("consumption.answered", ["transaction": job.transactionId, "order": job.orderId, "body": text])
                done += 1
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
    static func failure(_ outcome: VerificationOutcome) -> (permanent: Bool, message: String) {
        switch outcome {
        case let .rejected(_, detail): return (true, detail)
        case let .needsAttention(_, detail): return (true, detail)
        case let .retry(message): return (false, message)
        case let .appleUnavailable(message, _): return (false, message)
        case let .configurationFault(message): return (false, message)
        case .verified: return (false, "unexpected answer")
        }
    }
}
