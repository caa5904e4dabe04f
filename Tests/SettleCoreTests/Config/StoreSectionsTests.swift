import SettleTesting
import XCTest
@testable import SettleBase
@testable import SettleModel
@testable import SettleConfig
@testable import SettleAppStore
@testable import SettleGooglePlay

/// The stores' own configuration sections (`ConfigurationSection`) and the product rules their
/// descriptors give: decoded, listed and checked as when the core decoded them itself.
final class StoreSectionsTests: XCTestCase {
    var world: TestWorld!

    override func setUpWithError() throws { world = try TestWorld() }
    override func tearDown() { world = nil }

    func error(_ text: String) -> String {
        do {
            try world.write("c.json", text)
            _ = try Configuration.load(path: world.folder + "/c.json", environment: [:])
            return "no error"
        } catch {
            return "\(error)"
        }
    }

    func testEachStoresSections_areRegisteredWithItsModule_inRegistrationOrder() {
        let keys = ConfigurationSections.all.map(\.key)
        XCTAssertEqual(keys, ["receipt_api", "server_api", "consumption", "google_play", "huawei", "one_store"])
    }

    func testDecodedSections_areReadThroughTheStoresAccessors() throws {
        try world.writeConfig(serverAPI: true)
        let c = try world.configuration()
        XCTAssertNotNil(c.receiptAPI)
        XCTAssertEqual(c.serverAPI?.finishTransactions, true)
        XCTAssertNil(c.googlePlay)
        XCTAssertNotNil(c.storeSettings["server_api"])
    }

    func testAConsumptionSectionAlone_configuresNoStore() {
        let message = error("""
            {"ledger": "l.sqlite3", "bundle_id": "b", "consumption": {"respond": false},
             "products": {"p": {"type": "consumable"}}, "delivery": {"command": ["/bin/true"]}}
            """)
        XCTAssertTrue(message.contains("receipt_api: required key is missing (configure receipt_api and/or server_api "
                                       + "to verify with Apple)"), message)
    }

    func testABrokenServerAPI_isListedWithTheConsumptionItsAbsenceBreaks() {
        let message = error("""
            {"ledger": "l.sqlite3", "bundle_id": "b", "receipt_api": {"shared_secret_file": "s"},
             "server_api": {"issuer_id": "i"},
             "consumption": {"respond": true, "customer_consented": true},
             "products": {"p": {"type": "consumable"}}, "delivery": {"command": ["/bin/true"]}}
            """)
        XCTAssertTrue(message.contains("server_api.key_id: required key is missing"), message)
        XCTAssertTrue(message.contains("consumption.respond: answering refund requests needs server_api"), message)
    }

    func testProductStores_comeFromTheDescriptors() {
        XCTAssertEqual(StoreRegistry.defaultProductStores, [.appStore])
        XCTAssertEqual(StoreRegistry.productStores(alias: "both"), [.appStore, .googlePlay])
        XCTAssertNil(StoreRegistry.productStores(alias: "all"))
        XCTAssertEqual(StoreRegistry.purchaseOptionStores.map(\.store), [.googlePlay])
    }

    func testProductRules_keepTheirMessages() {
        func product(_ members: String) -> String {
            error("""
                {"ledger": "l.sqlite3", "bundle_id": "b", "receipt_api": {"shared_secret_file": "s"},
                 "products": {"p": {"type": "consumable", \(members)}}, "delivery": {"command": ["/bin/true"]}}
                """)
        }
        let unknown = product(#""store": "amazon""#)
        XCTAssertTrue(unknown.contains(#"products.p.store: "amazon" is not one of "app_store", "google_play""#), unknown)
        XCTAssertTrue(unknown.contains(#", "both""#), unknown)
        let option = product(#""purchase_option": "buy""#)
        XCTAssertTrue(option.contains("products.p.purchase_option: only a Google Play one-time product has purchase options"),
                      option)
        let play = product(#""store": "both""#)
        XCTAssertTrue(play.contains("products.p.store: a google_play product needs the google_play section"), play)
    }
}
