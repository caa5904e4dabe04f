import SettleTesting
import XCTest
@testable import SettleApp
@testable import SettleBase
@testable import SettleModel
@testable import SettleLedger
@testable import SettleEngine
import SettleAppStoreModule

/// Finish Transaction after delivery: whole passes on the test clock, the simulated App Store
/// Server API over loopback, real hooks. On SQLite here and on PostgreSQL in
/// `FinishTransactionPostgresTests` (the same tests, the ledger made by `makeLedger`).
class FinishTransactionTests: XCTestCase {
    var world: TestWorld!
    var schema: (url: String, schema: String)?

    override func setUpWithError() throws {
        world = try TestWorld()
        try configure()
    }

    override func tearDown() {
        schema.map { TestPostgres.drop(schema: $0.schema) }
        world = nil
    }

    /// The ledger under test, on the test clock.
    func makeLedger() throws -> any SettleLedger { try world.ledger() }

    func configure(serverAPI changes: [(String, JSONValue)] = []) throws {
        guard case let .object(api) = world.serverAPIConfig else { return XCTFail() }
        var overrides: [(String, JSONValue)] = [("server_api", .object(TestWorld.merge(api, changes)))]
        if let schema { overrides.append(("ledger", .string(schema.url))) }
        try world.writeConfig(receiptAPI: false, serverAPI: true, overrides: overrides)
    }

    /// A purchase Apple knows, enqueued by the backend with the app's signed transaction.
    func enqueue(_ ledger: any SettleLedger, _ orderId: String, _ transactionId: String) throws {
        let transaction = world.scriptTransaction(transactionId)
        _ = try ledger.enqueue(NewOrder(orderId: orderId, userId: "u-\(orderId)", productId: world.coins,
                                        signedTransaction: try transaction.signed(at: world.time.unixSeconds * 1000)))
    }

    func pass(_ ledger: any SettleLedger) throws {
        _ = try world.reconciler(ledger: ledger).runPass()
    }

    func finishes(_ ledger: any SettleLedger, _ orderId: String) throws -> [HistoryEntry] {
        (try ledger.orderRecord(orderId)?.history ?? []).filter { $0.outcome.hasPrefix("store_finish") }
    }

    func testDeliveredOrder_isFinishedWithAppleAfterItIsFinished_once_andItsHistorySaysSo() throws {
        let ledger = try makeLedger()
        try enqueue(ledger, "o-1", "2000000950000001")
        try pass(ledger)
        XCTAssertEqual(try ledger.orderRecord("o-1")?.order.state, .finished)
        XCTAssertEqual(world.deliveries, ["2000000950000001 o-1"])
        XCTAssertEqual(world.simulator.finishRequests.map(\.transactionId), ["2000000950000001"])
        XCTAssertEqual(world.simulator.finishRequests.first?.environment, .production)
        XCTAssertNil(world.simulator.finishRequests.first?.tokenProblem)
        XCTAssertEqual(try finishes(ledger, "o-1").map(\.outcome), ["store_finished"])
        XCTAssertEqual(try ledger.appleFinish(orderId: "o-1")?.state, "finished")
        world.time.advance(by: 3600)
        try pass(ledger)
        XCTAssertEqual(world.simulator.finishRequests.count, 1, "Apple is told once")
    }

    func testFinishThatAppleCannotTakeNow_isRetriedAfterABackoff_whileTheOrderStaysFinished() throws {
        let ledger = try makeLedger()
        world.simulator.script(finish: [.error(status: 503, code: 5000000), .error(status: 400, code: 4000999)])
        try enqueue(ledger, "o-2", "2000000950000002")
        try pass(ledger)
        XCTAssertEqual(try ledger.orderRecord("o-2")?.order.state, .finished, "Apple's answer never holds the order back")
        XCTAssertEqual(try ledger.appleFinish(orderId: "o-2")?.state, "pending")
        try pass(ledger)
        XCTAssertEqual(world.simulator.finishRequests.count, 1, "not due again before the backoff")
        world.time.advance(by: 3600)
        try pass(ledger)
        XCTAssertEqual(try ledger.appleFinish(orderId: "o-2")?.attempts, 1, "an unknown 4xx counts an attempt, a 5xx does not")
        world.time.advance(by: 3600)
        try pass(ledger)
        XCTAssertEqual(world.simulator.finishRequests.count, 3)
        XCTAssertEqual(try finishes(ledger, "o-2").map(\.outcome), ["store_finish_failed", "store_finish_failed", "store_finished"])
        XCTAssertEqual(try ledger.appleFinish(orderId: "o-2")?.state, "finished")
    }

