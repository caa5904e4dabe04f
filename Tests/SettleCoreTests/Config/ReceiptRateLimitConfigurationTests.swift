import SettleTesting
import XCTest
@testable import SettleApp
@testable import SettleBase
@testable import SettleModel
@testable import SettleConfig
@testable import SettleEngine
@testable import SettleAppStore
@testable import SettleAppStoreModule

/// `receipt_api.rate_limits` (issue 38): the ceiling under which the pacer learns verifyReceipt's
/// rate, like `server_api.rate_limits` for the Server API's published ones.
final class ReceiptRateLimitConfigurationTests: XCTestCase {
    nonisolated(unsafe) var world: TestWorld!
    override func setUpWithError() throws { world = try TestWorld() }
    override func tearDown() { world = nil }

    func load(_ rateLimits: JSONValue?) throws -> Configuration {
        try world.writeConfig()
        var receiptAPI: [(String, JSONValue)] = [
            ("production_url", .string(world.simulator.productionURL)),
            ("sandbox_url", .string(world.simulator.sandboxURL)),
            ("shared_secret_file", .string("shared-secret")),
        ]
        if let rateLimits { receiptAPI.append(("rate_limits", rateLimits)) }
        try world.writeConfig(overrides: [("receipt_api", .object(receiptAPI))])
        return try world.configuration()
    }

    func testAbsent_isTheDefaultCeiling_learnedUnder() throws {
        let c = try load(nil)
        XCTAssertEqual(c.receiptAPI?.rateLimits, [:])
        let rates = Reconciler.storeRates(c, modules: TestStores.modules)
        XCTAssertEqual(rates(PacerKey(store: "app_store", group: "verify_receipt", environment: "Production")), 1000)
    }

    func testAConfiguredCeiling_pacesVerifyReceipt_andSandboxAtATenth() throws {
        let c = try load(.object([("verify_receipt", .number(300))]))
        XCTAssertEqual(c.receiptAPI?.rateLimits, ["verify_receipt": 300])
        let rates = Reconciler.storeRates(c, modules: TestStores.modules)
        XCTAssertEqual(rates(PacerKey(store: "app_store", group: "verify_receipt", environment: "Production")), 300)
        XCTAssertEqual(rates(PacerKey(store: "app_store", group: "verify_receipt", environment: "Sandbox")), 30)
        XCTAssertEqual(rates(PacerKey(store: "app_store", group: "transaction_info", environment: "Production")), 50,
                       "the Server API keeps its published rate")
        let line = "receipt_api.rate_limits: verify_receipt 300 (configured) "
            + "(a ceiling in production: the rate is learned from Apple's 429s)"
        XCTAssertTrue(AppStoreModule.describe(c).contains(line), "\(AppStoreModule.describe(c))")
    }

    func testAServerAPIGroup_orAZeroRate_isAnErrorNamingItsKey() {
        XCTAssertThrowsError(try load(.object([("transaction_info", .number(5))]))) { error in
            let expected = "receipt_api.rate_limits.transaction_info: unknown endpoint group "
                + "(expected one of verify_receipt)"
            XCTAssertTrue("\(error)".contains(expected), "\(error)")
        }
        XCTAssertThrowsError(try load(.object([("verify_receipt", .number(0))]))) { error in
            XCTAssertTrue("\(error)".contains("receipt_api.rate_limits.verify_receipt"), "\(error)")
        }
    }
}
