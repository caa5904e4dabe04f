import SettleModel
import SettleLedger
import SettleDelivery

/// What the hook said about each order it was given, recorded in the ledger.
extension Reconciler {
    /// What the hook said about one order, recorded: finished, already granted, or a failure.
    func record(_ report: DeliveryReport, of order: Order, purchase: VerifiedPurchase, pass: Pass) throws {
        metrics?.observeDelivery(report.outcome, timedOut: report.timedOut, durationMs: report.durationMs)
        defer { pass.progress() }
        recordCustomerAnswer(report, of: order)
        let now = ledger.time.unixSeconds
        var entry = Self.deliveryEntry(report, purchase: purchase, now: now)
        let key = HookPayload.idempotencyKey(purchase)
        switch report.outcome {
        case .delivered where order.store.mustBeToldOfDelivery:
            entry.outcome = "delivered"
            entry.detail = ["store finish pending", entry.detail].compactMap { $0 }.joined(separator: "\n")
            // Durable before Google hears of it: a crash from here on acknowledges, never re-delivers.
            guard try ledger.recordDelivered(orderId: order.orderId, owner: owner, fence: order.fencingToken,
                                             error: nil, history: entry) else {
                log.warning("order.lease_lost", [
                    "order": order.orderId, "refused": "delivered", "idempotency_key": key,
                    "why": "delivered, but the claim expired and another process took the order over",
                ])
                return
            }
            log.info("order.delivered", ["order": order.orderId, "store": order.store.rawValue, "idempotency_key": key,
                                         "hook_exit": report.exitCode, "duration_ms": report.durationMs])
            var delivered = order
            delivered.deliveredAt = now
            try finishWithStore(delivered, purchase: purchase, pass: pass)
        case .delivered:
            entry.outcome = "delivered"
            let finished = try ledger.markFinished(orderId: order.orderId, owner: owner, fence: order.fencingToken,
                                                   history: entry)
            recordFinished(order, finished: finished, key: key, report: report, pass: pass)
        case let .alreadyGranted(message) where order.store.mustBeToldOfDelivery:
            // The backend holds this very purchase's grant (its key is the store's own id for
            // it): evidence it was granted, so the store is told, as after a delivery. Google
            // would refund a purchase left unacknowledged while the customer keeps the goods.
            entry.outcome = "already_granted"
            entry.detail = ["the hook answered already granted: \(message)",
                            report.output.isEmpty ? nil : report.output,
                            "store finish pending"].compactMap { $0 }.joined(separator: "\n")
            guard try ledger.recordDelivered(orderId: order.orderId, owner: owner, fence: order.fencingToken,
                                             error: nil, history: entry) else {
                leaseLost(order, "already_granted")
                return
            }
            log.info("order.delivered", ["order": order.orderId, "store": order.store.rawValue, "idempotency_key": key,
                                         "outcome": "already_granted", "hook_exit": report.exitCode])
            var delivered = order
            delivered.deliveredAt = now
            try finishWithStore(delivered, purchase: purchase, pass: pass)
        case let .alreadyGranted(message):
            entry.outcome = "already_granted"
            entry.detail = message + (report.output.isEmpty ? "" : "\n" + report.output)
            try recordGrantedOutside(order, key: key, entry: entry, pass: pass)
        case let .retry(message), let .refused(message), let .unconfirmed(message):
            try recordHookFailure(report, message: message, of: order, key: key, entry: entry, now: now, pass: pass)
        case let .cannotStart(message):
            entry.outcome = "cannot_start"
            entry.detail = message
            try ledger.recordFailure(orderId: order.orderId, owner: owner, fence: order.fencingToken, from: .delivering,
                                     error: message, countsAttempt: false, permanent: false, nextAttemptAt: now,
                                     maxAttempts: policy.maxAttempts, environment: nil, history: entry)
            log.error("delivery.configuration_fault", ["order": order.orderId, "error": message])
            pass.stop(order.store, deliveryConfigurationFault: message)
        }
    }

    /// What a hook said about several orders at once (a batch hook): the plain deliveries (the
    /// store need not hear of them) are finished together, one group commit for all where one
    /// each would wait for a commit of its own; every other answer is recorded as `record` does.
    func record(batch answers: [(order: Order, purchase: VerifiedPurchase, report: DeliveryReport)], pass: Pass) throws {
        let plain = answers.filter { $0.report.outcome == .delivered && !$0.order.store.mustBeToldOfDelivery }
        let together = plain.count > 1 ? Set(plain.map(\.order.orderId)) : []
        for answer in answers where !together.contains(answer.order.orderId) {
            try recordOne(answer.report, of: answer.order, purchase: answer.purchase, pass: pass)
        }
        guard !together.isEmpty else { return }
        let now = ledger.time.unixSeconds
        let finishing = plain.map { answer in
            metrics?.observeDelivery(answer.report.outcome, timedOut: answer.report.timedOut,
                                     durationMs: answer.report.durationMs)
            recordCustomerAnswer(answer.report, of: answer.order)
            var entry = Self.deliveryEntry(answer.report, purchase: answer.purchase, now: now)
            entry.outcome = "delivered"
            return FinishedDelivery(orderId: answer.order.orderId, fence: answer.order.fencingToken, history: entry)
        }
        let results = ledger.markFinished(finishing, owner: owner)
        for (answer, result) in zip(plain, results) {
            defer { pass.progress() }
            do {
                let key = HookPayload.idempotencyKey(answer.purchase)
                recordFinished(answer.order, finished: try result.get(), key: key, report: answer.report, pass: pass)
            } catch {
                guard let violation = error.constraintViolation else { throw error }
                try setAside(answer.order, violation: violation, pass: pass)
            }
        }
    }

