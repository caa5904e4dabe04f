import SettleTesting
import XCTest
@testable import SettleApp
@testable import SettleBase
@testable import SettleModel
@testable import SettleLedger
@testable import SettleEngine
@testable import SettleAppStoreSimulator

/// Passes that meet a store's rate limit (issue 27), on the test clock with a pacer on it: a
/// 429 above the bucket's floor defers the order (due, no attempt, no backoff, no breaker) and
/// ends the store's claims for the pass; hosts on one ledger each take their share; the buckets
/// are saved for `settle status` and the metrics. Here on SQLite, on PostgreSQL in
/// `PacedPassPostgresTests`. Helpers are `FinishTransactionTests`' (only the tests declared here run).
class PacedPassTests: FinishTransactionTests {
    let transactionInfo = PacerKey(store: "app_store", group: "transaction_info", environment: "Production")
    /// The hosts a ledger counts when two daemons are live: SQLite is one host.
    var hostsWithTwoDaemons: Int { 1 }

    func enqueue(_ ledger: any SettleLedger, _ orderId: String, _ transactionId: String, answers: [SimulatedServerAnswer]) throws {
        let transaction = world.scriptTransaction(transactionId, answers: answers)
        _ = try ledger.enqueue(NewOrder(orderId: orderId, userId: "u-\(orderId)", productId: world.coins,
                                        signedTransaction: try transaction.signed(at: world.time.unixSeconds * 1000)))
    }

    func testA429AboveTheFloor_defersTheOrder_dueWithoutAttemptOrBackoff_breakerClosed_andThePassClaimsNoMoreOfTheStore() throws {
        _ = try world.writeConfig(receiptAPI: false, serverAPI: true, schedule: [("concurrency", .number(1))],
                              overrides: schema.map { [("ledger", .string($0.url))] } ?? [])
        let ledger = try makeLedger()
        let pacer = try world.pacer()
        try enqueue(ledger, "o-a", "2000000960000001", answers: [.rateLimited(retryAfter: "2")])
        try enqueue(ledger, "o-b", "2000000960000002", answers: [])
        let before = world.time.unixSeconds
        let report = try world.reconciler(ledger: ledger, pacer: pacer).runPass()
        XCTAssertEqual(report.paced[.appStore], 1)
        XCTAssertTrue(report.summaryLine.hasSuffix(", 1 paced"), report.summaryLine)
        XCTAssertEqual(world.simulator.serverRequests.count, 1, "the second order was not worked on once the bucket was spent")
        let a = try XCTUnwrap(try ledger.orderRecord("o-a"))
        XCTAssertEqual(a.order.state, .pending)
        XCTAssertEqual(a.order.attempts, 0, "no attempt counted")
        XCTAssertLessThanOrEqual(a.order.nextAttemptAt, before, "still due: no backoff, and it keeps its place in the claim order")
        let paced = try XCTUnwrap(a.history.last)
        XCTAssertEqual(paced.outcome, "paced")
        XCTAssertTrue(paced.detail?.hasPrefix("paced: app_store transaction_info (Production) at 25/s") == true, "\(String(describing: paced.detail))")
        XCTAssertEqual(try ledger.orderRecord("o-b")?.order.state, .pending)
        XCTAssertEqual(try ledger.orderRecord("o-b")?.history.filter { $0.kind == .verification }.count, 0)
        let breaker = try XCTUnwrap(try ledger.breakers()[.appStore])
        XCTAssertEqual(breaker.state, .closed)
        XCTAssertEqual(breaker.consecutiveFailures, 0, "settle too fast is not Apple down")
        XCTAssertEqual(pacer.bucket(transactionInfo)?.rate, 25, "the 429 halved the bucket")
        world.time.advance(by: 2)
        _ = try world.reconciler(ledger: ledger, pacer: pacer).runPass()
        XCTAssertEqual(try ledger.orderRecord("o-a")?.order.state, .finished)
        XCTAssertEqual(try ledger.orderRecord("o-b")?.order.state, .finished)
    }

    func testA429AtTheFloorRate_isAppleRefusingBelowItsRate_andOpensTheBreaker() throws {
        let ledger = try makeLedger()
        let pacer = try world.pacer(atFloor: [transactionInfo])
        try enqueue(ledger, "o-f", "2000000960000003", answers: [.rateLimited(retryAfter: "60")])
        let report = try world.reconciler(ledger: ledger, pacer: pacer).runPass()
        XCTAssertTrue(report.breakersOpened.contains(.appStore))
        XCTAssertNil(report.paced[.appStore])
        XCTAssertEqual(try ledger.breakers()[.appStore]?.state, .open)
        XCTAssertEqual(try ledger.orderRecord("o-f")?.order.attempts, 0)
        XCTAssertEqual(pacer.bucket(transactionInfo)?.floorThrottles, 1)
    }

