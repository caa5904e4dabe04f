import Foundation
import Synchronization
import SettleBase
import SettleModel
import SettleLedger

/// The shared state of one pass, behind one lock: the work queue, the Apple breaker and the report.
package final class Pass: Sendable {
    package enum Next { case stop, redeliver(String), named(String), claimed(Order), due }

    private struct State {
        var redeliver: [String]
        var named: [String]?
        var stopped = false
        var noMoreDue = false
        /// Orders a batch claim took beyond the one its worker works on, in claim order: the
        /// next workers take them before claiming again.
        var claimed: [Order] = []
        /// Claims still allowed (nil: unlimited); the breaker's probe allows one.
        var claimsLeft: Int?
        var breaker: AppleBreaker
        var report = PassReport()
        var error: (any Error)?
    }

    private let state: Mutex<State>
    /// Verified orders waiting for their hook.
    package let deliveries: DeliveryQueue
    private let policy: RetryPolicy
    private let time: any TimeSource
    private let shouldStop: @Sendable () -> Bool
    package let progress: @Sendable () -> Void

    package init(redeliver: [String], named: [String]?, breaker: AppleBreaker, policy: RetryPolicy, time: any TimeSource,
         deliveryCapacity: Int, shouldStop: @escaping @Sendable () -> Bool, progress: @escaping @Sendable () -> Void) {
        deliveries = DeliveryQueue(capacity: deliveryCapacity)
        state = Mutex(State(redeliver: redeliver, named: named.map { Array($0.reversed()) }, breaker: breaker))
        self.policy = policy
        self.time = time
        self.shouldStop = shouldStop
        self.progress = progress
    }

    package var isStopped: Bool { shouldStop() || state.withLock { $0.stopped } }
    /// The process is shutting down (not the breaker or a fault, which still let verified orders go out).
    package var isShuttingDown: Bool { shouldStop() }
    package var breaker: AppleBreaker { state.withLock { $0.breaker } }

    package func take() -> Next {
        let stopRequested = shouldStop()
        return state.withLock { s in
            if s.stopped || stopRequested { return .stop }
            if let id = s.redeliver.popLast() { return .redeliver(id) }
            if !s.claimed.isEmpty { return .claimed(s.claimed.removeFirst()) }
            if let left = s.claimsLeft {
                guard left > 0 else { return .stop }
                s.claimsLeft = left - 1
            }
            if s.named != nil {
                guard let id = s.named!.popLast() else { return .stop }
                return .named(id)
            }
            return s.noMoreDue ? .stop : .due
        }
    }

    package func noMoreDue() { state.withLock { $0.noMoreDue = true } }

    /// How many due orders the next claim may take: `batch`, or one while claims are counted
    /// (the breaker's probe).
    package func claimLimit(_ batch: Int) -> Int {
        state.withLock { $0.claimsLeft == nil ? max(1, batch) : 1 }
    }

    /// Orders of a batch claim for the next workers.
    package func keepClaimed(_ orders: [Order]) {
        guard !orders.isEmpty else { return }
        state.withLock { $0.claimed += orders }
    }

    /// Claimed orders no worker took (the pass stopped): the caller puts them back.
    package func unworkedClaims() -> [Order] {
        state.withLock { s in
            defer { s.claimed = [] }
            return s.claimed
        }
    }

    package func limitClaims(to count: Int?) { state.withLock { $0.claimsLeft = count } }

    /// The breaker is open: claim nothing (rescued deliveries still go out).
    package func holdForBreaker(until: Int64) {
        state.withLock { s in
            s.claimsLeft = 0
            s.report.breakerWaitUntil = until
        }
    }

    package func skip(_ id: String, why: String, exists: Bool) {
        state.withLock { $0.report.skipped.append(.init(orderId: id, why: why, exists: exists)) }
    }

    package func recordApple(_ verification: Verification) {
        let now = time.unixSeconds
        state.withLock { s in
            if case let .appleUnavailable(message, retryAfter) = verification.outcome {
                s.report.appleWideFailures += 1
                let opened = s.breaker.recordFailure(message, retryAfter: retryAfter, now: now,
                                                     baseSeconds: policy.baseSeconds, maxSeconds: policy.maxSeconds)
                if opened && !s.stopped {
                    s.stopped = true
                    s.report.breakerOpened = true
                }
            } else if case let .configurationFault(message) = verification.outcome {
                // Say so in status and retry slowly: the breaker carries the fault across passes.
                s.breaker.recordConfigurationFault(message, now: now)
            } else if verification.appleAnswered {
                s.report.appleAnswers += 1
                s.breaker.recordAnswer()
            }
        }
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

    /// Our side is misconfigured (shared secret, delivery hook): the breaker row keeps the
    /// fault for `settle status` across passes.
    package func stop(configurationFault: String) {
        let now = time.unixSeconds
        state.withLock { s in
            s.breaker.recordConfigurationFault(configurationFault, now: now)
            s.stopped = true
            s.report.configurationFault = s.report.configurationFault ?? configurationFault
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