    /// One order's answer, a write about it that fails a constraint setting it aside.
    private func recordOne(_ report: DeliveryReport, of order: Order, purchase: VerifiedPurchase, pass: Pass) throws {
        do {
            try record(report, of: order, purchase: purchase, pass: pass)
        } catch let error as LedgerError {
            guard let violation = error.constraintViolation else { throw error }
            try setAside(order, violation: violation, pass: pass)
        }
    }

    /// The history entry of a hook's answer about one order (its outcome is set by the caller).
    private static func deliveryEntry(_ report: DeliveryReport, purchase: VerifiedPurchase, now: Int64) -> HistoryEntry {
        HistoryEntry(at: now, kind: .delivery, outcome: "", hookExit: report.exitCode, environment: purchase.environment,
                     durationMs: report.durationMs, detail: report.output.isEmpty ? nil : report.output)
    }

    /// A delivered order of a store that need not hear of it, finished (or its claim found gone).
    private func recordFinished(_ order: Order, finished: Bool, key: String, report: DeliveryReport, pass: Pass) {
        if finished {
            log.info("order.finished", ["order": order.orderId, "idempotency_key": key,
                                        "hook_exit": report.exitCode, "duration_ms": report.durationMs])
            pass.count(.finished)
        } else {
            // The hook granted, but another process holds the order now: it will deliver it
            // again with the same key, which the receiver must answer as a duplicate.
            log.warning("order.lease_lost", [
                "order": order.orderId, "refused": "finished", "idempotency_key": key,
                "why": "delivered, but the claim expired and another process took the order over",
            ])
        }
    }

    /// The hook answered "already granted" and the store need not hear of it: finished when the
    /// order named that purchase; one matched by product is matched again (the purchase now
    /// granted outside settle) and delivered on this worker, or left to a person when unclear.
    private func recordGrantedOutside(_ order: Order, key: String, entry: HistoryEntry, pass: Pass) throws {
        switch try ledger.recordGrantedOutside(orderId: order.orderId, owner: owner, fence: order.fencingToken,
                                               history: entry) {
        case .finished:
            log.info("order.finished", ["order": order.orderId, "outcome": "already_delivered", "idempotency_key": key])
            pass.count(.finished)
        case let .rematch(again):
            log.info("order.rematch", ["order": order.orderId, "granted_outside": key,
                                       "why": "the hook answered already granted; trying the next purchase"])
            // Delivered on this worker, not queued: a delivery worker waiting for room in the
            // queue it drains would wait for ever.
            try verify(again, pass: pass) { verified in try deliver([verified], pass: pass) }
        case let .unclear(message):
            log.error("order.needs_attention", ["order": order.orderId,
                                                "reason": AttentionReason.alreadyGrantedUnclear.rawValue,
                                                "idempotency_key": key, "detail": message])
            pass.count(.needsAttention)
        case .leaseLost:
            leaseLost(order, "already_granted")
        }
    }

    /// The hook failed, refused or could not confirm the grant: tried again after the backoff
    /// (an attempt used), or left to a person once refused or out of attempts.
    private func recordHookFailure(_ report: DeliveryReport, message: String, of order: Order, key: String,
                                   entry: HistoryEntry, now: Int64, pass: Pass) throws {
        var entry = entry
        let permanent = report.outcome == .refused(message)
        let unconfirmed = report.outcome == .unconfirmed(message)
        let exhausted: AttentionReason = unconfirmed ? .hookUnconfirmed : .attemptsExhausted
        entry.outcome = permanent ? "refused" : unconfirmed ? "unconfirmed" : report.timedOut ? "timed_out" : "failed"
        entry.detail = message + (report.output.isEmpty ? "" : "\n" + report.output)
        let next = Reconciler.nextAttempt(order, now: now, after: policy.delay(afterAttempt: order.attempts + 1))
        let state = try ledger.recordFailure(orderId: order.orderId, owner: owner, fence: order.fencingToken,
                                             from: .delivering, error: message, countsAttempt: true,
                                             permanent: permanent, nextAttemptAt: next, maxAttempts: policy.maxAttempts,
                                             exhaustedReason: exhausted, environment: nil, history: entry)
        let output = report.output.isEmpty ? nil : DeliveryReport.tail(report.output)
        log.warning("order.delivery_failed", ["order": order.orderId, "attempt": order.attempts + 1,
                                              "idempotency_key": key, "hook_exit": report.exitCode, "error": message,
                                              "hook_output": output])
        if state == .needsAttention {
            log.error("order.needs_attention", [
                "order": order.orderId, "reason": permanent ? AttentionReason.hookRefused.rawValue : exhausted.rawValue,
                "hook_exit": report.exitCode, "hook_output": output,
            ])
        }
        if state == nil { leaseLost(order, "delivery_failed") }
        pass.count(state)
    }
}
