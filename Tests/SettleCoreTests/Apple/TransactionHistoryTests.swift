import Foundation
import SettleTesting
import Synchronization
import XCTest
@testable import SettleApp
@testable import SettleBase
@testable import SettleModel
@testable import SettleAppStore
@testable import SettleAppStoreSimulator

/// Get Transaction History v2 through libcurl against the simulator over loopback: paging,
/// Apple's environment rule and the error classes of Get Transaction Info.
final class TransactionHistoryTests: XCTestCase {
    var world: TestWorld!

    override func setUpWithError() throws { world = try TestWorld() }
    override func tearDown() { world = nil }

    var client: AppStoreServerClient {
        AppStoreServerClient(productionURL: world.simulator.serverProductionURL, sandboxURL: world.simulator.serverSandboxURL,
                             tokens: BearerTokenSource(issuerId: world.issuerId, keyId: world.keyId, bundleId: world.bundleId,
                                                       key: world.signingKey, time: world.time),
                             client: HTTPClient(configuration: HTTPClientConfiguration(connectTimeout: 2, totalTimeout: 5)))
    }

    /// `count` transactions of one customer, ids 2000000000100000 upwards, all renewals of the first.
    @discardableResult
    func customer(_ count: Int, environment: String = "Production", answers: [SimulatedServerAnswer] = []) -> [String] {
        let ids = (0..<count).map { String(2_000_000_000_100_000 + $0) }
        world.simulator.script(customer: ids.map {
            SimulatedSignedTransaction(transactionId: $0, originalTransactionId: ids[0], productId: world.monthly,
                                       bundleId: world.bundleId, environment: environment, type: "Auto-Renewable Subscription")
        }, answers: answers)
        return ids
    }

    func history(_ lookup: AppStoreServerClient.HistoryLookup, file: StaticString = #filePath, line: UInt = #line) throws -> TransactionHistory {
        guard case let .found(history) = lookup else {
            XCTFail("expected a history, got \(lookup)", file: file, line: line)
            throw CocoaError(.featureUnsupported)
        }
        return history
    }

    /// The transaction ids inside the JWS, each verified against the simulator's root.
    func transactionIds(_ history: TransactionHistory) throws -> [String] {
        let verifier = SignedDataVerifier(rootCertificates: [try SimulatorSigningChain.root()], bundleId: world.bundleId,
                                          acceptSandbox: true)
        return try history.signedTransactions.map { try verifier.verifyTransaction($0, now: Date()).get().transactionId }
    }

    func testHistoryOf200Transactions_comesBackIn10Pages_allDistinct_fromAnyOfTheirIds() throws {
        let ids = customer(200)
        let (lookup, answered) = client.transactionHistory(ids[150])
        let history = try history(lookup)
        XCTAssertTrue(answered)
        XCTAssertEqual(history.environment, .production)
        XCTAssertEqual(history.bundleId, world.bundleId)
        XCTAssertEqual(history.appAppleId, "1234567890")
        XCTAssertEqual(history.pages, 10)
        XCTAssertEqual(Set(history.signedTransactions).count, 200)
        XCTAssertEqual(try transactionIds(history), ids)
        let requests = world.simulator.historyRequests
        XCTAssertEqual(requests.count, 10)
        XCTAssertEqual(Set(requests.map(\.environment)), [.production])
        XCTAssertEqual(Set(requests.map(\.transactionId)), [ids[150]])
        XCTAssertEqual(Set(requests.map(\.sort)), ["ASCENDING"])
        XCTAssertEqual(requests.map(\.tokenProblem), Array(repeating: nil, count: 10))
        XCTAssertNil(requests[0].revision)
        XCTAssertEqual(Set(requests.dropFirst().compactMap(\.revision)).count, 9, "each later page asks with a new revision")
    }

    func testSandboxCustomer_isFoundAfterOneHopFromProduction() throws {
        let ids = customer(25, environment: "Sandbox")
        let history = try history(client.transactionHistory(ids[0]).lookup)
        XCTAssertEqual(history.environment, .sandbox)
        XCTAssertEqual(try transactionIds(history), ids)
        XCTAssertEqual(world.simulator.historyRequests.map(\.environment), [.production, .sandbox, .sandbox])
    }

