import SettleTesting
import XCTest
@testable import SettleApp
@testable import SettleBase
@testable import SettleModel
@testable import SettleConfig
@testable import SettleAppStore
@testable import SettleAppStoreSimulator

/// The verifyReceipt client against the simulator over real loopback HTTP.
final class ReceiptVerifierTests: XCTestCase {
    var world: TestWorld!

    override func setUpWithError() throws { world = try TestWorld() }
    override func tearDown() { world = nil }

    func verifier(acceptSandbox: Bool = true, secret: String? = nil, timeout: Double = 3, maxBytes: Int = 8 << 20) -> ReceiptVerifier {
        let client = HTTPClient(configuration: HTTPClientConfiguration(connectTimeout: 2, totalTimeout: timeout, maxResponseBytes: maxBytes))
        let matcher = ReceiptMatcher(bundleId: world.bundleId, acceptSandbox: acceptSandbox,
                                     eligibility: PurchaseEligibility(products: [world.coins: .consumable, world.premium: .nonConsumable]))
        return ReceiptVerifier(productionURL: world.simulator.productionURL, sandboxURL: world.simulator.sandboxURL,
                               sharedSecret: Secret(secret ?? world.sharedSecret), matcher: matcher, client: client,
                               receiptText: { _ in nil })
    }

    func verify(_ receipt: String, transaction: String? = "100", environment: String? = nil, verifier: ReceiptVerifier? = nil) throws -> Verification {
        var v = verifier ?? self.verifier()
        v.receiptText = { _ in receipt }
        let order = Order(orderId: "o-1", userId: "u", productId: world.coins, requestedTransactionId: transaction,
                          receiptSHA256: "h", signedTransaction: nil, state: .verifying, attempts: 0, nextAttemptAt: 0,
                          reason: nil, lastError: nil, environment: environment, verified: nil, createdAt: 0, updatedAt: 0,
                          finishedAt: nil, lease: nil)
        return try v.verify(order)
    }

    func coinsReceipt(_ name: String, environment: String = "Production", answers: [SimulatedAnswer] = []) -> String {
        world.scriptReceipt(name, environment: environment, [SimulatedTransaction(productId: world.coins, transactionId: "100")],
                            answers: answers)
    }

    func testValid_sendsSecretAndExcludeOldTransactions_toProductionOnly() throws {
        let receipt = coinsReceipt("valid")
        let v = try verify(receipt)
        guard case .verified = v.outcome else { return XCTFail("\(v.outcome)") }
        XCTAssertEqual(v.appleStatus, 0)
        let requests = world.simulator.requests(for: receipt)
        XCTAssertEqual(requests.map(\.environment), [.production])
        XCTAssertEqual(requests.first?.passwordMatched, true)
        XCTAssertEqual(requests.first?.excludeOldTransactions, true)
    }

    func testSandboxReceipt_hopsOnceToSandbox() throws {
        let receipt = coinsReceipt("sandbox", environment: "Sandbox")
        let v = try verify(receipt)
        guard case let .verified(m) = v.outcome, let p = m.candidates.first else { return XCTFail("\(v.outcome)") }
        XCTAssertEqual(p.environment, "Sandbox")
        XCTAssertEqual(world.simulator.requests(for: receipt).map(\.environment), [.production, .sandbox])
    }

    func testProductionReceipt_startingInSandbox_hopsOnceBackToProduction() throws {
        let receipt = coinsReceipt("production")
        let v = try verify(receipt, environment: "Sandbox")
        guard case let .verified(m) = v.outcome, let p = m.candidates.first else { return XCTFail("\(v.outcome)") }
        XCTAssertEqual(p.environment, "Production")
        XCTAssertEqual(world.simulator.requests(for: receipt).map(\.environment), [.sandbox, .production])
    }

    func testBouncingBetweenEnvironments_neverPingPongs() throws {
        let receipt = coinsReceipt("bounce", answers: [.status(21007), .status(21008), .status(21007)])
        let v = try verify(receipt)
        guard case let .retry(message) = v.outcome else { return XCTFail("\(v.outcome)") }
        XCTAssertTrue(message.contains("not hopping again"), message)
        XCTAssertEqual(world.simulator.requests(for: receipt).count, 2)
    }

    func testSandboxReceipt_whenSandboxNotAccepted_isRejectedWithoutAskingSandbox() throws {
        let receipt = coinsReceipt("strict", environment: "Sandbox")
        let v = try verify(receipt, verifier: verifier(acceptSandbox: false))
        XCTAssertEqual(v.outcome, .rejected(reason: .sandboxNotAccepted, detail: "sandbox receipt (21007) and accept_sandbox is false"))
        XCTAssertEqual(world.simulator.requests(for: receipt).count, 1)
    }

    func testForgedReceipt_isRejectedAsInvalid() throws {
        let receipt = world.receipt("forged")
        world.simulator.script(receipt, .forged)
        let v = try verify(receipt)
        guard case .rejected(.receiptInvalid, _) = v.outcome else { return XCTFail("\(v.outcome)") }
        XCTAssertEqual(v.appleStatus, 21003)
    }

