import SettleTesting
import XCTest
@testable import SettleApp
@testable import SettleBase
@testable import SettleModel
@testable import SettleLedger
@testable import SettleEngine
@testable import SettleSimulator
@testable import SettleAppStoreSimulator

/// A verifyReceipt backlog against the fake Apple refusing over a limit settle is not told
/// (issue 38), whole passes on the test clock with a pacer on it: the pacer learns the rate,
/// every order is settled with no attempt used on a 429, and the breaker stays closed; Apple
/// refusing even the floor rate opens it. Here on SQLite, on PostgreSQL in the subclass.
class LearnedPacingPassTests: XCTestCase {
    var world: TestWorld!
    var schema: (url: String, schema: String)?
    let verifyReceipt = PacerKey(store: "app_store", group: "verify_receipt", environment: "Production")

    func makeLedger() throws -> any SettleLedger { try world.ledger() }

    override func setUpWithError() throws {
        world = try TestWorld()
        try world.writeConfig(schedule: [("concurrency", .number(1))])
    }

    override func tearDown() {
        schema.map { TestPostgres.drop(schema: $0.schema) }
        schema = nil
        world = nil
    }

    func enqueue(_ ledger: any SettleLedger, _ count: Int, answers: [SimulatedAnswer] = []) throws {
        for i in 0..<count {
            let txn = String(2_000_000_970_000_000 + i)
            let bought = SimulatedTransaction(productId: world.coins, transactionId: txn)
            let receipt = world.scriptReceipt("o-\(i)", [bought], answers: answers)
            _ = try ledger.enqueue(NewOrder(orderId: "o-\(i)", userId: "u-\(i)", productId: world.coins,
                                            transactionId: txn, receipt: receipt))
        }
    }

    func testABacklogOverALimitSettleMustLearn_drainsOverPasses_noAttemptUsed_breakerClosed() throws {
        let ledger = try makeLedger()
        let limit = SimulatedRateLimit(rate: 1000, groupRates: ["verify_receipt": 40], time: world.time)
        world.simulator.limit(limit)
        try enqueue(ledger, 300)
        let pacer = try world.pacer()
        var passes = 0
        var paced = 0
        while try ledger.summary(OrderFilter(limit: 0)).storeCounts[.appStore]?[.pending] ?? 0 > 0 && passes < 50 {
            let report = try world.reconciler(ledger: ledger, pacer: pacer).runPass()
            paced += report.paced[.appStore] ?? 0
            XCTAssertTrue(report.breakersOpened.isEmpty, "pass \(passes): \(report.summaryLine)")
            passes += 1
            world.time.advance(by: 1)
        }
        let counts = try XCTUnwrap(limit.counts["verify_receipt"])
        XCTAssertGreaterThan(counts.refused, 0, "the backlog met Apple's limit")
        XCTAssertGreaterThan(paced, 0, "and each 429 deferred its order")
        for i in 0..<300 {
            let order = try XCTUnwrap(try ledger.orderRecord("o-\(i)")?.order)
            XCTAssertEqual(order.state, .finished, "o-\(i)")
            XCTAssertEqual(order.attempts, 0, "o-\(i): a 429 uses no attempt")
        }
        XCTAssertEqual(try ledger.breakers()[.appStore]?.state ?? .closed, .closed)
        let bucket = try XCTUnwrap(pacer.bucket(verifyReceipt))
        XCTAssertEqual(bucket.throttles, counts.refused, "the pacer heard every 429")
        XCTAssertEqual(bucket.floorThrottles, 0)
        let learned = try XCTUnwrap(bucket.learning?.learnedRate)
        XCTAssertLessThan(learned, 100, "learned near Apple's 40/s, far under the 1000/s ceiling")
        XCTAssertLessThan(passes, 50, "drained")

        // What status and the metrics show of it: the learned rate, like the Server API's buckets.
        let saved = StatusView.pacedBuckets(try ledger.pacerBuckets(since: 0))
        let shown = try XCTUnwrap(saved.first { $0.key == verifyReceipt })
        let line = StatusView.text(bucket: shown)
        let rate = Pacer.formatRate(shown.storeRate)
        XCTAssertTrue(line.hasPrefix("verify_receipt (Production) \(rate)/s learned (ceiling 1000/s)"), line)
        XCTAssertLessThan(shown.storeRate, 1000, "the rate saved is the learned one")
        let json = StatusView.json(pacer: saved, summary: try ledger.summary(OrderFilter(limit: 0)))
        let row = json["app_store"]?["buckets"]?.arrayValue?.first { $0["group"] == .string("verify_receipt") }
        XCTAssertEqual(row?["learned"], .bool(true))
        let metrics = Metrics()
        metrics.observePacer(pacer.snapshots())
        let rendered = metrics.render(summary: try ledger.summary(OrderFilter(limit: 0)), bundleId: world.bundleId)
        let labels = "bundle_id=\"\(world.bundleId)\",store=\"app_store\",group=\"verify_receipt\","
            + "environment=\"Production\""
        XCTAssertTrue(rendered.contains("settle_pacer_learned_rate{\(labels)} \(Metrics.format(learned))"), rendered)
        XCTAssertTrue(rendered.contains("settle_pacer_rate{\(labels)} \(Metrics.format(bucket.rate))"), rendered)
    }

