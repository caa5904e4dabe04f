import SettleTesting
import XCTest
@testable import SettleLedger
@testable import SettleGooglePlayModule

/// The order a Google order id names (a refund review) is found through the transaction
/// indexes, never by reading every Play order (`orders_store_state`): 251 ms among 500,000.
final class PlayOrderLookupPlanTests: XCTestCase {
    func testTheOrderOfAGoogleOrderId_isFoundThroughTheTransactionIndexes() throws {
        let world = try TestWorld()
        let ledger = try world.ledger()
        let steps = try ledger.reading { db in
            try db.query("EXPLAIN QUERY PLAN " + SQLiteLedger.playOrderByTransaction, [.text("GPA.1"), .text("GPA.1")])
        }.compactMap { $0.string("detail") }
        XCTAssertTrue(steps.contains { $0.contains("orders_verified_transaction") }, "\(steps)")
        XCTAssertTrue(steps.contains { $0.contains("orders_transaction") }, "\(steps)")
        XCTAssertFalse(steps.contains { $0.contains("orders_store_state") }, "\(steps)")
    }
}
