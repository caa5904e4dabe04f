import Foundation

/// One reconcile pass: rescue -> claim -> verify -> record -> deliver -> finish, with at most
/// `schedule.concurrency` orders in flight. `settle reconcile` and the daemon both run this.
public final class Reconciler: Sendable {
    public let configuration: Configuration
    public let ledger: Ledger
    public let verifier: any OrderVerifier
    public let deliverer: any Deliverer
    public let policy: RetryPolicy
    public let owner: LeaseOwner
    public let log: Log
    /// Counters for the metrics file, when the daemon keeps one.
    public let metrics: Metrics?

    public init(configuration: Configuration, ledger: Ledger, verifier: any OrderVerifier, deliverer: any Deliverer,
                policy: RetryPolicy, owner: LeaseOwner = .current, log: Log, metrics: Metrics? = nil) {
        self.configuration = configuration
        self.ledger = ledger
        self.verifier = verifier
        self.deliverer = deliverer
        self.policy = policy
        self.owner = owner
        self.log = log
        self.metrics = metrics
    }

    var verifyLeaseSeconds: Int64 {
        // Two hops (production then sandbox), each bounded by the HTTP timeouts, plus margin.
        Int64(2 * (configuration.http.timeoutSeconds + configuration.http.connectTimeoutSeconds) + 60)
    }

    var deliveryLeaseSeconds: Int64 { Int64(configuration.delivery.timeoutSeconds + 60) }

    /// Runs one pass over every due order, or over exactly `orderIds` (due or not: an operator
    /// naming orders is not held back by the Apple breaker). `shouldStop` is polled before
    /// each claim: once it says true, nothing more is claimed and in-flight work finishes.
    /// `progress` is called after each order, from the thread that worked on it.
    public func runPass(orderIds: [String] = [], shouldStop: @escaping @Sendable () -> Bool = { false },
                        progress: @escaping @Sendable () -> Void = {}) throws(LedgerError) -> PassReport {
        let rescued = try ledger.rescue(owner: owner, deliveryLeaseSeconds: deliveryLeaseSeconds)
        for id in rescued.requeued { log.warning("order.rescued", ["order": id, "to": "pending"]) }
        for order in rescued.redeliver { log.warning("order.rescued", ["order": order.orderId, "to": "redeliver"]) }
        let breaker = try ledger.appleBreaker()
        let pass = Pass(redeliver: rescued.redeliver, named: orderIds.isEmpty ? nil : orderIds, breaker: breaker,
                        policy: policy, time: ledger.time, shouldStop: shouldStop, progress: progress)
        var permission = breaker.permission(now: ledger.time.unixSeconds)
        if !orderIds.isEmpty { permission = .claim }
        switch permission {
        case let .wait(until):
            pass.holdForBreaker(until: until)
            log.info("apple.breaker_open", ["retry_at": Timestamp.rfc3339(unixSeconds: until), "last_error": breaker.lastError])
            // Deliveries of rescued orders need no Apple, so they still happen.
            work(pass)
        case .probe:
            log.info("apple.breaker_probe", ["last_error": breaker.lastError])
            pass.limitClaims(to: 1)
            work(pass)
            pass.limitClaims(to: nil)
            if pass.breaker.state == .closed {
                log.info("apple.breaker_closed")
                runWorkers(count: configuration.schedule.concurrency) { self.work(pass) }
            }
        case .claim:
            runWorkers(count: configuration.schedule.concurrency) { self.work(pass) }
        }
        let report = try pass.finish()
        if pass.breaker != breaker {
            try ledger.saveAppleBreaker(pass.breaker)
            if pass.breaker.state == .open && breaker.state == .closed {
                log.error("apple.breaker_opened", ["retry_at": pass.breaker.retryAt.map { Timestamp.rfc3339(unixSeconds: $0) },
                                                   "last_error": pass.breaker.lastError])
            }
        }
        metrics?.observePass(breakerOpen: pass.breaker.state == .open, at: ledger.time.unixSeconds)
        return report
    }

    private func runWorkers(count: Int, _ body: @escaping @Sendable () -> Void) {
        guard count > 1 else { return body() }
        let group = DispatchGroup()
        for _ in 0..<count {
            group.enter()
            let thread = Thread {
                body()
                group.leave()
            }
            thread.start()
        }
        group.wait()
    }

    private func work(_ pass: Pass) {
        do {
            while let next = try nextOrder(pass) {
                if next.state == .delivering {
                    try deliver(next, pass: pass)
                } else {
                    try verify(next, pass: pass)
                }
            }
        } catch {
            pass.fail(error)
        }
    }

    private func nextOrder(_ pass: Pass) throws(LedgerError) -> Order? {
        while true {
            switch pass.take() {
            case .stop: return nil
            case let .redeliver(order): return order
            case let .named(id):
                guard let (order, claimed) = try ledger.claim(orderId: id, owner: owner, leaseSeconds: verifyLeaseSeconds) else {
                    pass.skip(id, why: "no such order", exists: false)
                    continue
                }
                guard claimed else {
                    pass.skip(id, why: "it is \(order.state.rawValue)", exists: true)
                    continue
                }
                return try keepUnlessStopped(order, pass)
            case .due:
                guard let order = try ledger.claimNextDue(owner: owner, leaseSeconds: verifyLeaseSeconds) else {
                    pass.noMoreDue()
                    return nil
                }
                return try keepUnlessStopped(order, pass)
            }
        }
    }

    /// The breaker may have opened while we were claiming: put the claim back untouched.
    private func keepUnlessStopped(_ order: Order, _ pass: Pass) throws(LedgerError) -> Order? {
        guard pass.isStopped else { return order }
        try ledger.release(orderId: order.orderId, owner: owner)
        return nil
    }

