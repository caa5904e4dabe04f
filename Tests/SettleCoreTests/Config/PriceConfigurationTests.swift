import SettleTesting
import XCTest
@testable import SettleBase
@testable import SettleModel
@testable import SettleConfig

/// `prices` (issue 37): one unit's price a product, checked as a person writes it; and `Price`,
/// the integer amount every store's spelling becomes.
final class PriceConfigurationTests: XCTestCase {
    var world: TestWorld!

    override func setUpWithError() throws { world = try TestWorld() }
    override func tearDown() { world = nil }

    func error(_ prices: JSONValue) -> String {
        do {
            try world.writeConfig(overrides: [("prices", prices)])
            _ = try world.configuration()
            return "no error"
        } catch {
            return "\(error)"
        }
    }

    func testPrices_areReadAsIntegerMilliunits_andScaledByQuantity() throws {
        let prices: JSONValue = .object([(world.coins, .string("4.99 USD")), (world.premium, .string("1200 JPY"))])
        try world.writeConfig(overrides: [("prices", prices)])
        let c = try world.configuration()
        XCTAssertEqual(c.prices[world.coins], Price(milliunits: 4990, currency: "USD", source: .configured))
        XCTAssertEqual(c.prices[world.premium], Price(milliunits: 1_200_000, currency: "JPY", source: .configured))
        XCTAssertEqual(c.configuredPrice(of: world.coins, quantity: 3)?.milliunits, 14970)
        XCTAssertNil(c.configuredPrice(of: world.monthly, quantity: 1), "a product without a price has none")
    }

    func testABadPrice_isRefusedWithItsKeyAndWhy() {
        let coins = world.coins
        XCTAssertTrue(error(.object([(coins, .string("-4.99 USD"))])).contains("never negative"))
        XCTAssertTrue(error(.object([(coins, .string("4.999 USD"))])).contains("USD has 2 digits after the point"))
        XCTAssertTrue(error(.object([(coins, .string("12.5 JPY"))])).contains("JPY has 0 digits after the point"))
        XCTAssertTrue(error(.object([(coins, .string("4.99 usd"))])).contains("is not AMOUNT CURRENCY"))
        XCTAssertTrue(error(.object([(coins, .string("4.99 <script>"))])).contains("is not AMOUNT CURRENCY"))
        XCTAssertTrue(error(.object([(coins, .string("1e30 USD"))])).contains("not a plain decimal number"))
        XCTAssertTrue(error(.object([(coins, .string("99999999999999 USD"))])).contains("not a plain decimal number"))
        XCTAssertTrue(error(.object([(coins, .number(4.99))])).contains("expected a non-empty string"))
        XCTAssertTrue(error(.object([("not-a-product", .string("1.00 USD"))])).contains("is not one of products"))
        XCTAssertTrue(error(.string("4.99 USD")).contains("prices"))
        XCTAssertEqual(error(.object([(coins, .string("0.000 KWD"))])), "no error")
    }

    func testPrice_formatsWithTheCurrencysDigits_andRefusesWhatIsNoPrice() {
        XCTAssertEqual(Price(milliunits: 4990, currency: "USD", source: .store)?.text, "4.99 USD")
        XCTAssertEqual(Price(milliunits: 4900, currency: "USD", source: .store)?.text, "4.90 USD")
        XCTAssertEqual(Price(milliunits: 1_200_000, currency: "JPY", source: .store)?.text, "1200 JPY")
        XCTAssertEqual(Price(milliunits: 1_500, currency: "KWD", source: .store)?.text, "1.500 KWD")
        XCTAssertEqual(Price(milliunits: 4995, currency: "USD", source: .store)?.text, "4.995 USD",
                       "never rounded away")
        XCTAssertEqual(Price(hundredths: 880, currency: "SGD", source: .store)?.milliunits, 8800)
        XCTAssertNil(Price(milliunits: -1, currency: "USD", source: .store))
        XCTAssertNil(Price(milliunits: Price.maxMilliunits + 1, currency: "USD", source: .store))
        XCTAssertNil(Price(hundredths: .max, currency: "USD", source: .store))
        XCTAssertNil(Price(milliunits: 1, currency: "US", source: .store))
        XCTAssertNil(Price(milliunits: 1, currency: "ÜSD", source: .store))
        XCTAssertNil(Price(decimal: "1.2.3", currency: "USD", source: .store))
        XCTAssertNil(Price(decimal: " 1", currency: "USD", source: .store))
        XCTAssertNil(Price(decimal: "+1", currency: "USD", source: .store))
        XCTAssertNil(Price(decimal: "1.", currency: "USD", source: .store))
        XCTAssertEqual(Price(decimal: "10000", currency: "KRW", source: .store)?.milliunits, 10_000_000)
        XCTAssertEqual(Price.format(milliunits: 7960, currency: "USD"), "7.96")
    }
}
