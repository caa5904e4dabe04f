import Foundation
import XCTest
@testable import SettleModel
@testable import SettleLedger

/// Environment text in the ledger is read back as it is stored, on every back end: Apple's
/// spelling becomes an `AppleEnvironment`, other text stays visible and becomes none.
extension LedgerContractTests {
    func testAnOrderRowWithEnvironmentTextSettleDoesNotKnow_readsBackAsThatText_andAsNoAppleEnvironment_onEveryBackEnd() throws {
        try onEachBackEnd { b in
            try enqueue(b.store, "o-env")
            try enqueue(b.store, "o-sandbox", transaction: "101")
            try b.execute("UPDATE orders SET environment = 'sandbox' WHERE order_id = 'o-env'")
            try b.execute("UPDATE orders SET environment = 'Sandbox' WHERE order_id = 'o-sandbox'")
            let order = try XCTUnwrap(try b.store.orderRecord("o-env")?.order, b.name)
            XCTAssertEqual(order.environment, "sandbox", b.name)
            XCTAssertNil(order.appleEnvironment, b.name)
            XCTAssertEqual(try b.store.orderRecord("o-sandbox")?.order.appleEnvironment, .sandbox, b.name)
        }
    }

    func testAConsumptionAnswerRowWithEnvironmentTextSettleDoesNotKnow_isClaimedWithThatText_andNoAppleEnvironment_onEveryBackEnd() throws {
        try onEachBackEnd { b in
            XCTAssertEqual(try b.store.ingest(try appleNotification("CONSUMPTION_REQUEST", transaction: "750"), source: "endpoint",
                                              rules: rules).outcome, "answer_queued", b.name)
            try b.execute("UPDATE consumption_answers SET environment = 'production' WHERE transaction_id = '750'")
            let job = try XCTUnwrap(try b.store.claimDueConsumptionAnswers(limit: 10, leaseSeconds: 300).first?.0, b.name)
            XCTAssertEqual(job.storedEnvironment, "production", b.name)
            XCTAssertNil(job.environment, "\(b.name): never read as production")
        }
    }
}
