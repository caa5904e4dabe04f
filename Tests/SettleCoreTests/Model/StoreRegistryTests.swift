import XCTest
import SettleBase
@testable import SettleModel
import SettleTesting

final class StoreRegistryTests: XCTestCase {
    func testEveryTestStore_isRegisteredBeforeAnyTestRuns_inRegistrationOrder() {
        XCTAssertEqual(Store.allCases.map(\.rawValue), ["app_store", "google_play", "bogus"])
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