    /// Issue 32, item 18: a daemon of this host killed while it held a Finish Transaction call
    /// (claimed for 15 minutes) is proven dead by its pid; the next pass takes the call back at
    /// once and sends it, on the same clock instant, not 899 s later.
    func testFinishClaimedByADaemonThatDied_isSentByTheNextPassAtOnce() throws {
        let ledger = try makeLedger()
        world.simulator.script(finish: [.error(status: 503, code: 5000000)])
        try enqueue(ledger, "o-9", "2000000950000009")
        try pass(ledger)
        XCTAssertEqual(try ledger.appleFinish(orderId: "o-9")?.state, "pending")
        world.time.advance(by: 3600)
        let me = LeaseOwner.current
        let killed = LeaseOwner(host: me.host, pid: Int32.max - 1, startTime: "1", bootId: me.bootId, pidNamespace: me.pidNamespace)
        XCTAssertEqual(try ledger.claimDueAppleFinishes(limit: 10, leaseSeconds: 900, owner: killed).count, 1)
        try pass(ledger)
        XCTAssertEqual(world.simulator.finishRequests.count, 2, "the dead daemon's call went out in the next pass")
        XCTAssertEqual(try ledger.appleFinish(orderId: "o-9")?.state, "finished")
    }

    /// The same call held by a daemon of another host waits for its claim to expire: that host
    /// may only be cut off from us.
    func testFinishClaimedByAnotherHost_waitsForItsClaimToExpire() throws {
        let ledger = try makeLedger()
        world.simulator.script(finish: [.error(status: 503, code: 5000000)])
        try enqueue(ledger, "o-8", "2000000950000008")
        try pass(ledger)
        world.time.advance(by: 3600)
        let remote = LeaseOwner(host: "other-host", pid: 4242, startTime: "77", bootId: "b", pidNamespace: 1)
        XCTAssertEqual(try ledger.claimDueAppleFinishes(limit: 10, leaseSeconds: 900, owner: remote).count, 1)
        try pass(ledger)
        XCTAssertEqual(world.simulator.finishRequests.count, 1, "not taken from a host that may be alive")
        world.time.advance(by: 901)
        try pass(ledger)
        XCTAssertEqual(world.simulator.finishRequests.count, 2)
        XCTAssertEqual(try ledger.appleFinish(orderId: "o-8")?.state, "finished")
    }

    /// Apple refusing Finish Transaction even at an eighth of its rate (the bucket at its floor).
    func testFinishRateLimited_opensTheAppStoreBreaker_andTheOtherCallsWaitUntried() throws {
        let ledger = try makeLedger()
        let pacer = try world.pacer(atFloor: [PacerKey(store: "app_store", group: "finish_transaction", environment: "Production")])
        let retryAt = (world.time.unixSeconds + 600) * 1000
        world.simulator.script(finish: [.rateLimited(retryAfter: String(retryAt))])
        try enqueue(ledger, "o-4", "2000000950000006")
        try enqueue(ledger, "o-5", "2000000950000007")
        _ = try world.reconciler(ledger: ledger, pacer: pacer).runPass()
        XCTAssertEqual(world.simulator.finishRequests.count, 1, "the second waits, untried, once Apple said to wait")
        let breaker = try XCTUnwrap(try ledger.breakers()[.appStore])
        XCTAssertEqual(breaker.state, .open)
        XCTAssertGreaterThanOrEqual(try XCTUnwrap(breaker.retryAt), world.time.unixSeconds + 600)
        for id in ["o-4", "o-5"] {
            XCTAssertEqual(try ledger.orderRecord(id)?.order.state, .finished)
            XCTAssertEqual(try ledger.appleFinish(orderId: id)?.state, "pending")
            XCTAssertEqual(try ledger.appleFinish(orderId: id)?.attempts, 0)
        }
        world.time.advance(by: 3600)
        try pass(ledger)
        XCTAssertEqual(Set(world.simulator.finishRequests.map(\.transactionId)), ["2000000950000006", "2000000950000007"])
        XCTAssertEqual(try ledger.appleFinish(orderId: "o-5")?.state, "finished")
    }

    func testFinishRateLimited_aboveTheFloor_isPaced_theRestWaitUntried_noAttempt_andTheBreakerStaysClosed() throws {
        let ledger = try makeLedger()
        let pacer = try world.pacer()
        world.simulator.script(finish: [.rateLimited(retryAfter: "2")])
        try enqueue(ledger, "o-6", "2000000950000008")
        try enqueue(ledger, "o-7", "2000000950000009")
        _ = try world.reconciler(ledger: ledger, pacer: pacer).runPass()
        XCTAssertEqual(world.simulator.finishRequests.count, 1, "the bucket is spent: the second waits for the next pass")
        XCTAssertEqual(try ledger.breakers()[.appStore]?.state, .closed, "settle too fast is not Apple down")
        for id in ["o-6", "o-7"] {
            XCTAssertEqual(try ledger.appleFinish(orderId: id)?.state, "pending")
            XCTAssertEqual(try ledger.appleFinish(orderId: id)?.attempts, 0)
        }
        let paced = try (ledger.orderRecord("o-6")?.history ?? []) .filter { $0.outcome == "paced" }
            + (ledger.orderRecord("o-7")?.history ?? []).filter { $0.outcome == "paced" }
        XCTAssertEqual(paced.map(\.outcome), ["paced"])
        XCTAssertTrue(paced.first?.detail?.contains("paced: app_store finish_transaction (Production) at 25/s") == true,
                      "\(String(describing: paced.first?.detail))")
        world.time.advance(by: 3)
        _ = try world.reconciler(ledger: ledger, pacer: pacer).runPass()
        XCTAssertEqual(try ledger.appleFinish(orderId: "o-6")?.state, "finished", "due again at once: no backoff")
        XCTAssertEqual(try ledger.appleFinish(orderId: "o-7")?.state, "finished")
        XCTAssertEqual(pacer.bucket(PacerKey(store: "app_store", group: "finish_transaction", environment: "Production"))?.throttles, 1)
    }