    func testTwoLiveDaemons_eachHostTakesItsShareOfEveryBucket_savedForStatusAndMetrics() throws {
        let ledger = try makeLedger()
        let other = LeaseOwner(host: "other-host.example", pid: 4242, leaseStart: "1")
        try ledger.recordDaemonStarted(.current)
        try ledger.recordDaemonStarted(other)
        let pacer = try world.pacer()
        try enqueue(ledger, "o-h", "2000000960000004", answers: [])
        _ = try world.reconciler(ledger: ledger, pacer: pacer).runPass()
        let share = 1 / Double(hostsWithTwoDaemons)
        XCTAssertEqual(pacer.share, share)
        XCTAssertEqual(pacer.bucket(transactionInfo)?.ceilingRate, 50 * share, "each host's rate is its share of Apple's 50/s")
        let saved = try XCTUnwrap(try ledger.pacerBuckets(since: 0).first { $0.snapshot.key == transactionInfo })
        XCTAssertEqual(saved.host, LeaseOwner.current.host)
        XCTAssertEqual(saved.hosts, hostsWithTwoDaemons)
        XCTAssertEqual(saved.snapshot.rate, 50 * share)
        XCTAssertEqual(saved.snapshot.configuredRate, 50)
        XCTAssertEqual(saved.snapshot.granted, 1)

        // What status and the metrics show of it, with a backlog of three.
        for i in 0..<3 { try enqueue(ledger, "o-backlog-\(i)", "200000096000001\(i)", answers: []) }
        let summary = try ledger.summary(OrderFilter(limit: 0))
        let buckets = StatusView.pacedBuckets(try ledger.pacerBuckets(since: world.time.unixSeconds - PostgresLedger.liveWindowSeconds))
        let text = StatusView.text(summary, pacer: buckets, now: world.time.unixSeconds)
        XCTAssertTrue(text.contains("  pacer: transaction_info (Production) 50/s of 50/s"
                                    + (hostsWithTwoDaemons > 1 ? " (2 hosts, 25/s each, 1 reporting)" : ";")), text)
        XCTAssertTrue(text.contains("  backlog: 3 due, at 50/s: under a minute (transaction_info)"), text)
        let json = StatusView.json(pacer: buckets, summary: summary)
        XCTAssertEqual(json["app_store"]?["backlog"]?["due"], .number(3))
        XCTAssertEqual(json["app_store"]?["buckets"]?.arrayValue?.first { $0["group"] == .string("transaction_info") }?["hosts"],
                       .number(hostsWithTwoDaemons))
        let metrics = Metrics()
        metrics.observePacer(pacer.snapshots())
        let rendered = metrics.render(summary: summary, bundleId: world.bundleId)
        XCTAssertTrue(rendered.contains("settle_pacer_rate{bundle_id=\"\(world.bundleId)\",store=\"app_store\",group=\"transaction_info\",environment=\"Production\"} \(Metrics.format(50 * share))"), rendered)
        XCTAssertTrue(rendered.contains("settle_pacer_requests_total{bundle_id=\"\(world.bundleId)\",store=\"app_store\",group=\"transaction_info\",environment=\"Production\"} 1"), rendered)

        // The other host stops: its share comes back at the next pass.
        try ledger.recordDaemonStopped(other)
        world.time.advance(by: 1)
        _ = try world.reconciler(ledger: ledger, pacer: pacer).runPass()
        XCTAssertEqual(pacer.share, 1)
        XCTAssertEqual(pacer.bucket(transactionInfo)?.ceilingRate, 50)
        let again = try XCTUnwrap(try ledger.pacerBuckets(since: 0).first { $0.snapshot.key == transactionInfo })
        XCTAssertEqual(again.grantedLastPass, 3, "the three backlog orders, counted since the previous save")
        XCTAssertEqual(again.passSeconds, world.time.unixSeconds - saved.updatedAt)
    }

