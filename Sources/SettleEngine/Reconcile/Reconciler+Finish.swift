import SettleBase
import SettleModel
import SettleLedger
import SettleDelivery

/// Finishing with the store: an order delivered is told to its store (Google Play: acknowledge
/// or consume) before it is finished; a store that cannot be told now is told later, never by
/// delivering again.
extension Reconciler {
    /// An order the hook delivered before (a crash, a failed acknowledgement) is never delivered
    /// again: only its store is still to be told, once it is due, with the claim taken again.
    func finishDelivered(_ order: Order, purchase: VerifiedPurchase, pass: Pass) throws {
        guard stores[order.store]?.finisher != nil else {
            // Left under its claim, rescued at the next pass, finished once the store is configured again.
            log.error("order.store_finish_waiting", [
                "order": order.orderId, "store": order.store.rawValue,
                "why": "delivered, and no \(order.store.rawValue) section is configured to tell the store",
            ])
            return
        }
        // Refused before (a backoff): the store is asked again only once it is due.
        if order.nextAttemptAt > ledger.time.unixSeconds {
            log.debug("order.store_finish_waiting", ["order": order.orderId, "store": order.store.rawValue,
                                                     "retry_at": Timestamp.rfc3339(unixSeconds: order.nextAttemptAt)])
            return
        }
        // Taken again whatever its age: telling the store runs outside the lease keeper,
        // so it starts with a whole lease.
        guard try ledger.renewLease(orderId: order.orderId, owner: owner, fence: order.fencingToken, state: .delivering,
                                    leaseSeconds: deliveryLeaseSeconds) else {
            leaseLost(order, "store_finish")
            return
        }
        do {
            try finishWithStore(order, purchase: purchase, pass: pass)
        } catch let error as LedgerError {
            guard let violation = error.constraintViolation else { throw error }
            try setAside(order, violation: violation, pass: pass)
        }
    }

    /// Tells the order's store the goods were granted (Google Play: acknowledge or consume), then
    /// `finished`. When the store cannot be told now, the order stays delivered and leased
    /// (rescued at the next pass, by this or another process) and is only ever finished, never
    /// delivered again; a configuration fault also stops the pass.
    func finishWithStore(_ order: Order, purchase: VerifiedPurchase, pass: Pass) throws {
        guard let finisher = stores[order.store]?.finisher else {
            // Left delivered under its claim: rescued at the next pass, finished once the store is configured again.
            log.error("order.store_finish_waiting", [
                "order": order.orderId, "store": order.store.rawValue,
                "why": "delivered, and no \(order.store.rawValue) section is configured to tell \(order.store.owner)",
            ])
            pass.count(.delivering)
            return
        }
        let key = HookPayload.idempotencyKey(purchase)
        let now = ledger.time.unixSeconds
        let priority = Reconciler.pacerPriority(of: order, now: now)
        switch PacerPriority.$work.withValue(priority, operation: { finisher.finish(order) }) {
        case let .finished(how):
            let entry = HistoryEntry(
                at: now, kind: .delivery, outcome: how, environment: purchase.environment,
                detail: "\(order.store.rawValue): the store was told the purchase is delivered (\(how))")
            if try ledger.markFinished(orderId: order.orderId, owner: owner, fence: order.fencingToken,
                                       history: entry) {
                log.info("order.finished", ["order": order.orderId, "store": order.store.rawValue,
                                            "idempotency_key": key, "store_finish": how])
                metrics?.observeStoreFinish(store: order.store.rawValue, outcome: how)
                pass.count(.finished)
            } else {
                leaseLost(order, "finished")
            }
        case let .failed(message, configuration):
            try storeFinishFailed(order, purchase: purchase, message: message, configuration: configuration, key: key,
                                  now: now, pass: pass)
        case let .paced(message):
            let entry = HistoryEntry(at: now, kind: .delivery, outcome: "paced", environment: purchase.environment,
                                     detail: message)
            _ = try ledger.recordDelivered(orderId: order.orderId, owner: owner, fence: order.fencingToken,
                                           error: "delivered; telling \(order.store.owner) waits: \(message)",
                                           history: entry)
            metrics?.observeStoreFinish(store: order.store.rawValue, outcome: "paced")
            pass.recordStore(order.store, Verification(outcome: .paced(message)))
            log.info("order.store_finish_paced", ["order": order.orderId, "store": order.store.rawValue,
                                                  "idempotency_key": key, "why": message])
            pass.count(.delivering)
        case let .refused(message):
            try storeFinishRefused(order, purchase: purchase, message: message, key: key, now: now, pass: pass)
        }
    }

