import Dispatch
import Synchronization
import XCTest
@testable import SettleModel
@testable import SettleEngine

/// The lease keeper renews the orders of every piece of work while it runs, whatever thread
/// registered it, never after the work ended, and at the shortest interval any work asked for. Waits are for events (renewals seen), never for
/// a length of time.
final class LeaseKeeperTests: XCTestCase {
    /// Renewals seen, by order id.
    private final class Renewals: Sendable {
        let seen = Mutex<[String: Int]>([:])
        func count(_ id: String) -> Int { seen.withLock { $0[id, default: 0] } }
    }

    private let renewals = Renewals()

    private func keeper() -> LeaseKeeper {
        LeaseKeeper(renew: { [renewals] order, _, _ in
            renewals.seen.withLock { $0[order.orderId, default: 0] += 1 }
            return true
        }, trouble: { _, _ in })
    }

    private static func order(_ id: String) -> Order {
        Order(orderId: id, userId: "u", productId: "p", state: .verifying, attempts: 0, nextAttemptAt: 0, createdAt: 0,
              updatedAt: 0)
    }

    private func order(_ id: String) -> Order { Self.order(id) }

    /// Polls until `renewed` holds, for 30 s at the most (a broken keeper fails, never hangs).
    @discardableResult
    private static func until(_ renewed: () -> Bool) -> Bool {
        let deadline = DispatchTime.now() + 30
        while !renewed() {
            guard DispatchTime.now() < deadline else { return false }
            usleep(1_000)
        }
        return true
    }
    private func count(_ id: String) -> Int { renewals.count(id) }

    func testWorkOnManyThreads_eachHeldOrderIsRenewedWhileItsWorkRuns() {
        let keeper = keeper()
        let renewals = renewals
        let workers = 24
        let done = DispatchGroup()
        for index in 0..<workers {
            done.enter()
            Thread {
                let id = "o-\(index)"
                keeper.holding([Self.order(id)], state: .verifying, leaseSeconds: 1, fraction: 0.01) {
                    // The work lasts until its order was renewed twice.
                    Self.until { renewals.count(id) >= 2 }
                }
                done.leave()
            }.start()
        }
        XCTAssertEqual(done.wait(timeout: .now() + 60), .success, "every worker's order was renewed while it ran")
        for index in 0..<workers { XCTAssertGreaterThanOrEqual(count("o-\(index)"), 2) }
    }

    func testEndedWork_isNeverRenewedAgain_whileOtherWorkStillIs() {
        let keeper = keeper()
        keeper.holding([order("ended")], state: .delivering, leaseSeconds: 1, fraction: 0.01) {
            XCTAssertTrue(Self.until { count("ended") >= 1 })
        }
        let afterEnd = count("ended")
        keeper.holding([order("running")], state: .delivering, leaseSeconds: 1, fraction: 0.01) {
            // Ten more ticks of the timer, each of which saw the ended holding gone.
            XCTAssertTrue(Self.until { count("running") >= 10 })
        }
        XCTAssertEqual(count("ended"), afterEnd, "an order is not renewed after its work recorded its outcome")
    }

    func testAShorterIntervalAskedLater_setsTheTimersTick() {
        let keeper = keeper()
        let outer = DispatchSemaphore(value: 0)
        // A long lease first: renewed only every 100 s.
        Thread {
            keeper.holding([Self.order("long")], state: .verifying, leaseSeconds: 1_000, fraction: 0.1) { outer.wait() }
        }.start()
        keeper.holding([order("short")], state: .verifying, leaseSeconds: 1, fraction: 0.01) {
            XCTAssertTrue(Self.until { count("short") >= 3 }, "the shorter interval set the tick")
        }
        outer.signal()
        XCTAssertGreaterThanOrEqual(count("short"), 3)
        XCTAssertEqual(count("long"), 0, "the long lease is not due: each holding keeps its own interval")
    }
}
