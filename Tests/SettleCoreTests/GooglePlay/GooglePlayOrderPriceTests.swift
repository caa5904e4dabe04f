import Foundation
import XCTest
@testable import SettleBase
@testable import SettleModel
@testable import SettleLedger
@testable import SettleGooglePlay
@testable import SettleGooglePlaySimulator

/// `google_play.order_prices` (issue 37): with it, a verified Play purchase's price is its
/// order's `total` from `orders.get` on the fake Google; without it no such call is made and the
/// configured price (or none) is the order's. A `total` that is no price is unknown. Both engines
/// (`GooglePlayReconcilePostgresTests` runs these on PostgreSQL).
extension GooglePlayReconcileTests {
    /// Rewrites the configuration with `google_play.order_prices` and `prices` as given.
    private func configurePrices(orderPrices: Bool, prices: [(String, JSONValue)]) throws {
        let text = try String(contentsOfFile: world.configPath, encoding: .utf8)
        guard case var .object(members) = try JSONValue.parse(text),
              let index = members.firstIndex(where: { $0.0 == "google_play" }),
              case var .object(play) = members[index].1 else {
            return XCTFail("no google_play section")
        }
        play.append(("order_prices", .bool(orderPrices)))
        members[index].1 = .object(play)
        members.append(("prices", .object(prices)))
        try world.write("settle.json", JSONValue.object(members).serialized(pretty: true))
    }

    private func priceOf(_ ledger: any SettleLedger, _ orderId: String) throws -> Price? {
        try ledger.orderRecord(orderId)?.order.verified?.price
    }

    func testOrderPrices_readEachPurchasesTotal_andATotalThatIsNoPriceIsUnknown() throws {
        try configurePrices(orderPrices: true, prices: [])
        let ledger = try makeLedger()
        let totals: [(String, JSONValue)] = [
            ("GPA.3300-0000-0000-00001", .object([("currencyCode", .string("EUR")), ("units", .string("4")),
                                                  ("nanos", .number(990_000_000))])),
            ("GPA.3300-0000-0000-00002", .object([("currencyCode", .string("EUR")), ("units", .string("-4"))])),
            ("GPA.3300-0000-0000-00003", .object([("currencyCode", .string("<b>")), ("units", .string("4"))])),
            ("GPA.3300-0000-0000-00004", .object([("currencyCode", .string("EUR")), ("units", .string("1e30"))])),
        ]
        for (index, (orderId, total)) in totals.enumerated() {
            let token = product("priced-\(index)", orderId: orderId, account: "u-\(index)")
            var order = PlayOrder(orderId: orderId, purchaseToken: token, state: "PROCESSED",
                                  lineItems: [.init(productId: gems)])
            order.total = total
            fake.script(order: order)
            try enqueue(ledger, "p-\(index)", user: "u-\(index)", token: token, account: "u-\(index)")
        }
        try pass(ledger)
        XCTAssertEqual(try priceOf(ledger, "p-0"), Price(milliunits: 4990, currency: "EUR", source: .store))
        for index in 1..<totals.count {
            XCTAssertEqual(try ledger.orderRecord("p-\(index)")?.order.state, .finished, "p-\(index): still delivered")
            XCTAssertNil(try priceOf(ledger, "p-\(index)"), "p-\(index): no price is guessed")
        }
        let asked = fake.calls.filter { $0.path.contains("/orders/") }.count
        XCTAssertEqual(asked, totals.count, "one orders.get a purchase")
    }

    func testWithoutOrderPrices_noOrderIsAskedFor_andTheConfiguredPriceCounts() throws {
        try configurePrices(orderPrices: false, prices: [(gems, .string("0.99 EUR"))])
        let ledger = try makeLedger()
        let token = product("configured", orderId: "GPA.3300-0000-0000-00009", account: "u-9", quantity: 2)
        var order = PlayOrder(orderId: "GPA.3300-0000-0000-00009", purchaseToken: token, state: "PROCESSED",
                              lineItems: [.init(productId: gems)])
        order.total = .object([("currencyCode", .string("EUR")), ("units", .string("4"))])
        fake.script(order: order)
        try enqueue(ledger, "c-9", user: "u-9", token: token, account: "u-9")
        try pass(ledger)
        XCTAssertEqual(try priceOf(ledger, "c-9"), Price(milliunits: 1980, currency: "EUR", source: .configured))
        XCTAssertTrue(fake.calls.filter { $0.path.contains("/orders/") }.isEmpty, "no orders.get without order_prices")
    }
}
