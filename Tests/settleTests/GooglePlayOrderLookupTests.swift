import Foundation
import SettleApp
import SettleTesting
import XCTest
import SettleBase
import SettleGooglePlay
import SettleModel

/// Support looks a Google Play customer up by the order id in Google's receipt e-mail (`GPA.…`):
/// `orders.get` names the purchase token, which finds the orders holding it; the token is never shown.
class GooglePlayOrderLookupTests: GooglePlayTestCase {
    func testStatusByGoogleOrderId_findsTheOrderHoldingItsToken_beforeSettleVerifiedIt_andNeverPrintsTheToken() throws {
        let token = scriptProduct("lk", orderId: "GPA.1111-2222-3333-44444", account: "u-1")
        fake.script(order: PlayOrder(orderId: "GPA.1111-2222-3333-44444", purchaseToken: PurchaseToken(token)!, state: "PROCESSED",
                                     createTime: "2026-12-01T10:00:00Z", lineItems: [.init(productId: gems, quantity: 1)]))
        try enqueuePlay("o-1", token: token)
        try enqueuePlay("o-other", token: scriptProduct("other", orderId: "GPA.9999-0000-0000-00000"))
        let text = try settle(expecting: 0, ["status", "--transaction", "GPA.1111-2222-3333-44444"])
        XCTAssertTrue(text.stdout.contains("Google Play order GPA.1111-2222-3333-44444 (PROCESSED)"), text.stdout)
        XCTAssertTrue(text.stdout.contains(PurchaseToken(token)!.fingerprint), text.stdout)
        XCTAssertTrue(text.stdout.contains("obfuscatedExternalAccountId u-1"), text.stdout)
        XCTAssertTrue(text.stdout.contains("o-1"), text.stdout)
        XCTAssertFalse(text.stdout.contains("no order in the ledger holds"), text.stdout)
        let json = try statusJSON(["--transaction", "GPA.1111-2222-3333-44444"])
        XCTAssertEqual(json["google_play_order"]?["found"], .bool(true))
        XCTAssertEqual(json["google_play_order"]?["held_by_orders"], .number(1))
        XCTAssertEqual(json["orders"]?.arrayValue?.compactMap { $0["order_id"] }, [.string("o-1")])
        // Once verified, the order is found by the id it was verified as, as before.
        try settle(expecting: 0, ["reconcile"])
        XCTAssertEqual(try statusJSON(["--transaction", "GPA.1111-2222-3333-44444"])["orders"]?.arrayValue?.compactMap { $0["order_id"] },
                       [.string("o-1")])
        XCTAssertTrue(fake.calls.contains { $0.path.hasSuffix("/orders/GPA.1111-2222-3333-44444") })
        XCTAssertFalse(everything.contains("SECRETPLAYTOKEN"), "a purchase token was printed")
    }

    func testStatusByAGoogleOrderIdNoOrderHolds_saysWhosePurchaseItIs_andThatNoOrderHoldsIt() throws {
        let token = scriptProduct("lost", product: unlock, orderId: "GPA.2222-3333-4444-55555", account: "u-7")
        fake.script(order: PlayOrder(orderId: "GPA.2222-3333-4444-55555", purchaseToken: PurchaseToken(token)!, state: "PROCESSED",
                                     lineItems: [.init(productId: unlock, purchaseOptionId: "buy", quantity: 1)]))
        try enqueuePlay("o-unrelated", token: scriptProduct("unrelated"))
        let text = try settle(expecting: 0, ["status", "--transaction", "GPA.2222-3333-4444-55555"])
        XCTAssertTrue(text.stdout.contains("obfuscatedExternalAccountId u-7"), text.stdout)
        XCTAssertTrue(text.stdout.contains("no order in the ledger holds this purchase"), text.stdout)
        let json = try statusJSON(["--transaction", "GPA.2222-3333-4444-55555"])
        XCTAssertEqual(json["google_play_order"]?["obfuscated_account_id"], .string("u-7"))
        XCTAssertEqual(json["google_play_order"]?["held_by_orders"], .number(0))
        XCTAssertEqual(json["orders"]?.arrayValue?.count, 0)
        XCTAssertFalse(everything.contains("SECRETPLAYTOKEN"), "a purchase token was printed")
    }

    func testStatusByAnUnknownGoogleOrderId_saysGoogleKnowsNone() throws {
        try enqueuePlay("o-1", token: scriptProduct("known"))
        let text = try settle(expecting: 0, ["status", "--transaction", "GPA.0000-0000-0000-00001"])
        XCTAssertTrue(text.stdout.contains("Google Play order lookup: not found"), text.stdout)
        XCTAssertEqual(try statusJSON(["--transaction", "GPA.0000-0000-0000-00001"])["google_play_order"]?["found"], .bool(false))
    }
}

/// The same lookups on a PostgreSQL ledger.
final class GooglePlayOrderLookupPostgresTests: GooglePlayOrderLookupTests {
    var schema = ""

    override func setUpWithError() throws {
        try super.setUpWithError()
        let fresh = try TestPostgres.freshSchema()
        schema = fresh.schema
        try writePlayConfig(extra: [("ledger", .string(fresh.url))])
        try settle(expecting: 0, ["migrate"])
    }

    override func tearDownWithError() throws {
        TestPostgres.drop(schema: schema)
        try super.tearDownWithError()
    }

    override func testStatusByGoogleOrderId_findsTheOrderHoldingItsToken_beforeSettleVerifiedIt_andNeverPrintsTheToken() throws {
        try super.testStatusByGoogleOrderId_findsTheOrderHoldingItsToken_beforeSettleVerifiedIt_andNeverPrintsTheToken()
    }

    override func testStatusByAGoogleOrderIdNoOrderHolds_saysWhosePurchaseItIs_andThatNoOrderHoldsIt() throws {
        try super.testStatusByAGoogleOrderIdNoOrderHolds_saysWhosePurchaseItIs_andThatNoOrderHoldsIt()
    }

    override func testStatusByAnUnknownGoogleOrderId_saysGoogleKnowsNone() throws {
        try super.testStatusByAnUnknownGoogleOrderId_saysGoogleKnowsNone()
    }
}
