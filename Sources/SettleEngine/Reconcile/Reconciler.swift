import Foundation
import Synchronization
import SettleBase
import SettleModel
import SettleConfig
import SettleLedger
import SettleDelivery

/// One reconcile pass: rescue -> claim -> verify -> record -> deliver -> finish, with at most
/// `schedule.concurrency` orders in flight. `settle reconcile` and the daemon both run this.
/// `runPass` keeps the order of work; each phase has a file of its own: Reconciler+Claim,
/// +Verify, +Deliver, +Record (the hook's answers), +Finish (telling the store), and
/// +Bookkeeping for what a pass does before its claims and after its orders.
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
    let savedBuckets = Mutex<(buckets: [PacerSnapshot], at: Int64)>(([], 0))

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
        try tidyLedger()
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
        let rescued = try rescueLeftovers()
        let pass = Pass(redeliver: rescued.redeliver, named: orderIds.isEmpty ? nil : orderIds, breakers: breakers,
                        policy: policy, time: ledger.time, deliveryCapacity: deliveryCapacity,
                        shouldStop: shouldStop, progress: progress)
        for (store, outcome) in sideWork { pass.recordSideWork(store, outcome) }
        if orderIds.isEmpty { logBreakers(breakers, now: now) }
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
        claimAndVerify(pass)
        releaseUnworkedClaims(pass)
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
        try saveBreakers(pass.breakers, openedFrom: breakers)
        metrics?.observePass(openBreakers: Set(pass.breakers.filter { $0.value.state == .open }.keys),
                             at: ledger.time.unixSeconds)
        try savePacerBuckets(hosts: hosts)
        // Deadlines of the stores that refund what they were not told of (Google, after three days).
        if stores.keys.contains(where: { $0.refundWindowSeconds != nil }) { try warnOfRefundDeadlines() }
        return report
    }

    /// A write about one order failed a constraint: that order goes to `needs_attention`
    /// (`row_invalid`) and the pass goes on. Should even that write fail on the row, the order
    /// is left as it is (rescue takes it back later) and the pass still goes on: one order's
    /// row never ends the pass; only a failure of the ledger itself does.
    func setAside(_ order: Order, violation: String, pass: Pass) throws(LedgerError) {
        do {
            try ledger.quarantine(orderId: order.orderId,
                                  detail: "a ledger write about this order failed: \(violation)")
        } catch {
            guard let again = error.constraintViolation else { throw error }
            log.error("order.quarantine_failed", ["order": order.orderId, "error": violation,
                                                  "quarantine_error": again])
            return
        }
        log.error("order.needs_attention", ["order": order.orderId, "reason": AttentionReason.rowInvalid.rawValue,
                                            "error": violation])
        pass.count(.needsAttention)
    }

    func leaseLost(_ order: Order, _ transition: String) {
        Reconciler.logLeaseLost(order, transition, log: log)
    }

    private static func logLeaseLost(_ order: Order, _ transition: String, log: Log) {
        log.warning("order.lease_lost", ["order": order.orderId, "refused": transition,
                                         "why": "the claim expired and another process took the order over"])
    }

    /// Runs `body` (a hook, or a verification) while a timer pushes the orders' leases out every
    /// third of their length, so no other process takes an order over while settle still works on it.
    func withLeasesRenewed<T>(_ orders: [Order], state: OrderState, leaseSeconds: Int64,
                              _ body: () throws -> T) rethrows -> T {
        try leases.holding(orders, state: state, leaseSeconds: leaseSeconds, fraction: leaseRenewalFraction, body)
    }
}
