import Foundation
import Synchronization
import SettleBase
import SettleModel
import SettleConfig
import SettleLedger
import SettleDelivery

/// One reconcile pass: rescue -> claim -> verify -> record -> deliver -> finish, with at most
/// `schedule.concurrency` orders in flight. `settle reconcile` and the daemon both run this.
package final class Reconciler: Sendable {
    package let configuration: Configuration
    package let ledger: any SettleLedger
    package let verifier: any OrderVerifier
    package let deliverer: any Deliverer
    package let policy: RetryPolicy
    package let owner: LeaseOwner
    package let log: Log
    /// Support's transfers and redeliveries, carried out at each pass.
    package var supportActions: SupportActionRunner {
        SupportActionRunner(ledger: ledger, grants: deliverer, revokes: revokeHook, products: configuration.products,
                            policy: policy, log: log)
    }
    /// Counters for the metrics file, when the daemon keeps one.
    package let metrics: Metrics?
    /// What takes goods back (nil when refunds can only be recorded: a command delivery without
    /// `revoke_command`): a pass runs every revoke any store enqueued.
    package let revokeHook: RevokeHook?
    package var revoker: Revoker { Revoker(ledger: ledger, hook: revokeHook, policy: policy, log: log) }
    /// Renews the leases of the orders being verified or delivered.
    private let leases: LeaseKeeper
    /// Every configured store, by store: what verifies its orders, what tells it of a delivery,
    /// its work before claims and after a pass, its listener routes. The engine never asks
    /// which store an adapter is.
    package let stores: [Store: any StoreAdapter]
    /// The process's pacer (nil: unpaced), whose share each pass refreshes and whose buckets
    /// the daemon shows in the ledger.
    package let pacer: Pacer?
    /// The buckets as last saved, and when: an idle pass (nothing sent, nothing changed) writes
    /// nothing, but a save is never older than half the live window status reads them within.
    private let savedBuckets = Mutex<(buckets: [PacerSnapshot], at: Int64)>(([], 0))

    /// `verifier` defaults to the stores' own (`StoreRouter`); a test may put another in.
    package init(configuration: Configuration, ledger: any SettleLedger, verifier: (any OrderVerifier)? = nil, deliverer: any Deliverer,
                policy: RetryPolicy, owner: LeaseOwner = .current, log: Log, metrics: Metrics? = nil, revokeHook: RevokeHook? = nil,
                stores: [Store: any StoreAdapter] = [:], pacer: Pacer? = nil) {
        self.pacer = pacer
        self.revokeHook = revokeHook
        self.stores = stores
        self.verifier = verifier ?? StoreRouter(adapters: stores)
        self.configuration = configuration
        self.ledger = ledger
        self.deliverer = deliverer
        self.policy = policy
        self.owner = owner
        self.log = log
        self.metrics = metrics
        leases = LeaseKeeper(
            renew: { order, state, leaseSeconds in
                try ledger.renewLease(orderId: order.orderId, owner: owner, fence: order.fencingToken, state: state,
                                      leaseSeconds: leaseSeconds)
            },
            trouble: { order, error in
                if let error {
                    log.warning("order.lease_renewal_failed", ["order": order.orderId, "error": "\(error)"])
                } else {
                    Reconciler.logLeaseLost(order, "lease renewal", log: log)
                }
            })
    }

    /// When an order is tried again after `delay` seconds: never later than an hour before its
    /// store refunds it unacknowledged (Google's three days), whatever the backoff, a store's
    /// Retry-After or a pending payment's re-check would say.
    package static func nextAttempt(_ order: Order, now: Int64, after delay: Double) -> Int64 {
        let next = now.saturatingAdding(Int64(saturating: delay.rounded()))
        guard let deadline = order.refundDeadline else { return next }
        let latest = deadline.saturatingSubtracting(Self.refundDeadlineMargin)
        // Inside the margin (or past the deadline) the store is still asked, but once a minute at
        // most: "at once" asked a failing store every pass (a subscription's 409: 21 calls in 15 s).
        return latest > now ? min(next, latest) : min(next, now.saturatingAdding(Self.lastRetryInterval))
    }

    /// The pacer's priority for every call made for `order`: an order whose store refunds it
    /// within the deadline-warning window (`RefundDeadline.urgentSeconds`) goes before all but
    /// support's lookups, for its reads as well as its acknowledgement; any other order is due work.
    package static func pacerPriority(of order: Order, now: Int64) -> PacerPriority {
        guard let deadline = order.refundDeadline, deadline.saturatingSubtracting(now) < RefundDeadline.urgentSeconds else {
            return .dueOrders
        }
        return .refundDeadline
    }

    /// How long before a store's refund deadline the last retry is scheduled at the latest.
    package static let refundDeadlineMargin: Int64 = 3600
    /// How often an order inside its refund deadline's margin is retried at most (seconds).
    package static let lastRetryInterval: Int64 = 60
    /// How often a pass runs due revokes and refund-request answers while it drains (seconds).
    package static let obligationsInterval: Double = 60

    /// The configured stores' adapters in a fixed order (by store), for work done store by store.
    private var adapters: [any StoreAdapter] { Store.allCases.compactMap { stores[$0] } }

    /// Every configured store's paths on the notifications listener.
    package var listenerRoutes: [String: ListenerRoute] {
        adapters.reduce(into: [:]) { routes, adapter in routes.merge(adapter.listenerRoutes) { first, _ in first } }
    }

    /// Every configured store's timers, which the daemon runs without knowing what they are.
    package var storeTasks: [StoreTask] { adapters.flatMap(\.tasks) }

    package var verifyLeaseSeconds: Int64 {
        // Two hops (production then sandbox), each bounded by the HTTP timeouts, plus margin.
        Int64(2 * (configuration.http.timeoutSeconds + configuration.http.connectTimeoutSeconds) + 60)
    }

    package var deliveryLeaseSeconds: Int64 { Int64(configuration.delivery.timeoutSeconds + 60) }

    /// How often, as a fraction of its length, the lease of a running hook or verification is renewed.
    /// Tests shorten it; it never needs changing in production.
    package var leaseRenewalFraction: Double { leaseRenewal.withLock { $0 } }
    private let leaseRenewal = Mutex(1.0 / 3)
    package func renewLeases(everyFractionOf fraction: Double) { leaseRenewal.withLock { $0 = fraction } }

    /// Runs one pass over every due order, or over exactly `orderIds` (due or not: an operator
    /// naming orders is not held back by any store's breaker). `shouldStop` is polled before
    /// each claim: once it says true, nothing more is claimed and in-flight work finishes.
    /// `progress` is called after each order, from the thread that worked on it.
    package func runPass(orderIds: [String] = [], shouldStop: @escaping @Sendable () -> Bool = { false },
                        progress: @escaping @Sendable () -> Void = {}) throws(LedgerError) -> PassReport {
        if let days = configuration.historyRetentionDays {
            let pruned = try ledger.pruneHistory(olderThanDays: days)
            if pruned > 0 { log.info("history.pruned", ["rows": pruned, "older_than_days": days]) }
        }
        for id in try ledger.quarantineMalformedRows() {
            log.error("order.needs_attention", ["order": id, "reason": AttentionReason.rowInvalid.rawValue])
        }
        for id in try ledger.quarantineReservedOrderIds() {
            log.error("order.needs_attention", ["order": id, "reason": AttentionReason.rowInvalid.rawValue, "why": "reserved order id"])
        }
        let breakers = try ledger.breakersForPass()
        // Hosts on one ledger each take their share of every store's rate, refreshed each pass.
        let hosts = try ledger.pacerHosts(besides: owner)
        pacer?.setHosts(hosts)
        let now = ledger.time.unixSeconds
        /// Whether a store's side work (its stored pushes, its polls) may call it this pass: not
        /// while its breaker holds its orders back. Once the cool-down is over it may be the
        /// store's probe: with no order of that store due, nothing else would ever close it.
        func sideWorkAllowed(_ store: Store) -> Bool {
            guard orderIds.isEmpty, !shouldStop() else { return false }
            if case .wait = (breakers[store] ?? StoreBreaker()).permission(now: now) { return false }
            return true
        }
        // What a store sent on its own becomes orders before the claims, so this pass delivers
        // them; each store's share of the pass is bounded, so a slow one holds up no other.
        func lent() -> SideWork { SideWork(seconds: sideWorkSeconds, time: ledger.time, progress: progress) }
        var sideWork: [Store: SideWorkOutcome] = [:]
        for adapter in adapters where sideWorkAllowed(adapter.store) {
            sideWork[adapter.store] = try adapter.beforeClaims(lent())
        }
        let rescued = try ledger.rescue(owner: owner)
        for id in rescued.requeued { log.warning("order.rescued", ["order": id, "to": "pending"]) }
        for id in rescued.redeliver { log.warning("order.rescued", ["order": id, "to": "redeliver"]) }
        if rescued.sideJobsTakenBack > 0 { log.warning("side_work.rescued", ["jobs": "\(rescued.sideJobsTakenBack)"]) }
        let pass = Pass(redeliver: rescued.redeliver, named: orderIds.isEmpty ? nil : orderIds, breakers: breakers,
                        policy: policy, time: ledger.time, deliveryCapacity: deliveryCapacity,
                        shouldStop: shouldStop, progress: progress)
        for (store, outcome) in sideWork { pass.recordSideWork(store, outcome) }
        for (store, breaker) in breakers.sorted(by: { $0.key.rawValue < $1.key.rawValue }) where orderIds.isEmpty {
            switch breaker.permission(now: now) {
            case .claim: break
            case let .wait(until):
                // Its rescued deliveries need no store, so they still happen; the other store's orders go on.
                log.info("\(store.logName).breaker_open", ["store": store.rawValue, "retry_at": Timestamp.rfc3339(unixSeconds: until),
                                                          "last_error": breaker.lastError])
            case .probe:
                log.info("\(store.logName).breaker_probe", ["store": store.rawValue, "last_error": breaker.lastError])
            }
        }
        // Revokes and answers to refund requests go first and go on alongside: a backlog
        // drained at a store's rate can outlast Apple's 12-hour deadline for an answer.
        let obligations = orderIds.isEmpty && !shouldStop() ? PassObligations(revoker: revoker, stores: adapters, log: log) : nil
        try obligations?.run()
        // A transfer or redelivery support asked for does not wait for the backlog either.
        if !shouldStop() { try supportActions.run(orderIds: orderIds) }
        // A host that starts while this pass drains takes its share from its first pass; this
        // one sees it here, within a minute, rather than at its own pass's end.
        obligations?.start(every: Self.obligationsInterval, shouldStop: shouldStop) { [self] () throws(LedgerError) in
            pacer?.setHosts(try ledger.pacerHosts(besides: owner))
        }
        defer { obligations?.stop() }
        let delivering = startDeliveryWorkers(pass)
        runWorkers(count: configuration.schedule.concurrency) { self.work(pass) }
        // A store whose probe closed its breaker once the other workers had run out of work:
        // its due orders are claimed now, not a pass later.
        let reopened = pass.takeReopened()
        for store in reopened.sorted(by: { $0.rawValue < $1.rawValue }) {
            log.info("\(store.logName).breaker_closed", ["store": store.rawValue])
        }
        if !reopened.isEmpty { runWorkers(count: configuration.schedule.concurrency) { self.work(pass) } }
        // A stop (the breaker, a fault, shutdown) may leave claims of a batch unworked: put back
        // as they were. One that cannot be is rescued, as a leftover of this process, next pass.
        for order in pass.unworkedClaims() {
            do {
                try ledger.release(orderId: order.orderId, owner: owner, fence: order.fencingToken)
            } catch {
                log.warning("order.release_failed", ["order": order.orderId, "error": "\(error)", "why": "rescued at the next pass"])
            }
        }
        pass.deliveries.producersFinished()
        delivering.wait()
        var report = try pass.finish()
        // A pass over named orders is about those orders only.
        for adapter in adapters where sideWorkAllowed(adapter.store) && !pass.isStopped(adapter.store) {
            pass.recordSideWork(adapter.store, try adapter.afterPass(lent()))
        }
        if let obligations {
            obligations.stop()
            // What the pass's deliveries made answerable (a purchase now delivered) is answered now.
            if !shouldStop() { try obligations.run(final: true) }
            report.revoked = obligations.done.revoked
            report.refundRequestsAnswered = obligations.done.answered
        }
        // Support's transfers and redeliveries (before the claims too): after the revokes, so a
        // refund's own revoke has run before a transfer is asked for, and of the named orders
        // only in a pass over them.
        if !shouldStop() { try supportActions.run(orderIds: orderIds) }
        for (store, opened) in pass.breakers where opened != breakers[store] {
            var breaker = opened
            // A store that refunds unacknowledged purchases is probed again before the first of
            // its orders would be refunded, however long its cool-down (or Retry-After) says.
            if breaker.state == .open, store.refundWindowSeconds != nil, let retryAt = breaker.retryAt,
               let first = try ledger.refundDeadlines(limit: 20).first(where: { $0.store == store })?.refundAt {
                breaker.retryAt = min(retryAt, max(ledger.time.unixSeconds, first.saturatingSubtracting(Self.refundDeadlineMargin)))
            }
            try ledger.saveBreaker(breaker, of: store)
            if breaker.state == .open && breakers[store]?.state == .closed {
                log.error("\(store.logName).breaker_opened", ["store": store.rawValue,
                                                             "retry_at": breaker.retryAt.map { Timestamp.rfc3339(unixSeconds: $0) },
                                                             "last_error": breaker.lastError])
            }
        }
        metrics?.observePass(openBreakers: Set(pass.breakers.filter { $0.value.state == .open }.keys), at: ledger.time.unixSeconds)
        if let pacer {
            // Once a pass, for `settle status` and the metrics: what each bucket of this host did.
            let buckets = pacer.snapshots()
            metrics?.observePacer(buckets)
            let now = ledger.time.unixSeconds
            if savedBuckets.withLock({ $0.buckets != buckets || now - $0.at >= PostgresLedger.liveWindowSeconds / 2 }) {
                try ledger.savePacerBuckets(host: owner.host, hosts: hosts, buckets)
                savedBuckets.withLock { $0 = (buckets, now) }
            }
        }
        // Deadlines of the stores that refund what they were not told of (Google, after three days).
        if stores.keys.contains(where: { $0.refundWindowSeconds != nil }) { try warnOfRefundDeadlines() }
        return report
    }

    /// A store with a refund window (Google: three days) refunds a purchase it was not told of:
    /// each one with less than a day left is a warning (and `settle_play_ack_deadline_soon`).
    private func warnOfRefundDeadlines() throws(LedgerError) {
        let now = ledger.time.unixSeconds
        for deadline in try ledger.refundDeadlines(limit: 20) where deadline.isUrgent(now: now) {
            let store = deadline.store
            log.warning("\(store.logName).ack_deadline_soon", [
                "order": deadline.orderId, "state": deadline.state.rawValue, "delivered": deadline.delivered,
                "refund_at": Timestamp.rfc3339(unixSeconds: deadline.refundAt), "estimated": !deadline.exact,
                "why": "\(store.owner) refunds a purchase it was not told of within \(Timestamp.age(store.refundWindowSeconds ?? 0))",
            ])
        }
    }

    /// How many due orders one claim takes: one transaction (and commit) for several orders,
    /// few enough that the batch is worked on at once by the other verification workers
    /// (a quarter of `schedule.concurrency`, at most 16).
    package var claimBatchSize: Int { max(1, min(16, configuration.schedule.concurrency / 4)) }

    /// How many orders one hook call delivers (`delivery.batch_size`; 1 for a webhook).
    package var deliveryBatchSize: Int { max(1, deliverer.batchSize) }

    /// Delivery workers: as many hooks in flight as verifications (`schedule.concurrency`), or
    /// with batches, enough batches to cover that many orders.
    package var deliveryWorkerCount: Int {
        max(1, (configuration.schedule.concurrency + deliveryBatchSize - 1) / deliveryBatchSize)
    }

    /// How many verified orders may wait for a hook: one round of the delivery workers
    /// (`schedule.concurrency`, or with batches, that many batches' worth).
    package var deliveryCapacity: Int { deliveryWorkerCount * deliveryBatchSize }

    private func startDeliveryWorkers(_ pass: Pass) -> DispatchGroup {
        let group = DispatchGroup()
        for _ in 0..<deliveryWorkerCount {
            group.enter()
            Thread {
                self.deliveryWork(pass)
                group.leave()
            }.start()
        }
        return group
    }

    private func deliveryWork(_ pass: Pass) {
        while let batch = pass.deliveries.take(limit: deliveryBatchSize) {
            defer { pass.deliveries.finished() }
            if pass.isShuttingDown {
                // No new hook once asked to stop: each order stays `delivering` under its lease, and
                // the next start (or, after the lease, another host) delivers it with the same key.
                for order in batch { log.info("order.delivery_deferred", ["order": order.order.orderId, "why": "shutting down"]) }
                continue
            }
            do {
                try deliver(batch, pass: pass)
            } catch {
                pass.fail(error)
            }
        }
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
        // Each worker has a home store: a slow store holds its own workers, never another's orders.
        let home = pass.enlist(workers: configuration.schedule.concurrency)
        do {
            while true {
                // Before the claim: its lease runs until at least then plus its length.
                let claimedAt = ledger.time.unixSeconds
                guard let next = try nextOrder(pass, home: home) else { break }
                do {
                    if next.state == .delivering {
                        pass.deliveries.put(DeliveryQueue.Leased(next, leasedAt: claimedAt))
                    } else {
                        // Waits while the delivery queue is full: verification never runs ahead of the hooks.
                        try verify(next, pass: pass) { verified in pass.deliveries.put(verified) }
                    }
                } catch let error as LedgerError {
                    // A row a backend broke fails its own writes; it must not stop every other order.
                    guard let violation = error.constraintViolation else { throw error }
                    try setAside(next, violation: violation, pass: pass)
                }
            }
        } catch {
            pass.fail(error)
        }
    }

    /// A write about one order failed a constraint: that order goes to `needs_attention`
    /// (`row_invalid`) and the pass goes on. Should even that write fail on the row, the order
    /// is left as it is (rescue takes it back later) and the pass still goes on: one order's
    /// row never ends the pass; only a failure of the ledger itself does.
    private func setAside(_ order: Order, violation: String, pass: Pass) throws(LedgerError) {
        do {
            try ledger.quarantine(orderId: order.orderId, detail: "a ledger write about this order failed: \(violation)")
        } catch {
            guard let again = error.constraintViolation else { throw error }
            log.error("order.quarantine_failed", ["order": order.orderId, "error": violation, "quarantine_error": again])
            return
        }
        log.error("order.needs_attention", ["order": order.orderId, "reason": AttentionReason.rowInvalid.rawValue, "error": violation])
        pass.count(.needsAttention)
    }

    private func nextOrder(_ pass: Pass, home: Store?) throws(LedgerError) -> Order? {
        while true {
            switch pass.take(home: home) {
            case .stop: return nil
            case let .redeliver(id):
                // Leased only now, when work on it starts: a queue of rescued deliveries never expires while it waits.
                guard let order = try ledger.claimRedelivery(orderId: id, owner: owner, leaseSeconds: deliveryLeaseSeconds) else {
                    log.info("order.rescue_skipped", ["order": id, "why": "another process took it or it moved on"])
                    continue
                }
                return order
            case let .named(id):
                guard let (order, claimed) = try ledger.claim(orderId: id, owner: owner, leaseSeconds: verifyLeaseSeconds) else {
                    pass.skip(id, why: "no such order", exists: false)
                    continue
                }
                guard claimed else {
                    pass.skip(id, why: "it is \(order.state.rawValue)", exists: true)
                    continue
                }
                if let kept = try keepUnlessStopped(order, pass) { return kept }
            case let .claimed(order):
                if let kept = try keepUnlessStopped(order, pass) { return kept }
            case let .due(stores):
                // One transaction claims a batch; the next workers take the rest (`Pass.take`).
                let batch = try ledger.claimDue(owner: owner, leaseSeconds: verifyLeaseSeconds, limit: claimBatchSize,
                                                stores: stores)
                guard let order = batch.first else {
                    pass.noMoreDue(stores)
                    continue
                }
                pass.keepClaimed(Array(batch.dropFirst()))
                if let kept = try keepUnlessStopped(order, pass) { return kept }
            case let .probe(store):
                guard let order = try ledger.claimDue(owner: owner, leaseSeconds: verifyLeaseSeconds, limit: 1, stores: [store]).first else {
                    pass.noMoreDue([store])
                    continue
                }
                if let kept = try keepUnlessStopped(order, pass) { return kept }
            }
        }
    }

    /// The order's store (its breaker opened, its credentials failed, its rate limit was met) or
    /// the whole pass may have stopped while we were claiming: put the claim back untouched
    /// (nil; a paced store's orders keep their place, unattempted); the caller goes on with the
    /// next order, as another store's may still be worked on. A delivery is never held back.
    private func keepUnlessStopped(_ order: Order, _ pass: Pass) throws(LedgerError) -> Order? {
        let paced = order.state != .delivering && pass.isPaced(order.store)
        guard pass.isStopped(order.store) || paced else { return order }
        try ledger.release(orderId: order.orderId, owner: owner, fence: order.fencingToken)
        return nil
    }

    private func leaseLost(_ order: Order, _ transition: String) {
        Reconciler.logLeaseLost(order, transition, log: log)
    }

    private static func logLeaseLost(_ order: Order, _ transition: String, log: Log) {
        log.warning("order.lease_lost", ["order": order.orderId, "refused": transition,
                                         "why": "the claim expired and another process took the order over"])
    }

    /// Verifies `order` with its store while its lease is renewed, and records the answer; an order
    /// that is now `delivering` is handed off (to the delivery queue, or to the delivery worker
    /// that re-matched it).
    private func verify(_ order: Order, pass: Pass, handOff: (DeliveryQueue.Leased) throws -> Void) throws {
        let verification: Verification
        do {
            // A long history (up to the page cap) may take longer than the lease: renewed like a
            // running hook's, so no other host rescues a verification that is still working.
            let priority = Reconciler.pacerPriority(of: order, now: ledger.time.unixSeconds)
            verification = try withLeasesRenewed([order], state: .verifying, leaseSeconds: verifyLeaseSeconds) {
                try PacerPriority.$work.withValue(priority) { try Reconciler.verification(of: order, by: verifier) }
            }
        } catch let error as LedgerError {
            try? ledger.release(orderId: order.orderId, owner: owner, fence: order.fencingToken)
            throw error
        }
        let now = ledger.time.unixSeconds
        var entry = HistoryEntry(at: now, kind: .verification, outcome: "", appleStatus: verification.appleStatus,
                                 environment: verification.environment, durationMs: verification.durationMs)
        pass.recordStore(order.store, verification)
        defer { pass.progress() }
        // The order's signed AppTransaction verified: its Apple Account is the order's user's.
        if let app = verification.learned {
            try ledger.linkAppTransaction(app, userId: order.userId, source: "order", orderId: order.orderId)
        }
        switch verification.outcome {
        case let .verified(match):
            entry.outcome = "verified"
            switch try ledger.recordVerified(orderId: order.orderId, owner: owner, fence: order.fencingToken, match: match,
                                             deliveryLeaseSeconds: deliveryLeaseSeconds, history: entry) {
            case let .delivering(verified):
                log.info("order.verified", ["order": order.orderId, "transaction": verified.verified?.transactionId,
                                            "environment": verified.verified?.environment, "apple_status": verification.appleStatus,
                                            "duration_ms": verification.durationMs])
                // Its start is durable: the hook runs on a delivery worker, this one goes back to the store.
                try handOff(DeliveryQueue.Leased(verified, leasedAt: now))
            case let .alreadyGranted(detail):
                log.warning("order.rejected", ["order": order.orderId, "reason": "already_granted", "detail": detail])
                pass.count(.rejected)
            case let .alreadyDelivered(detail):
                log.info("order.finished", ["order": order.orderId, "outcome": "already_delivered", "detail": detail])
                pass.count(.finished)
            case let .deliveredOutside(delivered, detail):
                log.info("order.delivered", ["order": order.orderId, "store": order.store.rawValue, "outcome": "already_delivered",
                                             "detail": detail])
                // No hook: only the store is still to be told.
                if let purchase = delivered.verified { try finishWithStore(delivered, purchase: purchase, pass: pass) }
            case let .rejected(reason, detail):
                log.warning("order.rejected", ["order": order.orderId, "reason": reason.rawValue, "detail": detail])
                pass.count(.rejected)
            case let .grantConflict(message):
                log.error("order.needs_attention", ["order": order.orderId, "reason": AttentionReason.grantConflict.rawValue,
                                                    "error": message])
                pass.count(.needsAttention)
            case .leaseLost:
                leaseLost(order, "verified")
            }
        case let .rejected(reason, detail):
            entry.outcome = "rejected"
            entry.detail = "\(reason.rawValue): \(detail)"
            if try ledger.recordRejected(orderId: order.orderId, owner: owner, fence: order.fencingToken, reason: reason.rawValue, detail: detail,
                                         environment: verification.environment, history: entry) {
                log.warning("order.rejected", ["order": order.orderId, "reason": reason.rawValue, "detail": detail,
                                               "apple_status": verification.appleStatus])
                pass.count(.rejected)
            } else {
                leaseLost(order, "rejected")
            }
        case let .needsAttention(reason, detail):
            entry.outcome = "needs_attention"
            entry.detail = "\(reason.rawValue): \(detail)"
            if try ledger.recordNeedsAttention(orderId: order.orderId, owner: owner, fence: order.fencingToken, reason: reason, detail: detail,
                                               environment: verification.environment, history: entry) {
                log.error("order.needs_attention", ["order": order.orderId, "reason": reason.rawValue, "detail": detail])
                pass.count(.needsAttention)
            } else {
                leaseLost(order, "needs_attention")
            }
        case let .retry(message) where verification.keepsAttempt:
            // Nothing wrong with the order (a Play purchase pending payment, Google unavailable): no attempt used.
            entry.outcome = "wait"
            entry.detail = message
            let next = Reconciler.nextAttempt(order, now: now, after: policy.appleDelay(retryAfter: verification.retryAfterSeconds))
            let state = try ledger.recordFailure(orderId: order.orderId, owner: owner, fence: order.fencingToken, from: .verifying, error: message,
                                                 countsAttempt: false, permanent: false, nextAttemptAt: next, maxAttempts: policy.maxAttempts,
                                                 environment: verification.environment, history: entry)
            log.info("order.waiting", ["order": order.orderId, "store": order.store.rawValue, "why": message,
                                       "retry_at": Timestamp.rfc3339(unixSeconds: next)])
            if state == nil { leaseLost(order, "wait") }
            pass.count(state)
        case let .retry(message):
            entry.outcome = "retry"
            entry.detail = message
            let next = Reconciler.nextAttempt(order, now: now, after: policy.delay(afterAttempt: order.attempts + 1))
            let state = try ledger.recordFailure(orderId: order.orderId, owner: owner, fence: order.fencingToken, from: .verifying, error: message,
                                                 countsAttempt: true, permanent: false, nextAttemptAt: next, maxAttempts: policy.maxAttempts,
                                                 environment: verification.environment, history: entry)
            log.warning("order.verify_failed", ["order": order.orderId, "attempt": order.attempts + 1, "error": message,
                                                "apple_status": verification.appleStatus])
            if state == nil { leaseLost(order, "retry") }
            pass.count(state)
        case let .storeUnavailable(message, retryAfter):
            entry.outcome = "\(order.store.logName)_unavailable"
            entry.detail = message
            let next = Reconciler.nextAttempt(order, now: now, after: policy.appleDelay(retryAfter: retryAfter))
            let state = try ledger.recordFailure(orderId: order.orderId, owner: owner, fence: order.fencingToken, from: .verifying, error: message,
                                                 countsAttempt: false, permanent: false, nextAttemptAt: next, maxAttempts: policy.maxAttempts,
                                                 environment: verification.environment, history: entry)
            log.warning("\(order.store.logName).unavailable", ["order": order.orderId, "store": order.store.rawValue, "error": message,
                                                              "apple_status": verification.appleStatus])
            if state == nil { leaseLost(order, "retry") }
            pass.count(state)
        case let .paced(message):
            // settle's own pace, not the order's fault nor the store's: the order stays due (no
            // attempt, no backoff), and this pass claims no more of its store's orders.
            entry.outcome = "paced"
            entry.detail = message
            let state = try ledger.recordFailure(orderId: order.orderId, owner: owner, fence: order.fencingToken, from: .verifying, error: message,
                                                 countsAttempt: false, permanent: false, nextAttemptAt: min(order.nextAttemptAt, now),
                                                 maxAttempts: policy.maxAttempts, environment: verification.environment, history: entry)
            log.info("order.paced", ["order": order.orderId, "store": order.store.rawValue, "why": message])
            if state == nil { leaseLost(order, "paced") }
            pass.count(state)
        case let .configurationFault(message):
            // That store stops (its breaker opened in `recordStore`); the other's orders go on.
            try ledger.release(orderId: order.orderId, owner: owner, fence: order.fencingToken)
            log.error("\(order.store.logName).configuration_fault", ["order": order.orderId, "store": order.store.rawValue, "error": message])
        }
    }

    /// What a pass (or a dry run) concludes about a claimed order. An order naming no user is
    /// never verified nor delivered, whoever wrote the row: a person names the buyer first.
    package static func verification(of order: Order, by verifier: any OrderVerifier) throws -> Verification {
        guard !order.userId.trimmingCharacters(in: .whitespacesAndNewlines).isEmpty else {
            return Verification(outcome: .needsAttention(
                reason: .unclaimedPurchase,
                detail: "the order names no user (user_id is empty): settle never verifies or delivers a purchase for nobody; "
                    + "find the buyer and run: settle assign \(Verdict.shellWord(order.orderId)) --user USER_ID"))
        }
        var verification = try verifier.verify(order)
        verification.outcome = classify(verification.outcome, of: order)
        return verification
    }

    /// Only the store's final word rejects a paid order. A product missing from `products` is a gap
    /// on settle's side: `needs_attention`. And an order that holds its grant loses it only on
    /// positive evidence, the store refunding or revoking the purchase: any other rejection of such
    /// an order (a transient "not found", a proof that no longer lists it) is not the store's final
    /// word on a purchase it confirmed: "not found" is retried (attempts end in
    /// `needs_attention`), the rest goes to a person.
    package static func classify(_ outcome: VerificationOutcome, of order: Order) -> VerificationOutcome {
        guard case let .rejected(reason, detail) = outcome else { return outcome }
        if reason == .unknownProduct {
            return .needsAttention(reason: .unknownProduct, detail: "\(detail): add it to products, then settle retry \(Verdict.shellWord(order.orderId))")
        }
        guard let held = order.verified, reason != .refunded else { return outcome }
        if reason == .transactionNotFound {
            return .retry("\(detail); the order holds purchase \(held.transactionId), which \(order.store.owner) confirmed before: retrying")
        }
        return .needsAttention(reason: .grantConflict,
                               detail: "the order holds purchase \(held.transactionId), which \(order.store.owner) confirmed before, and "
                                   + "\(order.store.owner)'s answer now says \(reason.rawValue): \(detail); only a refund or revocation "
                                   + "takes a held purchase away")
    }

    /// Runs the hook for `orders` (one call, or one per order without batches) while their
    /// leases are renewed, then records each order's answer.
    ///
    /// An order may have waited in the delivery queue past its lease, and another process may
    /// have taken it over meanwhile: so at the moment the hook starts, an order whose lease is
    /// older than a renewal interval has its claim taken again in one fenced write (owner, and
    /// on PostgreSQL the fencing token, unchanged; the lease pushed out), `stillHeld`. An order
    /// whose claim is gone is left to its new owner, unhooked.
    private func deliver(_ orders: [DeliveryQueue.Leased], pass: Pass) throws {
        var items: [(order: Order, purchase: VerifiedPurchase)] = []
        for leased in orders {
            let order = leased.order
            guard let purchase = order.verified else {
                throw LedgerError.invalid("order \(order.orderId) is delivering without verified facts")
            }
            if order.deliveredAt != nil {
                // The hook said delivered before (a crash, a failed acknowledgement): never again;
                // only the store is still to be told.
                guard stores[order.store]?.finisher != nil else {
                    // Left under its claim, rescued at the next pass, finished once the store is configured again.
                    log.error("order.store_finish_waiting", ["order": order.orderId, "store": order.store.rawValue,
                                                             "why": "delivered, and no \(order.store.rawValue) section is configured to tell the store"])
                    continue
                }
                // Refused before (a backoff): the store is asked again only once it is due.
                if order.nextAttemptAt > ledger.time.unixSeconds {
                    log.debug("order.store_finish_waiting", ["order": order.orderId, "store": order.store.rawValue,
                                                             "retry_at": Timestamp.rfc3339(unixSeconds: order.nextAttemptAt)])
                    continue
                }
                // Taken again whatever its age: telling the store runs outside the lease keeper,
                // so it starts with a whole lease.
                guard try ledger.renewLease(orderId: order.orderId, owner: owner, fence: order.fencingToken, state: .delivering,
                                            leaseSeconds: deliveryLeaseSeconds) else {
                    leaseLost(order, "store_finish")
                    continue
                }
                do {
                    try finishWithStore(order, purchase: purchase, pass: pass)
                } catch let error as LedgerError {
                    guard let violation = error.constraintViolation else { throw error }
                    try setAside(order, violation: violation, pass: pass)
                }
                continue
            }
            guard !order.userId.trimmingCharacters(in: .whitespacesAndNewlines).isEmpty else {
                // Verification never lets such an order through: only a row written in `delivering` gets here.
                let detail = "the order is delivering with an empty user_id; settle never delivers to nobody"
                try ledger.quarantine(orderId: order.orderId, detail: detail)
                log.error("order.needs_attention", ["order": order.orderId, "reason": AttentionReason.rowInvalid.rawValue, "error": detail])
                pass.count(.needsAttention)
                continue
            }
            guard try stillHeld(leased) else {
                leaseLost(order, "hook_start")
                continue
            }
            items.append((order, purchase))
        }
        guard !items.isEmpty else { return }
        let taken = items.map(\.order)
        let reports = withLeasesRenewed(taken, state: .delivering, leaseSeconds: deliveryLeaseSeconds) {
            deliverer.deliver(batch: items)
        }
        for ((order, purchase), report) in zip(items, reports) {
            do {
                try record(report, of: order, purchase: purchase, pass: pass)
            } catch let error as LedgerError {
                guard let violation = error.constraintViolation else { throw error }
                try setAside(order, violation: violation, pass: pass)
            }
        }
    }

    /// Whether `leased`'s claim is still this process's as its hook starts. A lease taken less
    /// than a renewal interval ago (a third of its length) cannot have lapsed, so no other
    /// process can hold the order, and the lease keeper renews it one interval after the hook
    /// starts, well before it could: no write. An order that waited longer by the ledger's clock
    /// or by the monotonic clock (a slow round of hooks; a wall clock stepped back cannot hide
    /// the wait) is taken again in one fenced write, false when its claim is gone.
    /// Saves a durable transition per order in the common case.
    private func stillHeld(_ leased: DeliveryQueue.Leased) throws(LedgerError) -> Bool {
        let interval = Int64(Double(deliveryLeaseSeconds) * min(leaseRenewalFraction, 1.0 / 3))
        if leased.age(now: ledger.time.unixSeconds) < interval { return true }
        let order = leased.order
        return try ledger.renewLease(orderId: order.orderId, owner: owner, fence: order.fencingToken, state: .delivering,
                                     leaseSeconds: deliveryLeaseSeconds)
    }

    /// What the hook said about one order, recorded: finished, already granted, or a failure.
    private func record(_ report: DeliveryReport, of order: Order, purchase: VerifiedPurchase, pass: Pass) throws {
        metrics?.observeDelivery(report.outcome)
        defer { pass.progress() }
        let now = ledger.time.unixSeconds
        var entry = HistoryEntry(at: now, kind: .delivery, outcome: "", hookExit: report.exitCode,
                                 environment: purchase.environment, durationMs: report.durationMs,
                                 detail: report.output.isEmpty ? nil : report.output)
        let key = HookPayload.idempotencyKey(purchase)
        switch report.outcome {
        case .delivered where order.store.mustBeToldOfDelivery:
            entry.outcome = "delivered"
            entry.detail = ["store finish pending", entry.detail].compactMap { $0 }.joined(separator: "\n")
            // Durable before Google hears of it: a crash from here on acknowledges, never re-delivers.
            guard try ledger.recordDelivered(orderId: order.orderId, owner: owner, fence: order.fencingToken, error: nil, history: entry) else {
                log.warning("order.lease_lost", ["order": order.orderId, "refused": "delivered", "idempotency_key": key,
                                                 "why": "delivered, but the claim expired and another process took the order over"])
                return
            }
            log.info("order.delivered", ["order": order.orderId, "store": order.store.rawValue, "idempotency_key": key,
                                         "hook_exit": report.exitCode, "duration_ms": report.durationMs])
            var delivered = order
            delivered.deliveredAt = now
            try finishWithStore(delivered, purchase: purchase, pass: pass)
        case .delivered:
            entry.outcome = "delivered"
            if try ledger.markFinished(orderId: order.orderId, owner: owner, fence: order.fencingToken, history: entry) {
                log.info("order.finished", ["order": order.orderId, "idempotency_key": key, "hook_exit": report.exitCode,
                                            "duration_ms": report.durationMs])
                pass.count(.finished)
            } else {
                // The hook granted, but another process holds the order now: it will deliver it
                // again with the same key, which the receiver must answer as a duplicate.
                log.warning("order.lease_lost", ["order": order.orderId, "refused": "finished", "idempotency_key": key,
                                                 "why": "delivered, but the claim expired and another process took the order over"])
            }
        case let .alreadyGranted(message) where order.store.mustBeToldOfDelivery:
            // The backend holds this very purchase's grant (its key is the store's own id for
            // it): evidence it was granted, so the store is told, as after a delivery. Google
            // would refund a purchase left unacknowledged while the customer keeps the goods.
            entry.outcome = "already_granted"
            entry.detail = ["the hook answered already granted: \(message)", report.output.isEmpty ? nil : report.output,
                            "store finish pending"].compactMap { $0 }.joined(separator: "\n")
            guard try ledger.recordDelivered(orderId: order.orderId, owner: owner, fence: order.fencingToken, error: nil, history: entry) else {
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
            switch try ledger.recordGrantedOutside(orderId: order.orderId, owner: owner, fence: order.fencingToken, history: entry) {
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
                log.error("order.needs_attention", ["order": order.orderId, "reason": AttentionReason.alreadyGrantedUnclear.rawValue,
                                                    "idempotency_key": key, "detail": message])
                pass.count(.needsAttention)
            case .leaseLost:
                leaseLost(order, "already_granted")
            }
        case let .retry(message), let .refused(message), let .unconfirmed(message):
            let permanent = report.outcome == .refused(message)
            let unconfirmed = report.outcome == .unconfirmed(message)
            let exhausted: AttentionReason = unconfirmed ? .hookUnconfirmed : .attemptsExhausted
            entry.outcome = permanent ? "refused" : unconfirmed ? "unconfirmed" : "failed"
            entry.detail = message + (report.output.isEmpty ? "" : "\n" + report.output)
            let next = Reconciler.nextAttempt(order, now: now, after: policy.delay(afterAttempt: order.attempts + 1))
            let state = try ledger.recordFailure(orderId: order.orderId, owner: owner, fence: order.fencingToken, from: .delivering, error: message,
                                                 countsAttempt: true, permanent: permanent, nextAttemptAt: next,
                                                 maxAttempts: policy.maxAttempts, exhaustedReason: exhausted, environment: nil, history: entry)
            let output = report.output.isEmpty ? nil : DeliveryReport.tail(report.output)
            log.warning("order.delivery_failed", ["order": order.orderId, "attempt": order.attempts + 1,
                                                  "idempotency_key": key, "hook_exit": report.exitCode, "error": message,
                                                  "hook_output": output])
            if state == .needsAttention {
                log.error("order.needs_attention", ["order": order.orderId,
                                                    "reason": permanent ? AttentionReason.hookRefused.rawValue : exhausted.rawValue,
                                                    "hook_exit": report.exitCode, "hook_output": output])
            }
            if state == nil { leaseLost(order, "delivery_failed") }
            pass.count(state)
        case let .cannotStart(message):
            entry.outcome = "cannot_start"
            entry.detail = message
            try ledger.recordFailure(orderId: order.orderId, owner: owner, fence: order.fencingToken, from: .delivering, error: message, countsAttempt: false,
                                     permanent: false, nextAttemptAt: now, maxAttempts: policy.maxAttempts, environment: nil,
                                     history: entry)
            log.error("delivery.configuration_fault", ["order": order.orderId, "error": message])
            pass.stop(deliveryConfigurationFault: message)
        }
    }

    /// Tells the order's store the goods were granted (Google Play: acknowledge or consume), then
    /// `finished`. When the store cannot be told now, the order stays delivered and leased
    /// (rescued at the next pass, by this or another process) and is only ever finished, never
    /// delivered again; a configuration fault also stops the pass.
    private func finishWithStore(_ order: Order, purchase: VerifiedPurchase, pass: Pass) throws {
        guard let finisher = stores[order.store]?.finisher else {
            // Left delivered under its claim: rescued at the next pass, finished once the store is configured again.
            log.error("order.store_finish_waiting", ["order": order.orderId, "store": order.store.rawValue,
                                                     "why": "delivered, and no \(order.store.rawValue) section is configured to tell \(order.store.owner)"])
            pass.count(.delivering)
            return
        }
        let key = HookPayload.idempotencyKey(purchase)
        let now = ledger.time.unixSeconds
        let priority = Reconciler.pacerPriority(of: order, now: now)
        switch PacerPriority.$work.withValue(priority, operation: { finisher.finish(order) }) {
        case let .finished(how):
            let entry = HistoryEntry(at: now, kind: .delivery, outcome: how, environment: purchase.environment,
                                     detail: "\(order.store.rawValue): the store was told the purchase is delivered (\(how))")
            if try ledger.markFinished(orderId: order.orderId, owner: owner, fence: order.fencingToken, history: entry) {
                log.info("order.finished", ["order": order.orderId, "store": order.store.rawValue, "idempotency_key": key, "store_finish": how])
                metrics?.observeStoreFinish(store: order.store.rawValue, outcome: how)
                pass.count(.finished)
            } else {
                leaseLost(order, "finished")
            }
        case let .failed(message, configuration):
            // Backs off per order and counts an attempt like a refusal, whatever the status and the
            // product kind (a 5xx, a 403, a subscription's 400/409 used to be asked every pass);
            // a person decides at max_attempts, with the store's refund clock shown.
            let next = Reconciler.nextAttempt(order, now: now, after: policy.delay(afterAttempt: order.attempts + 1))
            let entry = HistoryEntry(at: now, kind: .delivery, outcome: "store_finish_failed", environment: purchase.environment,
                                     detail: message)
            let state = try ledger.recordStoreFinishRefused(orderId: order.orderId, owner: owner, fence: order.fencingToken,
                                                            error: "delivered; telling \(order.store.owner) failed: \(message)",
                                                            nextAttemptAt: next, maxAttempts: policy.maxAttempts, history: entry)
            metrics?.observeStoreFinish(store: order.store.rawValue, outcome: configuration ? "configuration" : "failed")
            if !configuration {
                // The store as a whole did not answer: its breaker hears of it, as of a verification.
                pass.recordStore(order.store, Verification(outcome: .storeUnavailable(message, retryAfter: nil)))
            }
            if configuration {
                log.error("\(order.store.logName).configuration_fault", ["order": order.orderId, "store": order.store.rawValue, "error": message])
                pass.stop(order.store, configurationFault: message)
            }
            switch state {
            case nil:
                leaseLost(order, "store_finish_failed")
            case .needsAttention:
                log.error("order.needs_attention", ["order": order.orderId, "store": order.store.rawValue,
                                                    "reason": AttentionReason.storeFinishRefused.rawValue, "idempotency_key": key, "error": message])
            default:
                log.warning("order.store_finish_failed", ["order": order.orderId, "store": order.store.rawValue, "idempotency_key": key,
                                                          "attempt": order.attempts + 1, "error": message,
                                                          "why": "delivered; told the store after the backoff, never delivered again",
                                                          "retry_at": Timestamp.rfc3339(unixSeconds: next)])
            }
            pass.count(state)
        case let .paced(message):
            let entry = HistoryEntry(at: now, kind: .delivery, outcome: "paced", environment: purchase.environment, detail: message)
            _ = try ledger.recordDelivered(orderId: order.orderId, owner: owner, fence: order.fencingToken,
                                           error: "delivered; telling \(order.store.owner) waits: \(message)", history: entry)
            metrics?.observeStoreFinish(store: order.store.rawValue, outcome: "paced")
            pass.recordStore(order.store, Verification(outcome: .paced(message)))
            log.info("order.store_finish_paced", ["order": order.orderId, "store": order.store.rawValue, "idempotency_key": key,
                                                  "why": message])
            pass.count(.delivering)
        case let .refused(message):
            let next = Reconciler.nextAttempt(order, now: now, after: policy.delay(afterAttempt: order.attempts + 1))
            let entry = HistoryEntry(at: now, kind: .delivery, outcome: "store_finish_refused", environment: purchase.environment,
                                     detail: "\(order.store.owner) refused to hear the purchase is delivered: \(message)")
            let state = try ledger.recordStoreFinishRefused(orderId: order.orderId, owner: owner, fence: order.fencingToken,
                                                            error: "delivered; \(order.store.owner) refused: \(message)", nextAttemptAt: next,
                                                            maxAttempts: policy.maxAttempts, history: entry)
            metrics?.observeStoreFinish(store: order.store.rawValue, outcome: "refused")
            pass.recordStore(order.store, Verification(outcome: .retry(message), storeAnswered: true))
            switch state {
            case nil:
                leaseLost(order, "store_finish_refused")
            case .needsAttention:
                log.error("order.needs_attention", ["order": order.orderId, "store": order.store.rawValue,
                                                    "reason": AttentionReason.storeFinishRefused.rawValue, "idempotency_key": key, "error": message])
            default:
                log.warning("order.store_finish_refused", ["order": order.orderId, "store": order.store.rawValue, "idempotency_key": key,
                                                           "attempt": order.attempts + 1, "error": message,
                                                           "retry_at": Timestamp.rfc3339(unixSeconds: next)])
            }
            pass.count(state)
        }
    }

    /// Runs `body` (a hook, or a verification) while a timer pushes the orders' leases out every
    /// third of their length, so no other process takes an order over while settle still works on it.
    private func withLeasesRenewed<T>(_ orders: [Order], state: OrderState, leaseSeconds: Int64,
                                      _ body: () throws -> T) rethrows -> T {
        try leases.holding(orders, state: state, leaseSeconds: leaseSeconds, fraction: leaseRenewalFraction, body)
    }
}
