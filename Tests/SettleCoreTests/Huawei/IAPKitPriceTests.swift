import Foundation
import XCTest
import SettleBase
import SettleModel
import SettleHuawei
import SettleTesting

/// Huawei's purchase order states the customer's price (`price`, the amount times 100, and
/// `currency`): the verified purchase carries it (issue 37), through the fake IAP Kit over
/// loopback; one that is no price is unknown and the purchase is still verified.
extension IAPKitVerifierTests {
    func testAPurchaseOrdersPriceAndCurrency_areTheVerifiedPurchasesPrice() throws {
        fake.script(order: purchase("po-priced", extra: [("price", .number(880)), ("currency", .string("SGD"))]))
        let purchase = verified(try verifier(binding: UserBinding(tokenSource: .userId)).verify(order("po-priced")))
        XCTAssertEqual(purchase?.price, Price(milliunits: 8800, currency: "SGD", source: .store))
        XCTAssertEqual(purchase?.price?.text, "8.80 SGD")
    }

    func testAPriceThatIsNoPrice_isUnknown_andThePurchaseIsStillVerified() throws {
        let absurd: [(String, [(String, JSONValue)])] = [
            ("po-script", [("price", .number(880)), ("currency", .string("<script>"))]),
            ("po-huge", [("price", .number(Int64(1) << 60)), ("currency", .string("USD"))]),
            ("po-no-currency", [("price", .number(880))]),
        ]
        for (id, extra) in absurd {
            fake.script(order: purchase(id, extra: extra))
            let purchase = verified(try verifier(binding: UserBinding(tokenSource: .userId)).verify(order(id)))
            XCTAssertNotNil(purchase, id)
            XCTAssertNil(purchase?.price, id)
        }
    }
}
