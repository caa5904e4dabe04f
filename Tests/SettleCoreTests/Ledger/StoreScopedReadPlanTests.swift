import SettleTesting
import XCTest
@testable import SettleModel
@testable import SettleLedger

/// Reads that name a store and something narrower (a user, a purchase) go through the narrower
/// thing's index: SQLite's planner, with no statistics, takes `orders_store_state` for any
/// `store = ?` and then reads every order of the store. On a ledger of 500,000 orders of one
/// store that was 113 ms for one user's refund deadlines and 278 ms for a store's refund, inside
/// its write transaction.
final class StoreScopedReadPlanTests: XCTestCase {
    private func plan(_ ledger: SQLiteLedger, _ sql: String, _ values: [LedgerValue]) throws -> [String] {
        try ledger.reading { db in try db.query("EXPLAIN QUERY PLAN " + sql, values) }.compactMap { $0.string("detail") }
    }

    func testOneUsersRefundDeadlines_readTheUsersOrders_andTheWholeLedgersTheStoresOwn() throws {
        let world = try TestWorld()
        let ledger = try world.ledger()
        let store = Store(rawValue: "third_store")
        let user = try plan(ledger, RefundDeadline.query(store, window: 259_200, subject: "user_id = ?"),
                            [.integer(0), .text("u-1"), .integer(10)])
        XCTAssertTrue(user.contains { $0.contains("orders_user") }, "\(user)")
        XCTAssertFalse(user.contains { $0.contains("orders_store_state") }, "\(user)")
        let whole = try plan(ledger, RefundDeadline.query(store, window: 259_200), [.integer(0), .integer(10)])
        XCTAssertTrue(whole.contains { $0.contains("orders_store_state") }, "the store's own undelivered orders: \(whole)")
    }

    func testAStoresRefund_findsItsOrdersByProofAndByGrant_neverByTheStore() throws {
        let world = try TestWorld()
        let ledger = try world.ledger()
        let steps = try plan(ledger, SQLiteLedger.storeRefundOrders,
                             [.text("third_store"), .text("K-1"), .text("third_store"), .text("K-1")])
        XCTAssertTrue(steps.contains { $0.contains("orders_proof_key") }, "\(steps)")
        XCTAssertTrue(steps.contains { $0.contains("grant_key=?") }, "\(steps)")
        XCTAssertFalse(steps.contains { $0.contains("orders_store_state") }, "\(steps)")
        XCTAssertFalse(steps.contains { $0.hasPrefix("SCAN o") }, "\(steps)")
    }
}