    func testApple429sEvenAtTheFloorRate_openTheBreaker_stillWithoutAttempts() throws {
        let ledger = try makeLedger()
        try enqueue(ledger, 10, answers: Array(repeating: .http(429, retryAfter: "1"), count: 20))
        let pacer = try world.pacer()
        let report = try world.reconciler(ledger: ledger, pacer: pacer).runPass()
        XCTAssertTrue(report.breakersOpened.contains(.appStore), report.summaryLine)
        XCTAssertGreaterThan(report.paced[.appStore] ?? 0, 0, "above the floor, the 429s lowered the rate first")
        let bucket = try XCTUnwrap(pacer.bucket(verifyReceipt))
        XCTAssertTrue(bucket.isAtFloor)
        XCTAssertEqual(bucket.floorThrottles, 1)
        XCTAssertEqual(try ledger.breakers()[.appStore]?.state, .open)
        for i in 0..<10 { XCTAssertEqual(try ledger.orderRecord("o-\(i)")?.order.attempts, 0, "o-\(i)") }
    }

    func testA5xxStorm_slowsVerifyReceiptDown_whileTheBreakerCountsAsBefore() throws {
        let ledger = try makeLedger()
        try enqueue(ledger, 2, answers: [.http(503)])
        let pacer = try world.pacer()
        let report = try world.reconciler(ledger: ledger, pacer: pacer).runPass()
        let bucket = try XCTUnwrap(pacer.bucket(verifyReceipt))
        XCTAssertEqual(bucket.overloads, 2, "each 503 halved the rate")
        XCTAssertLessThan(bucket.rate, 1000)
        XCTAssertEqual(report.storeWideFailures[.appStore], 2, "the breaker heard both, as before")
        XCTAssertEqual(try ledger.breakers()[.appStore]?.consecutiveFailures, 2)
    }
}

/// The same passes on a PostgreSQL ledger.
final class LearnedPacingPassPostgresTests: LearnedPacingPassTests {
    override func setUpWithError() throws {
        schema = try TestPostgres.freshSchema()
        try super.setUpWithError()
    }

    override func makeLedger() throws -> any SettleLedger { try PostgresLedger(url: schema!.url, time: world.time) }

    // Linux test discovery lists only the methods a class declares.
    override func testABacklogOverALimitSettleMustLearn_drainsOverPasses_noAttemptUsed_breakerClosed() throws {
        try super.testABacklogOverALimitSettleMustLearn_drainsOverPasses_noAttemptUsed_breakerClosed()
    }
    override func testApple429sEvenAtTheFloorRate_openTheBreaker_stillWithoutAttempts() throws {
        try super.testApple429sEvenAtTheFloorRate_openTheBreaker_stillWithoutAttempts()
    }
    override func testA5xxStorm_slowsVerifyReceiptDown_whileTheBreakerCountsAsBefore() throws {
        try super.testA5xxStorm_slowsVerifyReceiptDown_whileTheBreakerCountsAsBefore()
    }
}
