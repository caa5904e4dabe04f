import Foundation
import SettleApp
import SettleTesting
import XCTest
import SettleBase
import SettleAppStoreSimulator

/// Each store has its own breaker: an outage of one never holds back the other's orders, in the
/// pass where it starts nor in the passes it lasts (the breaker, kept in the ledger, holds back
/// only its own store).
final class StoreOutageTests: GooglePlayTestCase {
    func testAppleOutage_opensTheAppStoreBreakerOnly_andPlayOrdersStillSettle_thatPassAndTheNext() throws {
        let outage: [SimulatedAnswer] = Array(repeating: .http(503), count: 40)
        for i in 1...6 { try enqueueValid("as-\(i)", transaction: "200000000000000\(i)", answers: outage) }
        for name in ["a", "b", "c"] { try enqueuePlay("gp-\(name)", token: scriptProduct(name, orderId: "GPA.\(name)")) }

        let first = try settle(["reconcile"])
        XCTAssertEqual(first.status, 69, "Apple never answered: the operator hears of it\n\(first.stderr)")
        XCTAssertTrue(first.stderr.contains("Apple was unavailable") || first.stderr.contains("App Store breaker"), first.stderr)
        for name in ["a", "b", "c"] { XCTAssertEqual(try state("gp-\(name)"), "finished", "gp-\(name)") }
        for i in 1...6 {
            XCTAssertEqual(try state("as-\(i)"), "pending")
            XCTAssertEqual(try attempts("as-\(i)"), 0, "an outage uses no attempt")
        }
        let status = try statusJSON()
        XCTAssertEqual(status["health"]?["app_store"]?["breaker"], .string("open"))
        XCTAssertEqual(status["health"]?["google_play"]?["breaker"], .string("closed"))

        // The next pass: Apple is held back by its breaker, Google's purchases still settle.
        let askedApple = world.simulator.requests.count
        try enqueuePlay("gp-d", token: scriptProduct("d", orderId: "GPA.d"))
        let second = try settle(["reconcile"])
        XCTAssertEqual(second.status, 69, second.stderr)
        XCTAssertTrue(second.stderr.contains("App Store breaker is open until"), second.stderr)
        XCTAssertEqual(try state("gp-d"), "finished")
        XCTAssertEqual(world.simulator.requests.count, askedApple, "no App Store order was claimed while its breaker is open")
        XCTAssertEqual(Set(world.deliveries), Set(["GPA.a gp-a", "GPA.b gp-b", "GPA.c gp-c", "GPA.d gp-d"]))
    }

    func testGoogleOutage_opensTheGooglePlayBreakerOnly_andAppStoreOrdersStillSettle() throws {
        try enqueuePlay("gp-1", token: scriptProduct("one", orderId: "GPA.one"))
        try enqueueValid("as-1", transaction: "2000000000000001")
        // Google is down and asks for two minutes of quiet (a 503 with Retry-After; a 429 would be
        // settle's pace): its breaker opens at once, for at least that long.
        fake.failNextAPICalls(.status(503, retryAfter: "120"))

        let first = try settle(["reconcile"])
        XCTAssertEqual(first.status, 69, first.stderr)
        XCTAssertTrue(first.stderr.contains("Google"), first.stderr)
        XCTAssertEqual(try state("as-1"), "finished")
        XCTAssertEqual(try state("gp-1"), "pending")
        XCTAssertEqual(try attempts("gp-1"), 0)
        let status = try statusJSON()
        XCTAssertEqual(status["health"]?["google_play"]?["breaker"], .string("open"))
        XCTAssertEqual(status["health"]?["app_store"]?["breaker"], .string("closed"))
        XCTAssertEqual(status["apple"]?["breaker"], .string("closed"))

        // Inside Google's two minutes a new pass leaves Google alone and settles Apple's orders.
        let callsBefore = fake.calls.count
        try enqueueValid("as-2", transaction: "2000000000000002")
        let second = try settle(["reconcile"])
        XCTAssertTrue(second.stderr.contains("Google Play breaker is open until"), second.stderr)
        XCTAssertEqual(try state("as-2"), "finished")
        XCTAssertEqual(try state("gp-1"), "pending")
        XCTAssertEqual(fake.calls.count, callsBefore, "Google was not asked during the cool-down it asked for")

        // Named, the order is tried whatever the breaker says: Google answers, and its breaker closes.
        try settle(expecting: 0, ["reconcile", "--order", "gp-1"])
        XCTAssertEqual(try state("gp-1"), "finished")
        XCTAssertEqual(try statusJSON()["health"]?["google_play"]?["breaker"], .string("closed"))
    }

    func testGooglesRefusedCredentials_stopGooglePlayOnly_theAppStoreOrdersSettle_andTheTokenIsNotAskedForAgainAndAgain() throws {
        for name in ["p", "q", "r"] { try enqueuePlay("gp-\(name)", token: scriptProduct(name, orderId: "GPA.\(name)")) }
        try enqueueValid("zz-as-1", transaction: "2000000000000001")
        try enqueueValid("zz-as-2", transaction: "2000000000000002")
        // The service account's key was revoked: Google's token endpoint answers invalid_grant.
        fake.failNextTokenRequests(.status(400, reason: "invalid_grant"), .status(400, reason: "invalid_grant"),
                                   .status(400, reason: "invalid_grant"))
        // Play's orders sort first (the claim takes due orders by id): the fault comes before any App Store order.
        let run = try settle(["reconcile"])
        XCTAssertEqual(run.status, 78, "a configuration fault is still the one-shot's exit 78\n\(run.stderr)")
        XCTAssertEqual(try state("zz-as-1"), "finished", "Google's fault never stops the App Store")
        XCTAssertEqual(try state("zz-as-2"), "finished")
        for name in ["p", "q", "r"] {
            XCTAssertEqual(try state("gp-\(name)"), "pending")
            XCTAssertEqual(try attempts("gp-\(name)"), 0)
        }
        XCTAssertLessThanOrEqual(fake.tokenRequests, 1, "Google Play stopped at its first refusal: not asked for a token per order")
        let google = try XCTUnwrap(try statusJSON()["health"]?["google_play"])
        XCTAssertEqual(google["breaker"], .string("open"))
        XCTAssertTrue(google["last_error"]?.looseString?.contains("configuration fault") == true, "\(google)")
    }
}
