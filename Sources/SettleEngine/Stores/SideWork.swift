import Foundation
import SettleBase
import SettleModel

/// The time a pass lends one store's own work (Google's stored pushes, its voided purchases
/// poll), and what that work calls as it goes. A store that answers slowly, or not at all, then
/// holds up the pass for a bounded time: the other store's orders are still claimed on time, and
/// the daemon's watchdog is kicked after each piece of work (`progress`), as after each order.
///
/// The work checks `isSpent` before it starts each piece; a piece that has started finishes
/// (it is bounded by the HTTP timeouts), and what is left waits for the next pass.
package struct SideWork: Sendable {
    /// Seconds lent, for leases of what the work claims.
    package let seconds: Double
    private let time: any TimeSource
    private let deadline: Date
    package let progress: @Sendable () -> Void

    package init(seconds: Double, time: any TimeSource, progress: @escaping @Sendable () -> Void = {}) {
        self.seconds = seconds
        self.time = time
        deadline = time.now.addingTimeInterval(seconds)
        self.progress = progress
    }

    /// No more may be started this pass.
    package var isSpent: Bool { time.now >= deadline }
}

/// How a store's side work ended, as its breaker hears of it: as of a verification, an answer
/// closes the breaker and a store-wide failure counts toward opening it (Retry-After opens it at
/// once), so the store's later side work and orders wait for its breaker. Pacing is neither:
/// the work that met it waits for the next pass, and nothing counts against the store.
package enum SideWorkOutcome: Sendable, Equatable {
    /// The store was not asked anything.
    case idle
    /// The store answered (whatever it said).
    case answered
    /// The store as a whole did not answer (timeouts, 429, 5xx): the rest waits for the next pass.
    case storeUnavailable(String, retryAfter: Double?)
    /// settle's credentials or setup for the store are wrong: the store stops, as for an order.
    case configurationFault(String)
    /// A call was held back (or answered 429 above its bucket's floor) to stay within the
    /// store's rate limit: the rest waits for the next pass, and the breaker hears nothing.
    case paced(String)

    /// The first failure (or pacing) wins over answers; an answer over nothing asked.
    package func then(_ next: SideWorkOutcome) -> SideWorkOutcome {
        switch (self, next) {
        case (.storeUnavailable, _), (.configurationFault, _), (.paced, _): return self
        case (_, .idle): return self
        default: return next
        }
    }
}

extension Pass {
    /// What a store's side work says about the store as a whole, fed to its breaker.
    package func recordSideWork(_ store: Store, _ outcome: SideWorkOutcome) {
        switch outcome {
        case .idle: return
        case .answered: recordStore(store, Verification(outcome: .retry("side work"), storeAnswered: true))
        case let .storeUnavailable(message, retryAfter):
            recordStore(store, Verification(outcome: .storeUnavailable(message, retryAfter: retryAfter)))
        case let .configurationFault(message): recordStore(store, Verification(outcome: .configurationFault(message)))
        case let .paced(message): recordStore(store, Verification(outcome: .paced(message)))
        }
    }
}

extension Reconciler {
    /// Seconds a pass lends each store's side work: a whole exchange with the store at least (so
    /// something is always done, even when every call waits out its timeout), or a quarter of the
    /// pass interval when that is longer; the other store's orders wait no longer than that.
    package var sideWorkSeconds: Double {
        max(configuration.http.timeoutSeconds + configuration.http.connectTimeoutSeconds, configuration.schedule.intervalSeconds / 4)
    }
}
