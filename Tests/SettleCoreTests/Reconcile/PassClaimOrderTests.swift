import Foundation
import XCTest
@testable import SettleBase
@testable import SettleEngine
@testable import SettleLedger
@testable import SettleModel

/// The orders a batch claim keeps for the next workers are taken in claim order, batch after
/// batch and per store, and those no worker took come back in claim order too.
final class PassClaimOrderTests: XCTestCase {
    let apple = Store(rawValue: "pass_test_a")
    let play = Store(rawValue: "pass_test_b")

    func order(_ id: String, _ store: Store) -> Order {
        var order = Order(orderId: id, userId: "u", productId: "p", state: .verifying, attempts: 0, nextAttemptAt: 0,
                          createdAt: 0, updatedAt: 0)
        order.store = store
        return order
    }

    func pass() -> Pass {
        Pass(redeliver: [], named: nil, breakers: [apple: StoreBreaker(), play: StoreBreaker()],
             policy: RetryPolicy(baseSeconds: 1, maxSeconds: 1, maxAttempts: 3),
             time: ManualTimeSource(Date(timeIntervalSince1970: 1_000)), deliveryCapacity: 4,
             shouldStop: { false }, progress: {})
    }

    func taken(_ pass: Pass, home: Store) -> String? {
        if case let .claimed(order) = pass.take(home: home) { return order.orderId }
        return nil
    }

    func testKeptOrders_areTakenInClaimOrder_batchAfterBatch_perStore() {
        let pass = pass()
        pass.keepClaimed([order("a1", apple), order("b1", play), order("a2", apple)])
        pass.keepClaimed([order("a3", apple), order("a4", apple)])
        XCTAssertEqual(taken(pass, home: apple), "a1")
        XCTAssertEqual(taken(pass, home: apple), "a2")
        XCTAssertEqual(taken(pass, home: play), "b1")
        XCTAssertEqual(taken(pass, home: apple), "a3")
        pass.keepClaimed([order("a5", apple), order("b2", play)])
        XCTAssertEqual(pass.unworkedClaims().map(\.orderId), ["a4", "a5", "b2"])
        XCTAssertEqual(pass.unworkedClaims().map(\.orderId), [])
    }
}
