import XCTest
@testable import SettleModel
import SettleAppStore

/// `AppleEnvironment`: Apple's spelling in and out, and no environment for text Apple never sends.
final class AppleEnvironmentTests: XCTestCase {
    func testRawValues_areApplesSpelling_andEachRoundTrips() {
        XCTAssertEqual(AppleEnvironment.allCases.map(\.rawValue), ["Production", "Sandbox", "Xcode", "LocalTesting"])
        for environment in AppleEnvironment.allCases {
            XCTAssertEqual(AppleEnvironment(rawValue: environment.rawValue), environment)
            XCTAssertEqual("\(environment)", environment.rawValue, "status, logs and metrics print Apple's spelling")
        }
    }

    func testTextApplesNeverSends_isNoEnvironment_neverProduction() {
        for text in ["production", "PRODUCTION", "sandbox", "", " Production", "ProductionSandbox"] {
            XCTAssertNil(AppleEnvironment(rawValue: text), text)
        }
    }

    func testAnOrdersAppleEnvironment_isNilForTextSettleDoesNotKnow_andForAGooglePlayOrder_whileTheTextStays() {
        func order(_ environment: String?, store: Store = .appStore) -> Order {
            Order(orderId: "o-1", userId: "u-1", productId: "coins", state: .pending, attempts: 0, nextAttemptAt: 0,
                  environment: environment, createdAt: 0, updatedAt: 0, store: store)
        }
        XCTAssertEqual(order("Sandbox").appleEnvironment, .sandbox)
        XCTAssertEqual(order("Production").appleEnvironment, .production)
        XCTAssertNil(order("sandbox").appleEnvironment)
        XCTAssertEqual(order("sandbox").environment, "sandbox")
        XCTAssertNil(order("").appleEnvironment)
        XCTAssertNil(order(nil).appleEnvironment)
        XCTAssertNil(order("Sandbox", store: .googlePlay).appleEnvironment, "Google Play's test purchases are not Apple's sandbox")
    }
}