    func testFinishAppleRefusesForGood_isRecordedAndShownInStatus_andNeverSentAgain() throws {
        let ledger = try makeLedger()
        world.simulator.script(finish: [.error(status: 400, code: 4000185), .notFound])
        try enqueue(ledger, "o-family", "2000000950000003")
        try enqueue(ledger, "o-gone", "2000000950000004")
        try pass(ledger)
        for id in ["o-family", "o-gone"] {
            XCTAssertEqual(try ledger.orderRecord(id)?.order.state, .finished)
            XCTAssertEqual(try ledger.appleFinish(orderId: id)?.state, "refused", id)
            XCTAssertEqual(try finishes(ledger, id).map(\.outcome), ["store_finish_refused"])
        }
        let record = try XCTUnwrap(try ledger.orderRecord("o-family"))
        let text = StatusView.text(record.order, history: record.history, notifications: [], now: world.time.unixSeconds,
                                   storeSections: try AppStoreModule.orderSections(ledger, orderId: "o-family"))
        XCTAssertTrue(text.contains("finished with Apple: refused"), text)
        XCTAssertTrue(text.contains("4000185"), text)
        XCTAssertEqual(try ledger.refusedAppleFinishes(), 2)
        world.time.advance(by: 86_400)
        try pass(ledger)
        XCTAssertEqual(world.simulator.finishRequests.count, 2)
    }

    func testFinishTransactionsOff_tellsAppleNothing_andSaysWhy() throws {
        try configure(serverAPI: [("finish_transactions", .bool(false))])
        let ledger = try makeLedger()
        try enqueue(ledger, "o-3", "2000000950000005")
        try pass(ledger)
        XCTAssertEqual(try ledger.orderRecord("o-3")?.order.state, .finished)
        XCTAssertEqual(world.simulator.finishRequests.count, 0)
        XCTAssertEqual(try ledger.appleFinish(orderId: "o-3")?.state, "not_sent")
        XCTAssertEqual(try ledger.appleFinish(orderId: "o-3")?.lastError, "server_api.finish_transactions is false")
        try configure()
        world.time.advance(by: 3600)
        try pass(ledger)
        XCTAssertEqual(world.simulator.finishRequests.count, 0, "what was delivered while it was off is not sent later by surprise")
    }
}

/// The Finish Transaction tests, every one, on a PostgreSQL ledger.
final class FinishTransactionPostgresTests: FinishTransactionTests {
    override func setUpWithError() throws {
        schema = try TestPostgres.freshSchema()
        try super.setUpWithError()
    }

    override func makeLedger() throws -> any SettleLedger { try PostgresLedger(url: schema!.url, time: world.time) }

    // Linux test discovery lists only the methods a class declares.
    override func testDeliveredOrder_isFinishedWithAppleAfterItIsFinished_once_andItsHistorySaysSo() throws { try super.testDeliveredOrder_isFinishedWithAppleAfterItIsFinished_once_andItsHistorySaysSo() }
    override func testFinishThatAppleCannotTakeNow_isRetriedAfterABackoff_whileTheOrderStaysFinished() throws { try super.testFinishThatAppleCannotTakeNow_isRetriedAfterABackoff_whileTheOrderStaysFinished() }
    override func testFinishRateLimited_opensTheAppStoreBreaker_andTheOtherCallsWaitUntried() throws { try super.testFinishRateLimited_opensTheAppStoreBreaker_andTheOtherCallsWaitUntried() }
    override func testFinishRateLimited_aboveTheFloor_isPaced_theRestWaitUntried_noAttempt_andTheBreakerStaysClosed() throws { try super.testFinishRateLimited_aboveTheFloor_isPaced_theRestWaitUntried_noAttempt_andTheBreakerStaysClosed() }
    override func testFinishAppleRefusesForGood_isRecordedAndShownInStatus_andNeverSentAgain() throws { try super.testFinishAppleRefusesForGood_isRecordedAndShownInStatus_andNeverSentAgain() }
    override func testFinishTransactionsOff_tellsAppleNothing_andSaysWhy() throws { try super.testFinishTransactionsOff_tellsAppleNothing_andSaysWhy() }
}
