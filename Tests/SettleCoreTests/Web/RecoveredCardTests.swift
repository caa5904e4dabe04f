import Foundation
import SettleTesting
import XCTest
@testable import SettleApp
@testable import SettleBase
@testable import SettleModel
@testable import SettleLedger
@testable import SettleEngine

/// Issue 37: the overview's "Recovered, last 30 days" card and `/api/status`'s `revenue`, from
/// the same report as `settle status`, per currency and with the orders without a price.
final class RecoveredCardTests: WebConsoleTestCase {
    func testTheOverview_showsWhatSettleRecovered_perCurrency_andTheOrdersWithoutAPrice_onBothEngines() throws {
        try onEachEngine { engine in
            let shop = BogusStoreModule.shop
            shop.reset()
            try world.writeConfig(hook: try world.hook("card-\(engine.name).sh", exit: 0))
            shop.sell("\(engine.name)-1", productId: world.coins, to: "u-1",
                      price: Price(milliunits: 4990, currency: "USD", source: .store))
            shop.sell("\(engine.name)-2", productId: world.coins, to: "u-1")
            for (id, sale) in [("card-1", "\(engine.name)-1"), ("card-2", "\(engine.name)-2")] {
                var order = NewOrder(orderId: id, userId: "u-1", productId: world.coins, store: .bogus)
                order.storeProof = BogusStoreAdapter.proof(sale: sale)
                _ = try engine.ledger.enqueue(order)
            }
            _ = try world.reconciler(ledger: engine.ledger).runPass()
            let base = try start(engine.ledger)
            let page = text(try get(base, "/"))
            let card = "<section class=\"card\" id=\"recovered\"><h2>Recovered, last 30 days</h2>"
            XCTAssertTrue(page.contains(card), engine.name)
            let usd = "<td>recovered</td><td>USD</td><td class=\"num\">1</td><td class=\"num\">4.99</td>"
            XCTAssertTrue(page.contains(usd), "\(engine.name): \(page)")
            XCTAssertTrue(page.contains("<td>recovered</td><td>no price</td><td class=\"num\">1</td>"), engine.name)
            let status = try JSONValue.parse(text(try get(base, "/api/status")))
            XCTAssertEqual(status["revenue"]?["recovered"]?["orders"], .number(2), engine.name)
        }
    }
}
