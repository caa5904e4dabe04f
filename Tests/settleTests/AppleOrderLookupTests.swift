import Foundation
import SettleApp
import SettleTesting
import XCTest
import SettleAppStoreSimulator

/// Support looks a customer up by the order id in Apple's receipt email.
final class AppleOrderLookupTests: EndToEndTestCase {
    func testStatusByAppleOrderId_findsThePurchasesWithApple_andTheOrdersHoldingThem() throws {
        try world.writeConfig(serverAPI: true)
        let bought = SimulatedSignedTransaction(transactionId: "2000000000000501", productId: world.coins, bundleId: world.bundleId,
                                                purchaseDateMs: 1_764_410_645_000)
        let other = SimulatedSignedTransaction(transactionId: "2000000000000502", productId: world.premium, bundleId: world.bundleId,
                                               purchaseDateMs: 1_764_410_646_000)
        world.simulator.script(appleOrder: "MQ5Q8W3X2Z", [bought, other])
        try settle(expecting: 0, ["enqueue", "--order", "o-123", "--user", "u-9", "--product", world.coins,
                                  "--transaction", "2000000000000501"])
        try settle(expecting: 0, ["enqueue", "--order", "o-unrelated", "--user", "u-8", "--product", world.coins,
                                  "--transaction", "2000000000000999"])
        let text = try settle(expecting: 0, ["status", "--transaction", "MQ5Q8W3X2Z"])
        XCTAssertTrue(text.stdout.contains("Apple order MQ5Q8W3X2Z (Production): 2 purchase(s)"), text.stdout)
        XCTAssertTrue(text.stdout.contains("transaction 2000000000000502"), text.stdout)
        XCTAssertTrue(text.stdout.contains("o-123"), text.stdout)
        XCTAssertFalse(text.stdout.contains("o-unrelated"), text.stdout)
        let json = try statusJSON(["--transaction", "MQ5Q8W3X2Z"])
        XCTAssertEqual(json["apple_order"]?["found"], .bool(true))
        XCTAssertEqual(json["apple_order"]?["purchases"]?.arrayValue?.count, 2)
        XCTAssertEqual(json["orders"]?.arrayValue?.compactMap { $0["order_id"] }, [.string("o-123")])
        XCTAssertTrue(world.simulator.serverRequests.isEmpty, "the lookup is its own endpoint, not Get Transaction Info")
    }

    func testStatusByAnUnknownAppleOrderId_saysSo_andListsNothing() throws {
        try world.writeConfig(serverAPI: true)
        try settle(expecting: 0, ["enqueue", "--order", "o-1", "--user", "u", "--product", world.coins, "--transaction", "2000000000000501"])
        let text = try settle(expecting: 0, ["status", "--transaction", "ZZZZ9999ZZ"])
        XCTAssertTrue(text.stdout.contains("Apple order lookup: not found"), text.stdout)
    }
}
