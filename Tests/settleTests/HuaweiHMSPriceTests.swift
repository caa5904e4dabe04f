import Foundation
import XCTest
import SettleBase
import SettleTesting
import SettleHuaweiSimulator

/// HMS IAP's purchase data states `price` (times 100) and `currency` (issue 37): `settle report`
/// counts it; a purchase whose price is no price is delivered and counted without one.
extension HuaweiHMSTests {
    func testHMSPurchaseDataPrice_isWhatTheReportCounts_andAnAbsurdOneIsWithoutAPrice() throws {
        let purchases: [(String, JSONValue, String, String)] = [("p1", .number(499), "EUR", "u-1"),
                                                                 ("p2", .string("lots"), "EUR", "u-2")]
        for (name, price, currency, user) in purchases {
            let token = token("hms-" + name)
            hms.script(purchase: .object([
                ("applicationId", .string(Self.appId)), ("orderId", .string("HMS.\(name)")),
                ("productId", .string(coins)),
                ("purchaseToken", .string(token)), ("purchaseState", .number(0)), ("kind", .number(0)),
                ("purchaseTime", .number((world.time.unixSeconds - 60) * 1000)), ("developerPayload", .string(user)),
                ("consumptionState", .number(0)), ("confirmed", .number(0)), ("price", price),
                ("currency", .string(currency)),
            ]))
            try enqueueHMS("o-\(name)", token: token, user: user)
        }
        try settle(expecting: 0, ["reconcile"])
        XCTAssertEqual(try state("o-p1"), "finished")
        XCTAssertEqual(try state("o-p2"), "finished", "a price that is no price never holds a purchase back")
        let report = try JSONValue.parse(try settle(expecting: 0, ["report", "--json"]).stdout)
        XCTAssertEqual(report["recovered"]?["orders"], .number(2))
        XCTAssertEqual(report["recovered"]?["without_price"], .number(1))
        XCTAssertEqual(report["recovered"]?["by_currency"]?.arrayValue?.first?["amount"], .string("4.99"))
        XCTAssertEqual(report["recovered"]?["by_day"]?.arrayValue?.first?["store"], .string("huawei"))
    }
}
