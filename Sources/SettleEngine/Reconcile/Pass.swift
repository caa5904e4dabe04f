import Foundation
import Synchronization
import SettleBase
import SettleModel
import SettleLedger

/// The shared state of one pass, behind one lock: the work queue, each store's breaker and the
/// report. A store whose breaker is open (or opens, or whose credentials fail) stops being
/// claimed; the other store's orders go on.
package final class Pass: Sendable {
    package enum Next {
        case stop, redeliver(String), named(String), claimed(Order)
        /// Claim due orders of these stores (their breakers are closed).
        case due(Set<Store>)
        /// Claim one due order of this store: its breaker's probe.
        case probe(Store)
    }

    /// One store's part of the pass.
    private struct StoreWork {
        var breaker: StoreBreaker
        /// No more of this store's orders are claimed this pass (its breaker is open, or opened;
        /// its configuration is wrong).
        var stopped = false
        var noMoreDue = false
        /// Probes left (the breaker's cool-down is over): one. Nil: claims as many as are due.
        var probesLeft: Int?
        /// The probe closed the breaker: the store's due orders may be claimed after all.
        var reopened = false
        /// A call met the store's rate limit (the pacer's, or a 429 above the bucket's floor):
        /// no more of the store's due orders are claimed this pass; what is claimed goes on.
        var paced = false
    }

    private struct State {
        var redeliver: [String]
        var named: [String]?
        /// The whole pass stops (a fault of the hook's or the ledger's).
        var stopped = false
        /// Orders a batch claim took beyond the one its worker works on, per store in claim
        /// order from the last: the next workers of that store take them (`popLast`) before
        /// claiming again. Taking the first of a list in claim order moved all the others, and
        /// the lists of 32 workers' batches grow to hundreds: 2 % of a pass's instructions.
        var claimed: [Store: [Order]] = [:]
        var stores: [Store: StoreWork]
        /// Workers enlisted so far: each is given a home store in turn (`enlist`).
        var enlisted = 0
        var report = PassReport()
        var error: (any Error)?
    }

    private let state: Mutex<State>
    /// Verified orders waiting for their hook.
    package let deliveries: DeliveryQueue
    /// The stores' answers waiting to be recorded.
    package let answers: AnswerQueue
    /// Confirmed purchases whose writes were handed to the ledger and not yet followed up
    /// (`Reconciler.handOver`): the verification ends once none is left.
    package let handedOver = DispatchGroup()
    private let policy: RetryPolicy
    private let time: any TimeSource
    private let shouldStop: @Sendable () -> Bool
    package let progress: @Sendable () -> Void

    /// `stores`: the stores this pass may claim (those configured), each with its breaker as the
    /// pass starts and what it permits now.
    package init(redeliver: [String], named: [String]?, breakers: [Store: StoreBreaker], policy: RetryPolicy, time: any TimeSource,
                 deliveryCapacity: Int, shouldStop: @escaping @Sendable () -> Bool, progress: @escaping @Sendable () -> Void) {
        deliveries = DeliveryQueue(capacity: deliveryCapacity)
        answers = AnswerQueue(capacity: deliveryCapacity)
        let now = time.unixSeconds
        var stores: [Store: StoreWork] = [:]
        var report = PassReport()
        for (store, breaker) in breakers {
            var work = StoreWork(breaker: breaker)
            // Orders an operator named are not held back by any breaker.
            if named == nil {
                switch breaker.permission(now: now) {
                case .claim: break
                case .probe: work.probesLeft = 1
                case let .wait(until):
                    work.stopped = true
                    report.breakerWaits[store] = until
                }
            }
            stores[store] = work
        }
        var initial = State(redeliver: redeliver, named: named.map { Array($0.reversed()) }, stores: stores)
        initial.report = report
        state = Mutex(initial)
        self.policy = policy
        self.time = time
        self.shouldStop = shouldStop
        self.progress = progress
    }

    /// The whole pass stopped (shutdown, a fault), whatever the stores' breakers say.
    package var isStopped: Bool { shouldStop() || state.withLock { $0.stopped } }
    /// No more of `store`'s orders may be worked on this pass: the pass stopped, or that store did.
    package func isStopped(_ store: Store) -> Bool {
        shouldStop() || state.withLock { $0.stopped || $0.stores[store]?.stopped ?? true }
    }
    /// A call for `store` met its rate limit this pass: its orders claimed but not started go back.
    package func isPaced(_ store: Store) -> Bool { state.withLock { $0.stores[store]?.paced ?? false } }
    /// The process is shutting down (not a breaker or a fault, which still let verified orders go out).
    package var isShuttingDown: Bool { shouldStop() }
    /// Each store's breaker as the pass leaves it.
    package var breakers: [Store: StoreBreaker] { state.withLock { $0.stores.mapValues(\.breaker) } }

    /// The home store of the next of `workers` workers: the configured stores (`homes`; every
    /// store of the pass when none is given) in turn, so each store has its own share of the
    /// workers and a slow store holds only its own. Nil (every store's orders, oldest and most
    /// urgent first, as one queue) when there are fewer workers than stores. A store this build
    /// knows but the configuration leaves out is nobody's home: its orders only wait.
    package func enlist(workers: Int, homes: Set<Store> = []) -> Store? {
        state.withLock { s in
            let stores = s.stores.keys.filter { homes.isEmpty || homes.contains($0) }.sorted { $0.rawValue < $1.rawValue }
            guard !stores.isEmpty, workers >= stores.count else { return nil }
            defer { s.enlisted += 1 }
            return stores[s.enlisted % stores.count]
        }
    }

    /// The next work for a worker at home in `home`: rescued deliveries and named orders first,
    /// then its home store's claimed and due orders; once its home store has nothing left this
    /// pass, another store's. A store's slow answers thus hold its own workers, never all of them.
    package func take(home: Store? = nil) -> Next {
        let stopRequested = shouldStop()
        return state.withLock { s in
            if s.stopped || stopRequested { return .stop }
            if let id = s.redeliver.popLast() { return .redeliver(id) }
            if s.named != nil {
                guard let id = s.named!.popLast() else { return .stop }
                return .named(id)
            }
            func next(_ store: Store) -> Next? {
                // Taken in place from the end of the list (kept in reverse claim order): copying it
                // out of the dictionary (every order in it retained) per take was 3 % of a pass.
                if let order = s.claimed[store]?.popLast() {
                    if s.claimed[store]?.isEmpty == true { s.claimed[store] = nil }
                    return .claimed(order)
                }
                guard var work = s.stores[store], !work.stopped, !work.noMoreDue else { return nil }
                if let left = work.probesLeft {
                    guard left > 0 else { return nil }
                    work.probesLeft = left - 1
                    s.stores[store] = work
                    return .probe(store)
                }
                return work.paced ? nil : .due([store])
            }
            if let home {
                if let work = next(home) { return work }
                for store in Store.allCases where store != home {
                    if let work = next(store) { return work }
                }
                return .stop
            }
            // No home: as one queue, probes first, then a claim across every open store.
            for store in Store.allCases {
                if let orders = s.claimed[store], !orders.isEmpty { return next(store) ?? .stop }
            }
            for store in Store.allCases {
                guard let work = s.stores[store], !work.stopped, !work.noMoreDue, let left = work.probesLeft, left > 0 else { continue }
                return next(store) ?? .stop
            }
            let open = Set(s.stores.filter { !$0.value.stopped && !$0.value.noMoreDue && !$0.value.paced && $0.value.probesLeft == nil }.keys)
            return open.isEmpty ? .stop : .due(open)
        }
    }

    /// No order of `stores` was due: none is claimed again this pass.
    package func noMoreDue(_ stores: Set<Store>) {
        state.withLock { s in
            for store in stores { s.stores[store]?.noMoreDue = true }
        }
    }

    /// Stores whose probe closed their breaker after the workers ran out of other work: one more
    /// round of workers claims their due orders. Each store reopens at most once a pass.
    package func takeReopened() -> Set<Store> {
        state.withLock { s in
            guard !s.stopped else { return [] }
            var reopened: Set<Store> = []
            for (store, work) in s.stores where work.reopened {
                s.stores[store]?.reopened = false
                if !work.stopped && !work.noMoreDue { reopened.insert(store) }
            }
            return reopened
        }
    }

    /// Orders of a batch claim for the next workers.
    package func keepClaimed(_ orders: [Order]) {
        guard !orders.isEmpty else { return }
        state.withLock { s in
            var byStore: [Store: [Order]] = [:]
            for order in orders { byStore[order.store, default: []].append(order) }
            // In reverse claim order: a new batch goes before (is taken after) the orders kept already.
            for (store, batch) in byStore { s.claimed[store] = batch.reversed() + (s.claimed[store] ?? []) }
        }
    }

    /// Claimed orders no worker took (the pass or their store stopped): the caller puts them back.
    package func unworkedClaims() -> [Order] {
        state.withLock { s in
            defer { s.claimed = [:] }
            return s.claimed.keys.sorted { $0.rawValue < $1.rawValue }.flatMap { (s.claimed[$0] ?? []).reversed() }
        }
    }

    package func skip(_ id: String, why: String, exists: Bool) {
        state.withLock { $0.report.skipped.append(.init(orderId: id, why: why, exists: exists)) }
    }

    /// What one verification says about its store as a whole: an answer closes the store's
    /// breaker (and lets a successful probe's store be claimed again), a store-wide failure
    /// counts toward opening it, a configuration fault stops that store at once.
    package func recordStore(_ store: Store, _ verification: Verification) {
        let now = time.unixSeconds
        state.withLock { s in
            guard var work = s.stores[store] else { return }
            if case let .storeUnavailable(message, retryAfter) = verification.outcome {
                s.report.storeWideFailures[store, default: 0] += 1
                let opened = work.breaker.recordFailure(message, retryAfter: retryAfter, now: now,
                                                        baseSeconds: policy.baseSeconds, maxSeconds: policy.maxSeconds)
                if opened && !work.stopped {
                    work.stopped = true
                    s.report.breakersOpened.insert(store)
                }
            } else if case let .paced(message) = verification.outcome {
                // The budget is spent for now: working more of the store's orders would only
                // defer them one by one. The breaker hears nothing: the store did not fail.
                s.report.paced[store, default: 0] += 1
                s.report.pacedBy[store] = s.report.pacedBy[store] ?? message
                // A learning bucket's 429 already slowed the pacer: claiming goes on at its new rate.
                if !verification.pacerAdapted { work.paced = true }
            } else if case let .configurationFault(message) = verification.outcome {
                work.breaker.recordConfigurationFault(message, now: now, baseSeconds: policy.baseSeconds, maxSeconds: policy.maxSeconds)
                work.stopped = true
                s.report.storeConfigurationFaults[store] = s.report.storeConfigurationFaults[store] ?? message
            } else if verification.storeAnswered {
                s.report.storeAnswers[store, default: 0] += 1
                work.breaker.recordAnswer()
                if work.probesLeft != nil {
                    work.probesLeft = nil
                    work.reopened = true
                }
            }
            s.stores[store] = work
        }
    }

    /// The store could not be told of a delivery because settle's credentials for it are wrong
    /// (Google's 401/403 on acknowledge): that store stops, like a verification's configuration fault.
    package func stop(_ store: Store, configurationFault message: String) {
        recordStore(store, Verification(outcome: .configurationFault(message)))
    }

    package func count(_ outcome: OrderState?) {
        guard let outcome else { return }
        state.withLock { s in
            s.report.reconciled += 1
            switch outcome {
            case .finished: s.report.finished += 1
            case .rejected: s.report.rejected += 1
            case .needsAttention: s.report.needsAttention += 1
            case .pending, .verifying, .delivering: s.report.retrying += 1
            }
        }
    }

    /// settle's own setup is wrong (the delivery hook cannot start, found delivering an order of
    /// `store`): the whole pass stops, and that store's breaker row keeps the fault for `settle
    /// status` across passes; a store whose orders never reached the hook is not blamed.
    package func stop(_ store: Store, deliveryConfigurationFault message: String) {
        let now = time.unixSeconds
        state.withLock { s in
            s.stores[store]?.breaker.noteConfigurationFault(message, now: now)
            s.stopped = true
            s.report.deliveryConfigurationFault = s.report.deliveryConfigurationFault ?? message
        }
    }

    package func fail(_ error: any Error) {
        state.withLock { s in
            s.stopped = true
            if s.error == nil { s.error = error }
        }
        deliveries.abandon()
    }

    package func finish() throws(LedgerError) -> PassReport {
        try state.withLock { (s) throws(LedgerError) -> PassReport in
            if let error = s.error {
                if let ledgerError = error as? LedgerError { throw ledgerError }
                throw LedgerError.invalid("\(error)")
            }
            return s.report
        }
    }
}