    func testAnOrderNearItsRefundDeadline_lendsRefundDeadlinePriorityToAllItsCalls() {
        let now: Int64 = 1_800_000_000
        func play(boughtAgo: Int64) -> Order {
            Order(orderId: "p", userId: "u", productId: "gems", state: .pending, attempts: 0, nextAttemptAt: now,
                  createdAt: now - boughtAgo, updatedAt: now, store: .googlePlay)
        }
        XCTAssertEqual(Reconciler.pacerPriority(of: play(boughtAgo: RefundDeadline.urgentAfterSeconds(.googlePlay)! + 60), now: now), .refundDeadline)
        XCTAssertEqual(Reconciler.pacerPriority(of: play(boughtAgo: 3600), now: now), .dueOrders, "two days and more left: due work")
        let apple = Order(orderId: "a", userId: "u", productId: "coins", state: .pending, attempts: 0, nextAttemptAt: now,
                          createdAt: now - 10 * 86_400, updatedAt: now)
        XCTAssertEqual(Reconciler.pacerPriority(of: apple, now: now), .dueOrders, "Apple refunds nothing unfinished")
    }
}

/// The paced passes on a PostgreSQL ledger: two live daemons are two hosts, each at half the rate.
final class PacedPassPostgresTests: PacedPassTests {
    override var hostsWithTwoDaemons: Int { 2 }

    override func setUpWithError() throws {
        schema = try TestPostgres.freshSchema()
        try super.setUpWithError()
    }

    override func makeLedger() throws -> any SettleLedger { try PostgresLedger(url: schema!.url, time: world.time) }

    func testADeadHostsShare_returnsOnceItsHeartbeatIsOlderThanTheLiveWindow() throws {
        let ledger = try makeLedger()
        try ledger.recordDaemonStarted(.current)
        try ledger.recordDaemonStarted(LeaseOwner(host: "dead-host.example", pid: 7, leaseStart: "1"))
        XCTAssertEqual(try ledger.pacerHosts(besides: .current), 2)
        XCTAssertEqual(try ledger.pacerHosts(besides: LeaseOwner(host: "one-shot.example", pid: 9, leaseStart: "1")), 3,
                       "a one-shot settle reconcile counts itself once more")
        // Its last heartbeat a second more than the live window ago (the database's clock).
        let connection = try PostgresConnection(url: schema!.url)
        defer { connection.close() }
        try connection.execute("UPDATE daemons SET heartbeat_at = heartbeat_at - \(PostgresLedger.liveWindowSeconds + 1) WHERE host = 'dead-host.example'")
        XCTAssertEqual(try ledger.pacerHosts(besides: .current), 1)
        let pacer = try world.pacer()
        _ = try world.reconciler(ledger: ledger, pacer: pacer).runPass()
        XCTAssertEqual(pacer.share, 1, "the whole rate is this host's again")
    }

    // Linux test discovery lists only the methods a class declares.
    override func testA429AboveTheFloor_defersTheOrder_dueWithoutAttemptOrBackoff_breakerClosed_andThePassClaimsNoMoreOfTheStore() throws { try super.testA429AboveTheFloor_defersTheOrder_dueWithoutAttemptOrBackoff_breakerClosed_andThePassClaimsNoMoreOfTheStore() }
    override func testA429AtTheFloorRate_isAppleRefusingBelowItsRate_andOpensTheBreaker() throws { try super.testA429AtTheFloorRate_isAppleRefusingBelowItsRate_andOpensTheBreaker() }
    override func testTwoLiveDaemons_eachHostTakesItsShareOfEveryBucket_savedForStatusAndMetrics() throws { try super.testTwoLiveDaemons_eachHostTakesItsShareOfEveryBucket_savedForStatusAndMetrics() }
}

/// The human side of a backlog: counts and durations as `settle status` prints them.
final class DrainTimeTests: XCTestCase {
    func testTheIssuesExample_andTheRoundingAPersonPlansBy() {
        XCTAssertEqual(DrainTime.text(due: 1_200_000, rate: 50), "1.2 M due, at 50/s: about 6 h 40 min")
        XCTAssertEqual(DrainTime.text(due: 840, rate: 12.5), "840 due, at 12.5/s: about 1 min")
        XCTAssertEqual(DrainTime.text(due: 0, rate: 50), "0 due, at 50/s: nothing to drain")
        XCTAssertEqual(DrainTime.count(12_500), "12.5 k")
        XCTAssertEqual(DrainTime.count(3_000), "3 k")
        XCTAssertEqual(DrainTime.duration(seconds: 20), "under a minute")
        XCTAssertEqual(DrainTime.duration(seconds: 3 * 3600), "about 3 h")
        XCTAssertEqual(DrainTime.duration(seconds: 3 * 86_400 + 4 * 3600 + 100), "about 3 d 4 h")
        XCTAssertEqual(DrainTime.text(due: 10, rate: 0), "10 due, at 0/s: not at all at this rate")
        XCTAssertEqual(Pacer.formatRate(0.5), "0.50")
    }
}
