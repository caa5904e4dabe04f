import XCTest
import SettleBase
@testable import SettleModel
import SettleTesting
import Foundation
@testable import SettleConfig
@testable import SettleLedger
@testable import SettleEngine

final class StoreRegistryTests: XCTestCase {
    func testEveryTestStore_isRegisteredBeforeAnyTestRuns_inRegistrationOrder() {
        XCTAssertEqual(Store.allCases.map(\.rawValue), ["app_store", "google_play", "huawei", "one_store", "bogus"])
        XCTAssertEqual(Store.bogus.displayName, "Bogus Store")
        XCTAssertEqual(Store.bogus.refundWindowSeconds, 2 * 86_400)
        XCTAssertTrue(Store.bogus.mustBeToldOfDelivery)
    }

    func testAStoreNoModuleRegistered_isNamedByItsRawValue_andWaits() {
        let unknown = Store(rawValue: "somewhere_else")
        XCTAssertNil(Store.registered("somewhere_else"))
        XCTAssertEqual(unknown.displayName, "somewhere_else")
        XCTAssertFalse(unknown.mustBeToldOfDelivery)
        XCTAssertEqual(Store.registered("google_play"), .googlePlay)
        XCTAssertEqual(StoreRateLimits.rate(PacerKey(store: "somewhere_else", group: "x", environment: "production"), configured: [:]), nil,
                       "a store with no descriptor publishes no rate")
        XCTAssertEqual(StoreRateLimits.rate(PacerKey(store: "bogus", group: "purchases", environment: "production"), configured: [:]), 100,
                       "a registered store is paced at its descriptor's published rate")
    }
}

/// A module's configuration section is the module's: the core keeps it raw, the module decodes
/// it and names its keys in its errors.
final class StoreSectionTests: XCTestCase {
    func testAModulesSection_isKeptForTheModule_whichDecodesItAndNamesItsKeys() throws {
        let world = try TestWorld()
        try world.writeConfig(hook: try world.hook("ok.sh", exit: 0))
        func configuration(_ bogus: String) throws -> Configuration {
            var json = try JSONValue.parse(Data(contentsOf: URL(fileURLWithPath: world.configPath)))
            if case let .object(members) = json { json = .object(members + [("bogus", try JSONValue.parse(Data(bogus.utf8)))]) }
            return try ConfigurationDecoder(path: world.configPath, environment: [:]).decode(json)
        }
        let off = try configuration(#"{"enabled": false}"#)
        XCTAssertEqual(off.storeSections["bogus"]?["enabled"], .bool(false))
        XCTAssertNoThrow(try BogusStoreModule.validate(off))
        let reconciler = try Reconciler.configured(off, ledger: try SQLiteLedger(path: world.ledgerPath, time: world.time),
                                                   environment: [:], log: .silent, modules: TestStores.modules)
        XCTAssertNil(reconciler.stores[.bogus], "a module whose section turns it off makes no adapter")
        XCTAssertNotNil(reconciler.stores[.appStore])
        XCTAssertThrowsError(try BogusStoreModule.validate(try configuration(#"{"enabled": "yes"}"#))) { error in
            XCTAssertTrue("\(error)".contains("bogus.enabled"), "\(error)")
        }
        XCTAssertThrowsError(try BogusStoreModule.validate(try configuration(#"{"enabld": true}"#))) { error in
            XCTAssertTrue("\(error)".contains("bogus.enabld"), "\(error)")
        }
    }
}
