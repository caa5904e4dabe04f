import Foundation
import SettleApp
import SettleTesting
import XCTest
import SettleBase

/// Google Play orders through the binary on a PostgreSQL ledger: the same verification, single
/// delivery, consume after the hook and crash safety as on SQLite.
final class GooglePlayPostgresTests: GooglePlayTestCase {
    var schema = ""
    var url = ""

    override func setUpWithError() throws {
        try super.setUpWithError()
        let fresh = try TestPostgres.freshSchema()
        (url, schema) = (fresh.url, fresh.schema)
        try writePlayConfig(extra: [("ledger", .string(url))])
    }

    override func tearDownWithError() throws {
        TestPostgres.drop(schema: schema)
        try super.tearDownWithError()
    }

    func testPlayOrder_onPostgreSQL_isDeliveredOnce_consumedAfterTheHook_andAcknowledgedAfterACrash() throws {
        try settle(expecting: 0, ["migrate"])
        let gemsToken = scriptProduct("pg-a", orderId: "GPA.PG-A")
        let unlockToken = scriptProduct("pg-b", product: unlock, orderId: "GPA.PG-B")
        try enqueuePlay("o-a", token: gemsToken)
        try settle(expecting: 0, ["reconcile"])
        XCTAssertEqual(try state("o-a"), "finished")
        XCTAssertEqual(fake.product(gemsToken)?.consumptionState, .consumed)
        XCTAssertEqual(finishes.map(\.deliveriesSoFar), [1])

        try enqueuePlay("o-b", token: unlockToken, product: unlock)
        tap.killAtFinish.withLock { $0 = true }
        XCTAssertNotEqual(try settle(["reconcile"]).status, 0)
        XCTAssertEqual(try order("o-b")["store_finish"], .string("pending"))
        try settle(expecting: 0, ["reconcile"])
        XCTAssertEqual(try state("o-b"), "finished")
        XCTAssertEqual(world.deliveries, ["GPA.PG-A o-a", "GPA.PG-B o-b"], "the hook ran again after the crash")
        XCTAssertEqual(fake.product(unlockToken)?.acknowledgementState, .acknowledged)
        let found = try settle(expecting: 0, ["status", "--purchase-token-file", "-", "--json"], stdin: Data(unlockToken.utf8))
        XCTAssertEqual((try JSONValue.parse(found.stdout)["orders"]?.arrayValue ?? []).compactMap { $0["order_id"]?.looseString }, ["o-b"])
        XCTAssertFalse(everything.contains("SECRETPLAYTOKEN"))
    }
}
