import Dispatch
import Foundation
import Synchronization
import SettleModel

/// Keeps the leases of the orders a reconciler is working on renewed, with one timer for all of
/// them: a verification or a delivery registers its orders for as long as it runs, at no more
/// cost than a lock, instead of starting and cancelling a timer of its own (a dispatch source
/// costs the dispatch manager thread a wake-up at each start and cancel, twice an order).
///
/// An order is renewed once a fraction of its lease has passed since it was registered or last
/// renewed. Renewal and the end of the work share the holding's lock, so no renewal runs after
/// the work recorded its outcome (a late one would find the order moved on and report a lease
/// lost that was not).
package final class LeaseKeeper: Sendable {
    /// Renews one order's lease; false when the claim is gone.
    package typealias Renew = @Sendable (_ order: Order, _ state: OrderState, _ leaseSeconds: Int64) throws -> Bool
    /// Told of an order whose claim is gone (no error: it is no longer renewed) or whose renewal
    /// failed (the error: it is tried again at the next interval).
    package typealias Trouble = @Sendable (_ order: Order, _ error: (any Error)?) -> Void

    /// The orders of one piece of work, renewed together.
    package final class Holding: Sendable {
        fileprivate let state: OrderState
        fileprivate let leaseSeconds: Int64
        fileprivate let interval: Double
        /// The orders still held, and when they are next due (monotonic seconds).
        fileprivate let held: Mutex<(orders: [Order], due: Double)>

        fileprivate init(orders: [Order], state: OrderState, leaseSeconds: Int64, interval: Double, now: Double) {
            self.state = state
            self.leaseSeconds = leaseSeconds
            self.interval = interval
            held = Mutex((orders, now + interval))
        }
    }

    private let renew: Renew
    private let trouble: Trouble
    private let holdings = Mutex<(all: [ObjectIdentifier: Holding], tick: Double?)>(([:], nil))
    /// Dispatch sources may be scheduled and cancelled from any thread.
    nonisolated(unsafe) private let timer: any DispatchSourceTimer

    package init(renew: @escaping Renew, trouble: @escaping Trouble) {
        self.renew = renew
        self.trouble = trouble
        timer = DispatchSource.makeTimerSource(queue: DispatchQueue(label: "settle.lease-keeper"))
        timer.setEventHandler { [weak self] in self?.renewDue() }
        timer.activate()
    }

    deinit { timer.cancel() }

    /// Holds `orders` for the duration of `body`, renewing their leases every `fraction` of
    /// `leaseSeconds`.
    package func holding<T>(_ orders: [Order], state: OrderState, leaseSeconds: Int64, fraction: Double,
                    _ body: () throws -> T) rethrows -> T {
        let interval = max(0.01, Double(leaseSeconds) * fraction)
        let holding = Holding(orders: orders, state: state, leaseSeconds: leaseSeconds, interval: interval, now: Self.now())
        holdings.withLock { holdings in
            holdings.all[ObjectIdentifier(holding)] = holding
            // The timer ticks at the shortest interval it has been asked for.
            if holdings.tick.map({ interval < $0 }) ?? true {
                holdings.tick = interval
                timer.schedule(deadline: .now() + interval, repeating: interval, leeway: .milliseconds(Int(interval * 100)))
            }
        }
        defer {
            holding.held.withLock { $0.orders = [] }
            holdings.withLock { _ = $0.all.removeValue(forKey: ObjectIdentifier(holding)) }
        }
        return try body()
    }

    private func renewDue() {
        let now = Self.now()
        let all = holdings.withLock { Array($0.all.values) }
        for holding in all {
            holding.held.withLock { held in
                guard !held.orders.isEmpty, held.due <= now else { return }
                held.due = now + holding.interval
                held.orders.removeAll { order in
                    do {
                        if try !renew(order, holding.state, holding.leaseSeconds) {
                            trouble(order, nil)
                            return true
                        }
                    } catch {
                        trouble(order, error)
                    }
                    return false
                }
            }
        }
    }

    private static func now() -> Double { Double(DispatchTime.now().uptimeNanoseconds) / 1e9 }
}