    /// Telling the store failed (it did not answer, or settle's configuration for it is wrong):
    /// the order backs off and uses an attempt, and stays delivered.
    private func storeFinishFailed(_ order: Order, purchase: VerifiedPurchase, message: String, configuration: Bool,
                                   key: String, now: Int64, pass: Pass) throws {
        // Backs off per order and counts an attempt like a refusal, whatever the status and the
        // product kind (a 5xx, a 403, a subscription's 400/409 used to be asked every pass);
        // a person decides at max_attempts, with the store's refund clock shown.
        let next = Reconciler.nextAttempt(order, now: now, after: policy.delay(afterAttempt: order.attempts + 1))
        let entry = HistoryEntry(at: now, kind: .delivery, outcome: "store_finish_failed",
                                 environment: purchase.environment, detail: message)
        let state = try ledger.recordStoreFinishRefused(
            orderId: order.orderId, owner: owner, fence: order.fencingToken,
            error: "delivered; telling \(order.store.owner) failed: \(message)",
            nextAttemptAt: next, maxAttempts: policy.maxAttempts, history: entry)
        metrics?.observeStoreFinish(store: order.store.rawValue, outcome: configuration ? "configuration" : "failed")
        if !configuration {
            // The store as a whole did not answer: its breaker hears of it, as of a verification.
            pass.recordStore(order.store, Verification(outcome: .storeUnavailable(message, retryAfter: nil)))
        }
        if configuration {
            log.error("\(order.store.logName).configuration_fault", [
                "order": order.orderId, "store": order.store.rawValue, "error": message,
            ])
            pass.stop(order.store, configurationFault: message)
        }
        logStoreFinish(state, "store_finish_failed", order, message: message, key: key, next: next,
                       why: "delivered; told the store after the backoff, never delivered again")
        pass.count(state)
    }

    /// How an order the store was not told of ended: its lease lost, a person's, or a backoff.
    private func logStoreFinish(_ state: OrderState?, _ outcome: String, _ order: Order, message: String, key: String, next: Int64,
                                why: String? = nil) {
        switch state {
        case nil:
            leaseLost(order, outcome)
        case .needsAttention:
            log.error("order.needs_attention", ["order": order.orderId, "store": order.store.rawValue,
                                                "reason": AttentionReason.storeFinishRefused.rawValue,
                                                "idempotency_key": key, "error": message])
        default:
            log.warning("order.\(outcome)", [
                "order": order.orderId, "store": order.store.rawValue, "idempotency_key": key,
                "attempt": order.attempts + 1, "error": message, "why": why,
                "retry_at": Timestamp.rfc3339(unixSeconds: next),
            ])
        }
    }

    /// The store refused to hear the purchase is delivered: the order backs off and uses an
    /// attempt, and stays delivered; a person decides once the attempts run out.
    private func storeFinishRefused(_ order: Order, purchase: VerifiedPurchase, message: String, key: String,
                                    now: Int64, pass: Pass) throws {
        let next = Reconciler.nextAttempt(order, now: now, after: policy.delay(afterAttempt: order.attempts + 1))
        let entry = HistoryEntry(at: now, kind: .delivery, outcome: "store_finish_refused",
                                 environment: purchase.environment,
                                 detail: "\(order.store.owner) refused to hear the purchase is delivered: \(message)")
        let state = try ledger.recordStoreFinishRefused(
            orderId: order.orderId, owner: owner, fence: order.fencingToken,
            error: "delivered; \(order.store.owner) refused: \(message)",
            nextAttemptAt: next, maxAttempts: policy.maxAttempts, history: entry)
        metrics?.observeStoreFinish(store: order.store.rawValue, outcome: "refused")
        pass.recordStore(order.store, Verification(outcome: .retry(message), storeAnswered: true))
        logStoreFinish(state, "store_finish_refused", order, message: message, key: key, next: next)
        pass.count(state)
    }
}
