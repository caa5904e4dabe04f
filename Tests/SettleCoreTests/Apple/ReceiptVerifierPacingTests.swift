import SettleTesting
import XCTest
@testable import SettleApp
@testable import SettleBase
@testable import SettleModel
@testable import SettleConfig
@testable import SettleAppStore
@testable import SettleAppStoreSimulator

/// verifyReceipt through the pacer (issue 38), against the simulator over loopback HTTP with a
/// pacer on the test clock: a 429's Retry-After in seconds, as an HTTP date or garbage paces the
/// order and lowers the learned rate; one asking for more than a minute is Apple's to hold (the
/// breaker, capped at a day); a 503 slows the bucket and is still Apple-wide.
final class ReceiptVerifierPacingTests: XCTestCase {
    var world: TestWorld!
    let key = PacerKey(store: "app_store", group: "verify_receipt", environment: "Production")

    override func setUpWithError() throws {
        world = try TestWorld()
        try world.writeConfig()
    }
    override func tearDown() { world = nil }

    func verify(_ answers: [SimulatedAnswer], pacer: Pacer) throws -> Verification {
        let bought = SimulatedTransaction(productId: world.coins, transactionId: "100")
        let receipt = world.scriptReceipt("r-\(UUID().uuidString)", [bought], answers: answers)
        let client = HTTPClient(configuration: HTTPClientConfiguration(connectTimeout: 2, totalTimeout: 3))
        let matcher = ReceiptMatcher(bundleId: world.bundleId, acceptSandbox: true,
                                     eligibility: PurchaseEligibility(products: [world.coins: .consumable]))
        var verifier = ReceiptVerifier(productionURL: world.simulator.productionURL,
                                       sandboxURL: world.simulator.sandboxURL, sharedSecret: Secret(world.sharedSecret),
                                       matcher: matcher, client: client, receiptText: { _ in receipt })
        verifier.pacer = pacer
        let order = Order(orderId: "o-1", userId: "u", productId: world.coins, requestedTransactionId: "100",
                          receiptSHA256: "h", signedTransaction: nil, state: .verifying, attempts: 0, nextAttemptAt: 0,
                          reason: nil, lastError: nil, environment: nil, verified: nil, createdAt: 0, updatedAt: 0,
                          finishedAt: nil, lease: nil)
        return try verifier.verify(order)
    }

    func httpDate(_ seconds: Double) -> String {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "GMT")
        formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss zzz"
        return formatter.string(from: world.time.now.addingTimeInterval(seconds))
    }

    func testA429WithRetryAfterInSeconds_pacesTheOrder_andHalvesTheLearnedRate() throws {
        let pacer = try world.pacer()
        let v = try verify([.http(429, retryAfter: "2")], pacer: pacer)
        let expected = "paced: app_store verify_receipt (Production) at 500/s (production verifyReceipt "
            + "answered HTTP 429, Retry-After 2.0 s; the learned rate was lowered)"
        XCTAssertEqual(v.outcome, .paced(expected))
        XCTAssertTrue(v.pacerAdapted, "the pass goes on at the lowered rate")
        XCTAssertFalse(v.storeAnswered, "nothing about the order: no attempt")
        let bucket = try XCTUnwrap(pacer.bucket(key))
        XCTAssertEqual(bucket.throttles, 1)
        XCTAssertEqual(bucket.notBefore, world.time.now.timeIntervalSince1970 + 2, accuracy: 0.01)
    }

    func testA429WithAnHTTPDate_orGarbage_isPacedToo() throws {
        let pacer = try world.pacer()
        let dated = try verify([.http(429, retryAfter: httpDate(5))], pacer: pacer)
        guard case let .paced(message) = dated.outcome else { return XCTFail("\(dated.outcome)") }
        XCTAssertTrue(message.contains("Retry-After 5.0 s"), message)
        let notBefore = try XCTUnwrap(pacer.bucket(key)).notBefore
        XCTAssertEqual(notBefore, world.time.now.timeIntervalSince1970 + 5, accuracy: 1)
        world.time.advance(by: 6)
        let garbage = try verify([.http(429, retryAfter: "soon, maybe")], pacer: pacer)
        guard case let .paced(text) = garbage.outcome else { return XCTFail("\(garbage.outcome)") }
        XCTAssertFalse(text.contains("Retry-After"), text)
        XCTAssertEqual(try XCTUnwrap(pacer.bucket(key)).throttles, 2)
    }

    func testA429AskingForMoreThanAMinute_isApplesToHold_theBreakerAtMostADay() throws {
        let pacer = try world.pacer()
        let v = try verify([.http(429, retryAfter: "1e22")], pacer: pacer)
        XCTAssertEqual(v.outcome, .storeUnavailable("production verifyReceipt answered HTTP 429 (rate limited)",
                                                    retryAfter: RetryAfter.longest))
        let bucket = try XCTUnwrap(pacer.bucket(key))
        XCTAssertEqual(bucket.rate, 500, "lowered all the same")
        XCTAssertLessThan(bucket.notBefore, world.time.now.timeIntervalSince1970 + 1,
                          "the pacer does not hold it a day")
    }

    func testA503_slowsTheBucket_andIsStillAppleWide() throws {
        let pacer = try world.pacer()
        let v = try verify([.http(503)], pacer: pacer)
        XCTAssertEqual(v.outcome, .storeUnavailable("production verifyReceipt answered HTTP 503", retryAfter: nil))
        XCTAssertEqual(try XCTUnwrap(pacer.bucket(key)).overloads, 1)
        XCTAssertEqual(try XCTUnwrap(pacer.bucket(key)).rate, 500)
        world.time.advance(by: 1)
        let ok = try verify([], pacer: pacer)
        guard case .verified = ok.outcome else { return XCTFail("\(ok.outcome)") }
        XCTAssertEqual(try XCTUnwrap(pacer.bucket(key)).granted, 2)
    }
}
