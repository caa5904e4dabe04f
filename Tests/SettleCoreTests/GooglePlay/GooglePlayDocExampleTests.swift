import Foundation
import XCTest
import SettleBase
@testable import SettleGooglePlay

/// Issue 36, bug 9: the plans example in docs/google-play.md is what a newcomer copies first; every
/// purchase in it must be one settle grants, not one it sets aside as `purchase_state_unclear`.
final class GooglePlayDocExampleTests: XCTestCase {
    private func plansExample() throws -> JSONValue {
        let path = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
            .appendingPathComponent("../../../docs/google-play.md").standardized.path
        let text = try String(contentsOfFile: path, encoding: .utf8)
        let blocks = text.components(separatedBy: "```json\n").dropFirst().map { $0.components(separatedBy: "```")[0] }
        let example = try XCTUnwrap(blocks.first { $0.contains("\"google_play\"") && $0.contains("\"subscriptions\"") },
                                    "docs/google-play.md no longer holds the plans example")
        return try XCTUnwrap(try JSONValue.parse(Data(example.utf8))["google_play"])
    }

    func testTheDocsSubscriptionAndProduct_areGranted_notLeftToAPerson() throws {
        let plans = try plansExample()
        guard case let .array(subscriptions)? = plans["subscriptions"], case let .array(products)? = plans["products"] else {
            return XCTFail("the example lists subscriptions and products")
        }
        XCTAssertFalse(subscriptions.isEmpty)
        for entry in subscriptions {
            let purchase = try XCTUnwrap(entry["purchase"].flatMap(SubscriptionPurchaseV2.init(json:)))
            let facts = PlayPurchaseFacts(subscription: purchase, productId: nil)
            XCTAssertEqual(facts.state, .purchased, "\(entry)")
            XCTAssertNotNil(facts.orderId)
        }
        for entry in products {
            let purchase = try XCTUnwrap(entry["purchase"].flatMap(ProductPurchase.init(json:)))
            XCTAssertEqual(PlayPurchaseFacts(product: purchase, productId: "gems_100").state, .purchased, "\(entry)")
        }
    }
}