    func testProductionAnswering401_hopsToSandbox() throws {
        let ids = customer(3, environment: "Sandbox", answers: [.unauthorized])
        let history = try history(client.transactionHistory(ids[1]).lookup)
        XCTAssertEqual(history.environment, .sandbox)
        XCTAssertEqual(history.signedTransactions.count, 3)
    }

    func test401InBothEnvironments_isAConfigurationFault() throws {
        let ids = customer(3, answers: [.unauthorized, .unauthorized])
        let (lookup, answered) = client.transactionHistory(ids[0])
        guard case .failed(.configurationFault) = lookup else { return XCTFail("\(lookup)") }
        XCTAssertTrue(answered)
    }

    /// The waits the pacer asked for, each one moving the world's clock instead of sleeping.
    final class PacerWaits: Sendable {
        let seconds = Mutex<[Double]>([])
    }

    /// Transaction history paced at `rate` a second, on the world's clock.
    func pacedClient(rate: Double, waits: PacerWaits) -> AppStoreServerClient {
        var paced = client
        let time = world.time
        paced.pacer = Pacer(time: time, rates: { StoreRateLimits.rate($0, configured: [.appStore: ["transaction_history": rate]]) },
                            sleep: { seconds in waits.seconds.withLock { $0.append(seconds) }; time.advance(by: seconds) })
        return paced
    }

    func testPacedCalls_reachTheSimulatorAtTheConfiguredRate_afterTheBurst() throws {
        let ids = customer(1)
        let waits = PacerWaits()
        let paced = pacedClient(rate: 4, waits: waits)
        let start = world.time.now
        var sentAt: [Double] = []
        for _ in 0..<10 {
            let (lookup, answered) = paced.transactionHistory(ids[0])
            XCTAssertTrue(answered, "\(lookup)")
            sentAt.append(world.time.now.timeIntervalSince(start))
        }
        XCTAssertEqual(world.simulator.historyRequests.count, 10, "every call sent, none refused")
        // A due order's call leaves 1.2 of the bucket's 4 tokens to work above it: two at once,
        // the third when 0.2 of a token has come back, then one every quarter second.
        XCTAssertEqual(sentAt[0], 0)
        XCTAssertEqual(sentAt[1], 0)
        XCTAssertEqual(sentAt[2], 0.05, accuracy: 1e-3)
        for (earlier, later) in zip(sentAt.dropFirst(2), sentAt.dropFirst(3)) {
            XCTAssertEqual(later - earlier, 0.25, accuracy: 1e-3, "4 a second after the burst: \(sentAt)")
        }
        XCTAssertEqual(waits.seconds.withLock { $0.count }, 8, "one wait per call after the first two, none repeated")
    }

    func testA429_holdsTheBucketForRetryAfter_andAWaitBeyondTheTimeoutFailsWithoutASend() throws {
        let ids = customer(1, answers: [.rateLimited(retryAfter: "30")])
        let waits = PacerWaits()
        let paced = pacedClient(rate: 4, waits: waits)
        _ = paced.transactionHistory(ids[0])
        XCTAssertEqual(paced.pacer?.bucket(paced.pacerKey("GET", "/inApps/v2/history/1", environment: .production))?.rate, 2,
                       "the 429 halved the rate")
        let (lookup, answered) = paced.transactionHistory(ids[0])
        guard case let .failed(.paced(message)) = lookup else { return XCTFail("\(lookup)") }
        XCTAssertTrue(message.hasPrefix("paced: app_store transaction_history (Production) at 2/s (the wait of 30.0 s"), message)
        XCTAssertFalse(answered)
        XCTAssertEqual(world.simulator.historyRequests.count, 1, "the refused call was never sent")
        XCTAssertEqual(waits.seconds.withLock { $0.count }, 0, "refused at once, not after the 5 s timeout")
    }