    private func verify(_ order: Order, pass: Pass) throws {
        let verification: Verification
        do {
            verification = try verifier.verify(order) { txn in try self.ledger.grantHolder(transactionId: txn) }
        } catch let error as LedgerError {
            try? ledger.release(orderId: order.orderId, owner: owner)
            throw error
        }
        let now = ledger.time.unixSeconds
        var entry = HistoryEntry(at: now, kind: .verification, outcome: "", appleStatus: verification.appleStatus,
                                 environment: verification.environment, durationMs: verification.durationMs)
        pass.recordApple(verification)
        defer { pass.progress() }
        switch verification.outcome {
        case let .verified(purchase):
            entry.outcome = "verified"
            entry.detail = "transaction \(purchase.transactionId)"
            switch try ledger.recordVerified(orderId: order.orderId, owner: owner, purchase: purchase,
                                             deliveryLeaseSeconds: deliveryLeaseSeconds, history: entry) {
            case let .delivering(verified):
                log.info("order.verified", ["order": order.orderId, "transaction": purchase.transactionId,
                                            "environment": purchase.environment, "apple_status": verification.appleStatus,
                                            "duration_ms": verification.durationMs])
                try deliver(verified, pass: pass)
            case let .alreadyGranted(other):
                log.warning("order.rejected", ["order": order.orderId, "reason": "already_granted", "holder": other])
                pass.count(.rejected)
            case let .grantConflict(message):
                log.error("order.needs_attention", ["order": order.orderId, "error": message])
                pass.count(.needsAttention)
            case .leaseLost:
                log.warning("order.lease_lost", ["order": order.orderId])
            }
        case let .rejected(reason, detail):
            entry.outcome = "rejected"
            entry.detail = "\(reason.rawValue): \(detail)"
            if try ledger.recordRejected(orderId: order.orderId, owner: owner, reason: reason.rawValue, detail: detail,
                                         environment: verification.environment, history: entry) {
                log.warning("order.rejected", ["order": order.orderId, "reason": reason.rawValue, "detail": detail,
                                               "apple_status": verification.appleStatus])
                pass.count(.rejected)
            }
        case let .retry(message):
            entry.outcome = "retry"
            entry.detail = message
            let next = now + Int64(policy.delay(afterAttempt: order.attempts + 1))
            let state = try ledger.recordFailure(orderId: order.orderId, owner: owner, from: .verifying, error: message,
                                                 countsAttempt: true, nextAttemptAt: next, maxAttempts: policy.maxAttempts,
                                                 environment: verification.environment, history: entry)
            log.warning("order.verify_failed", ["order": order.orderId, "attempt": order.attempts + 1, "error": message,
                                                "apple_status": verification.appleStatus])
            pass.count(state)
        case let .appleUnavailable(message, retryAfter):
            entry.outcome = "apple_unavailable"
            entry.detail = message
            let next = now + Int64(policy.appleDelay(retryAfter: retryAfter))
            let state = try ledger.recordFailure(orderId: order.orderId, owner: owner, from: .verifying, error: message,
                                                 countsAttempt: false, nextAttemptAt: next, maxAttempts: policy.maxAttempts,
                                                 environment: verification.environment, history: entry)
            log.warning("apple.unavailable", ["order": order.orderId, "error": message, "apple_status": verification.appleStatus])
            pass.count(state)
        case let .configurationFault(message):
            try ledger.release(orderId: order.orderId, owner: owner)
            log.error("apple.configuration_fault", ["order": order.orderId, "error": message])
            pass.stop(configurationFault: message)
        }
    }

    private func deliver(_ order: Order, pass: Pass) throws {
        guard let purchase = order.verified else {
            throw LedgerError.invalid("order \(order.orderId) is delivering without verified facts")
        }
        let report = deliverer.deliver(order: order, purchase: purchase)
        metrics?.observeDelivery(report.outcome)
        defer { pass.progress() }
        let now = ledger.time.unixSeconds
        var entry = HistoryEntry(at: now, kind: .delivery, outcome: "", hookExit: report.exitCode,
                                 environment: purchase.environment, durationMs: report.durationMs,
                                 detail: report.output.isEmpty ? nil : report.output)
        let key = HookPayload.idempotencyKey(purchase)
        switch report.outcome {
        case .delivered:
            entry.outcome = "delivered"
            if try ledger.markFinished(orderId: order.orderId, owner: owner, history: entry) {
                log.info("order.finished", ["order": order.orderId, "idempotency_key": key, "hook_exit": report.exitCode,
                                            "duration_ms": report.durationMs])
                pass.count(.finished)
            }
        case let .retry(message), let .refused(message):
            let permanent = report.outcome == .refused(message)
            entry.outcome = permanent ? "refused" : "failed"
            entry.detail = message + (report.output.isEmpty ? "" : "\n" + report.output)
            let next = now + Int64(policy.delay(afterAttempt: order.attempts + 1))
            let state = try ledger.recordFailure(orderId: order.orderId, owner: owner, from: .delivering, error: message,
                                                 countsAttempt: true, permanent: permanent, nextAttemptAt: next,
                                                 maxAttempts: policy.maxAttempts, history: entry)
            log.warning("order.delivery_failed", ["order": order.orderId, "attempt": order.attempts + 1,
                                                  "idempotency_key": key, "hook_exit": report.exitCode, "error": message])
            pass.count(state)
        case let .cannotStart(message):
            entry.outcome = "cannot_start"
            entry.detail = message
            try ledger.recordFailure(orderId: order.orderId, owner: owner, from: .delivering, error: message, countsAttempt: false,
                                     nextAttemptAt: now, maxAttempts: policy.maxAttempts, history: entry)
            log.error("delivery.configuration_fault", ["order": order.orderId, "error": message])
            pass.stop(configurationFault: message)
        }
    }
}