    func testTemporaryStatuses_areAppleWide() throws {
        for (i, answer) in [SimulatedAnswer.status(21005), .status(21009), .status(21104, retryable: true, underscoreSpelling: true),
                            .status(21199, retryable: true), .http(503), .garbage].enumerated() {
            let v = try verify(coinsReceipt("temp\(i)", answers: [answer]))
            guard case .storeUnavailable = v.outcome else { return XCTFail("\(answer): \(v.outcome)") }
        }
    }

    func testNonRetryable21100Range_isRejected() throws {
        let v = try verify(coinsReceipt("21101", answers: [.status(21101, retryable: false)]))
        guard case .rejected(.receiptInvalid, _) = v.outcome else { return XCTFail("\(v.outcome)") }
    }

    func test21002_isATemporaryFailureOfTheOrder() throws {
        let v = try verify(coinsReceipt("21002", answers: [.status(21002)]))
        guard case .retry = v.outcome else { return XCTFail("\(v.outcome)") }
    }

    func testWrongSharedSecret_isAConfigurationFault() throws {
        let v = try verify(coinsReceipt("secret"), verifier: verifier(secret: "wrong"))
        guard case let .configurationFault(message) = v.outcome else { return XCTFail("\(v.outcome)") }
        XCTAssertTrue(message.contains("21004"), message)
        XCTAssertFalse(message.contains(world.sharedSecret))
    }

    func testRateLimit_isAppleWideWithRetryAfter() throws {
        let v = try verify(coinsReceipt("429", answers: [.http(429, retryAfter: "120")]))
        XCTAssertEqual(v.outcome, .storeUnavailable("production verifyReceipt answered HTTP 429 (rate limited)", retryAfter: 120))
    }

    func testSlowApple_timesOutAsAppleWide() throws {
        let v = try verify(coinsReceipt("slow", answers: [.slow(seconds: 2)]), verifier: verifier(timeout: 0.3))
        guard case let .storeUnavailable(message, _) = v.outcome else { return XCTFail("\(v.outcome)") }
        XCTAssertTrue(message.contains("timeout"), message)
    }

    func testHugeAnswer_isCutAtTheCapWithAClearError() throws {
        let v = try verify(coinsReceipt("huge", answers: [.huge(bytes: 200_000)]), verifier: verifier(maxBytes: 100_000))
        guard case let .retry(message) = v.outcome else { return XCTFail("\(v.outcome)") }
        XCTAssertTrue(message.contains("100000"), message)
    }

    func testUnreachableApple_isAppleWide() throws {
        var v = verifier()
        v.productionURL = "http://127.0.0.1:1/verifyReceipt"
        let result = try verify(coinsReceipt("down"), verifier: v)
        guard case .storeUnavailable = result.outcome else { return XCTFail("\(result.outcome)") }
        XCTAssertFalse(result.storeAnswered)
    }
    // MARK: - iOS 6-style answers

    func testStatus21006WithAReceipt_isAnAnswerHandedToTheMatcher_notAnUnknownStatus() throws {
        let receipt = world.scriptReceipt("expired-ios6", [SimulatedTransaction(productId: world.coins, transactionId: "100",
                                                                                   expiresDateMs: 1_353_970_684_000)],
                                          answers: [.transactionReceipt(status: 21006)])
        let v = try verify(receipt)
        guard case let .verified(m) = v.outcome, let p = m.candidates.first else { return XCTFail("\(v.outcome)") }
        XCTAssertEqual(p.transactionId, "100")
        XCTAssertEqual(p.expiresDateMs, 1_353_970_684_000)
        XCTAssertEqual(v.appleStatus, 21006)
        XCTAssertTrue(v.storeAnswered)
        XCTAssertEqual(world.simulator.requests(for: receipt).count, 1)
    }

    func testStatus21006WithoutAReceipt_isRetried() throws {
        let receipt = coinsReceipt("bare-21006", answers: [.status(21006)])
        guard case let .retry(detail) = try verify(receipt).outcome else { return XCTFail() }
        XCTAssertTrue(detail.contains("21006"), detail)
    }

    func testIOS6TransactionReceiptAnswer_isMatchedOnItsBidAndTransaction_notABundleMismatch() throws {
        let receipt = world.scriptReceipt("ios6", [SimulatedTransaction(productId: world.coins, transactionId: "100")],
                                          latest: [SimulatedTransaction(productId: world.coins, transactionId: "101")],
                                          answers: [.transactionReceipt(status: 0), .transactionReceipt(status: 0)])
        guard case let .verified(m) = try verify(receipt).outcome else { return XCTFail() }
        XCTAssertEqual(m.candidates.first?.transactionId, "100")
        guard case let .verified(latest) = try verify(receipt, transaction: "101").outcome else { return XCTFail() }
        XCTAssertEqual(latest.candidates.map(\.transactionId), ["101"])
    }
}
