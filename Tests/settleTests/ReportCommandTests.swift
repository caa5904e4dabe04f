import Foundation
import SettleApp
import SettleBase
import XCTest

/// `settle report` (issue 37) through the binary: verifyReceipt states no price, so the
/// configured one counts, and a product without one is counted without a price; `settle status`
/// has the line, the metrics file the gauges; a bad `--since` is a usage error.
final class ReportCommandTests: EndToEndTestCase {
    func testReport_countsConfiguredPrices_andOrdersWithoutOne_inTextJSONStatusAndMetrics() throws {
        let metrics = world.folder + "/settle.prom"
        try world.writeConfig(overrides: [("prices", .object([(world.coins, .string("0.99 USD"))])),
                                          ("metrics_file", .string(metrics))])
        try enqueueValid("o-1", transaction: "3000000000000001")
        try enqueueValid("o-2", transaction: "3000000000000002")
        try enqueueValid("o-3", transaction: "3000000000000003", product: world.premium)
        try settle(expecting: 0, ["reconcile"])

        let json = try JSONValue.parse(try settle(expecting: 0, ["report", "--json", "--since", "7d"]).stdout)
        XCTAssertEqual(json["recovered"]?["orders"], .number(3))
        XCTAssertEqual(json["recovered"]?["without_price"], .number(1))
        let usd = json["recovered"]?["by_currency"]?.arrayValue?.first
        XCTAssertEqual(usd?["currency"], .string("USD"))
        XCTAssertEqual(usd?["amount"], .string("1.98"))
        XCTAssertEqual(usd?["amount_milliunits"], .number(1980))
        XCTAssertEqual(json["clawed_back"]?["orders"], .number(0))

        let text = try settle(expecting: 0, ["report"]).stdout
        XCTAssertTrue(text.contains("recovered: 3 orders, 1.98 USD; 1 without a price"), text)
        XCTAssertTrue(text.contains("app_store") && text.contains("no price"), text)
        let status = try settle(expecting: 0, ["status"]).stdout
        XCTAssertTrue(status.contains("recovered (30 days): 3 orders, 1.98 USD; 1 without a price; clawed back: none"),
                      status)
        let statusJSON = try JSONValue.parse(try settle(expecting: 0, ["status", "--json"]).stdout)
        XCTAssertEqual(statusJSON["revenue"]?["recovered"]?["orders"], .number(3))
        let file = try String(contentsOfFile: metrics, encoding: .utf8)
        let app = "bundle_id=\"\(world.bundleId)\",store=\"app_store\""
        XCTAssertTrue(file.contains("settle_recovered_amount{\(app),currency=\"USD\"} 1.98"), file)
        XCTAssertTrue(file.contains("settle_recovered_orders{\(app),priced=\"false\"} 1"), file)
    }

    func testABadSince_isAUsageError() throws {
        XCTAssertTrue(try settle(expecting: 64, ["report", "--since", "yesterday"]).stderr.contains("--since takes"))
        XCTAssertTrue(try settle(expecting: 64, ["report", "--since", "2999-01-01"]).stderr.contains("in the past"))
        XCTAssertTrue(try settle(expecting: 64, ["report", "o-1"]).stderr.contains("unexpected argument"))
    }
}