    func test429s_arePacing_untilTheBucketIsAtItsFloor_thenAppleWide() throws {
        let ids = customer(1, answers: Array(repeating: .rateLimited(retryAfter: "1"), count: 4))
        let paced = pacedClient(rate: 4, waits: PacerWaits())
        for rate in ["2", "1", "0.50"] {
            let (lookup, answered) = paced.transactionHistory(ids[0])
            guard case let .failed(.paced(message)) = lookup else { return XCTFail("\(lookup)") }
            XCTAssertTrue(message.hasPrefix("paced: app_store transaction_history (Production) at \(rate)/s"), message)
            XCTAssertTrue(message.contains("answered HTTP 429, Retry-After 1.0 s"), message)
            XCTAssertFalse(answered)
            world.time.advance(by: 1)
        }
        let (lookup, _) = paced.transactionHistory(ids[0])
        XCTAssertEqual(lookup, .failed(.storeUnavailable("production App Store Server API answered HTTP 429 (rate limited)", retryAfter: 1)),
                       "at the floor (an eighth of 4/s) Apple refuses even a slow settle: Apple-wide, for the breaker")
        XCTAssertEqual(world.simulator.historyRequests.count, 4)
    }

    func testRateLimit_isAppleWide_withRetryAfter() throws {
        let ids = customer(30, answers: [.transaction, .rateLimited(retryAfter: "30")])
        let (lookup, answered) = client.transactionHistory(ids[0])
        XCTAssertEqual(lookup, .failed(.storeUnavailable("production App Store Server API answered HTTP 429 (rate limited)", retryAfter: 30)))
        XCTAssertFalse(answered)
        XCTAssertEqual(world.simulator.historyRequests.count, 2, "no hop to sandbox on a 429")
    }

    func testServerErrorsAndRetryable404s_areAppleWide_andInvalidIdIsInvalid() throws {
        for (i, answer) in [SimulatedServerAnswer.error(status: 500, code: 5000001), .error(status: 404, code: 4040002)].enumerated() {
            world = try TestWorld()
            let ids = customer(2 + i, answers: [answer])
            guard case .failed(.storeUnavailable) = client.transactionHistory(ids[0]).lookup else { return XCTFail("\(answer)") }
        }
        world = try TestWorld()
        let ids = customer(2, answers: [.error(status: 400, code: 4000006)])
        guard case .invalidId = client.transactionHistory(ids[0]).lookup else { return XCTFail() }
        guard case .invalidId = client.transactionHistory("12/../34").lookup else { return XCTFail() }
    }

    func testUnknownId_isNotFoundAfterBothEnvironments() throws {
        customer(3)
        guard case .notFound = client.transactionHistory("2000000000999999").lookup else { return XCTFail() }
        XCTAssertEqual(world.simulator.historyRequests.map(\.environment), [.production, .sandbox])
    }

    func testHistoryPastThePageCap_failsClearly_afterExactlyTheCap() throws {
        let ids = customer(200)
        let (lookup, answered) = client.transactionHistory(ids[0], maxPages: 3)
        guard case let .pageCapExceeded(detail) = lookup else { return XCTFail("\(lookup)") }
        XCTAssertTrue(detail.contains("3 pages"), detail)
        XCTAssertTrue(answered)
        XCTAssertEqual(world.simulator.historyRequests.count, 3, "no more requests than the cap, and no hop to sandbox")
    }

    func testExpiredRevision_restartsPagingOnce_andTwiceIsAFailure() throws {
        let ids = customer(45, answers: [.transaction, .error(status: 400, code: 4000017)])
        let history = try history(client.transactionHistory(ids[0]).lookup)
        XCTAssertEqual(try transactionIds(history), ids, "nothing twice, nothing lost")
        XCTAssertEqual(history.pages, 5)
        XCTAssertEqual(world.simulator.historyRequests.map { $0.revision == nil }, [true, false, true, false, false])

        world = try TestWorld()
        let again = customer(45, answers: [.transaction, .error(status: 400, code: 4000014), .transaction,
                                           .error(status: 400, code: 4000017)])
        guard case .failed(.retry) = client.transactionHistory(again[0]).lookup else { return XCTFail() }
    }
}
