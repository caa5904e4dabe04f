import SettleTesting
import Synchronization
import XCTest
@testable import SettleApp
@testable import SettleBase
@testable import SettleModel
@testable import SettleLedger
@testable import SettleEngine
@testable import SettleAppStoreSimulator

/// Whole passes through a real ledger file, the simulator over loopback and real hook processes.
final class ReconcilerTests: XCTestCase {
    var world: TestWorld!
    var ledger: SQLiteLedger!
    let logLines = LineCollector()

    override func setUpWithError() throws {
        world = try TestWorld()
        try world.writeConfig()
        ledger = try world.ledger()
    }

    override func tearDown() {
        ledger = nil
        world = nil
    }

    func pass(_ orderIds: [String] = []) throws -> PassReport {
        let lines = logLines
        let log = Log(environment: [:], time: world.time, sink: { line in lines.append(line) })
        return try world.reconciler(ledger: ledger, log: log).runPass(orderIds: orderIds)
    }

    func order(_ id: String) throws -> Order { try XCTUnwrap(try ledger.orderRecord(id)?.order) }
    func history(_ id: String) throws -> [HistoryEntry] { try XCTUnwrap(try ledger.orderRecord(id)?.history) }

    /// Enqueues an order whose receipt holds one coins transaction `txn`.
    func enqueueValid(_ id: String, txn: String, withTransactionId: Bool = true, answers: [SimulatedAnswer] = []) throws {
        let receipt = world.scriptReceipt(id, [SimulatedTransaction(productId: world.coins, transactionId: txn)], answers: answers)
        _ = try ledger.enqueue(NewOrder(orderId: id, userId: "u-\(id)", productId: world.coins,
                                        transactionId: withTransactionId ? txn : nil, receipt: receipt))
    }

    func useHook(exit code: Int32, extra: String = "", timeout: Double = 10, schedule: [(String, JSONValue)] = []) throws {
        let path = try world.hook("hook-\(code).sh", exit: code, extra: extra)
        try world.writeConfig(hook: path, hookTimeout: timeout, schedule: schedule)
    }

    // MARK: - Hook results (SPEC section 5)

    func testHookExit0_finishesTheOrder_withThePayloadAndEnvironmentOfTheContract() throws {
        try enqueueValid("o-1", txn: "2000000123456789")
        let report = try pass()
        XCTAssertEqual(report.summaryLine, "reconciled 1: 1 finished, 0 rejected, 0 retrying, 0 needs attention")
        let o = try order("o-1")
        XCTAssertEqual(o.state, .finished)
        XCTAssertNotNil(o.finishedAt)
        XCTAssertEqual(world.deliveries, ["2000000123456789 o-1"])
        let payload = try JSONValue.parse(try Data(contentsOf: URL(fileURLWithPath: world.folder + "/payload-o-1.json")))
        XCTAssertEqual(payload.objectMembers?.map(\.0), ["event", "store", "order_id", "user_id", "product_id", "product_type", "quantity", "grant",
                                                         "transaction_id", "original_transaction_id", "environment",
                                                         "purchase_date", "expires_date", "idempotency_key", "refunds_90d"])
        XCTAssertEqual(payload["event"], .string("grant"))
        XCTAssertEqual(payload["store"], .string("app_store"))
        XCTAssertEqual(payload["product_type"], .string("consumable"))
        XCTAssertEqual(payload["grant"], .object([("coins", .number(100))]))
        XCTAssertEqual(payload["idempotency_key"], .string("2000000123456789"))
        XCTAssertEqual(payload["environment"], .string("Production"))
        XCTAssertEqual(payload["purchase_date"], .string("2025-11-29T10:04:05Z"))
        XCTAssertEqual(payload["expires_date"], .null)
        XCTAssertEqual(payload["refunds_90d"], .number(0), "the buyer's refunds in 90 days: none")
        let delivery = try XCTUnwrap(try history("o-1").last)
        XCTAssertEqual(delivery.kind, .delivery)
        XCTAssertEqual(delivery.hookExit, 0)
        XCTAssertEqual(delivery.detail, "hook saw o-1\n", "the hook's output is kept")
    }

    func testHookExit75_retriesLaterWithBackoff_countingAnAttempt() throws {
        try useHook(exit: 75)
        try enqueueValid("o-1", txn: "100")
        let report = try pass()
        XCTAssertEqual(report.retrying, 1)
        let o = try order("o-1")
        XCTAssertEqual(o.state, .pending)
        XCTAssertEqual(o.attempts, 1)
        XCTAssertEqual(o.nextAttemptAt, world.time.unixSeconds + 30)
        XCTAssertEqual(try pass().reconciled, 0, "not due again before its backoff")
    }

    func testHookExit65_needsAttentionAtOnce() throws {
        try useHook(exit: 65)
        try enqueueValid("o-1", txn: "100")
        XCTAssertEqual(try pass().needsAttention, 1)
        let o = try order("o-1")
        XCTAssertEqual(o.state, .needsAttention)
        XCTAssertEqual(o.reason, "hook_refused")
        XCTAssertEqual(o.attempts, 1)
    }

    func testHookFailingEveryTime_needsAttentionAtMaxAttempts_withTheSameKeyEachTime() throws {
        try useHook(exit: 3)
        try enqueueValid("o-1", txn: "100")
        for attempt in 1...3 {
            _ = try pass()
            XCTAssertEqual(try order("o-1").attempts, attempt)
            world.time.advance(by: 7200)
        }
        let o = try order("o-1")
        XCTAssertEqual(o.state, .needsAttention)
        XCTAssertEqual(o.reason, "attempts_exhausted")
        XCTAssertEqual(world.deliveries, Array(repeating: "100 o-1", count: 3))
    }

    func testHookKilledBySignal_isAFailedAttempt() throws {
        try useHook(exit: 0, extra: "kill -TERM $$")
        try enqueueValid("o-1", txn: "100")
        _ = try pass()
        let o = try order("o-1")
        XCTAssertEqual(o.state, .pending)
        XCTAssertEqual(o.attempts, 1)
        XCTAssertTrue(o.lastError?.contains("signal 15") == true, o.lastError ?? "")
    }

    func testHookPastItsTimeout_isKilledWithItsProcessGroup_andRetried() throws {
        try useHook(exit: 0, extra: "sleep 30 & echo $! > \(world.folder)/child.pid; wait", timeout: 0.5)
        try enqueueValid("o-1", txn: "100")
        _ = try pass()
        let o = try order("o-1")
        XCTAssertEqual(o.state, .pending)
        XCTAssertEqual(o.attempts, 1)
        XCTAssertTrue(o.lastError?.contains("timeout") == true, o.lastError ?? "")
        let child = try XCTUnwrap(Int32(try String(contentsOfFile: world.folder + "/child.pid", encoding: .utf8)
            .trimmingCharacters(in: .whitespacesAndNewlines)))
        let deadline = Date().addingTimeInterval(5)
        while kill(child, 0) == 0 && !isZombie(child) && Date() < deadline { usleep(20_000) }
        XCTAssertTrue(kill(child, 0) != 0 || isZombie(child), "the hook's child was killed too")
    }

    private func isZombie(_ pid: Int32) -> Bool {
        ((try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8)) ?? "").contains(") Z ")
    }

    func testHookOutput_isCutTo4KiBInTheHistory() throws {
        try useHook(exit: 0, extra: "yes xxxxxxxxxxxxxxx | head -c 20000")
        try enqueueValid("o-1", txn: "100")
        _ = try pass()
        let detail = try XCTUnwrap(try history("o-1").last?.detail)
        XCTAssertLessThanOrEqual(detail.utf8.count, 4096)
        XCTAssertTrue(detail.hasSuffix("[output cut to 4 KiB]"), String(detail.suffix(40)))
    }

    // MARK: - Grants (SPEC section 3)

    func testSameTransactionOnTwoOrders_oneFinished_otherAlreadyGranted() throws {
        let receipt = world.scriptReceipt("shared", [SimulatedTransaction(productId: world.coins, transactionId: "100")])
        for id in ["o-1", "o-2"] {
            _ = try ledger.enqueue(NewOrder(orderId: id, userId: "u", productId: world.coins, transactionId: "100", receipt: receipt))
        }
        let report = try pass()
        XCTAssertEqual(report.finished, 1)
        XCTAssertEqual(report.rejected, 1)
        let states = try [order("o-1"), order("o-2")].map { ($0.state, $0.reason) }
        XCTAssertTrue(states.contains { $0 == (.finished, nil) })
        XCTAssertTrue(states.contains { $0 == (.rejected, "already_granted") })
        XCTAssertEqual(world.deliveries.count, 1, "granted exactly once")
    }

    func testOrdersWithoutTransactionId_eachTakeTheOldestUngrantedTransaction() throws {
        let receipt = world.scriptReceipt("restore", [
            SimulatedTransaction(productId: world.coins, transactionId: "300", purchaseDateMs: 3000),
            SimulatedTransaction(productId: world.coins, transactionId: "100", purchaseDateMs: 1000),
        ], latest: [SimulatedTransaction(productId: world.coins, transactionId: "200", purchaseDateMs: 2000)])
        for id in ["o-1", "o-2", "o-3", "o-4"] {
            _ = try ledger.enqueue(NewOrder(orderId: id, userId: "u", productId: world.coins, receipt: receipt))
        }
        try world.writeConfig(schedule: [("concurrency", .number(1))])
        let report = try pass()
        XCTAssertEqual(report.finished, 3)
        XCTAssertEqual(report.rejected, 1)
        XCTAssertEqual(Set(world.deliveries.map { $0.split(separator: " ")[0] }), ["100", "200", "300"])
        XCTAssertEqual(try order("o-4").reason, "already_granted")
    }

    // MARK: - Rejections end to end

    func testHookOutputWithNULBytes_isKeptWhole() throws {
        try useHook(exit: 0, extra: "printf 'before\\000after\\n'")
        try enqueueValid("o-1", txn: "100")
        _ = try pass()
        XCTAssertEqual(try history("o-1").last?.detail, "hook saw o-1\nbefore\u{0}after\n")
    }

    func testRejections_recordTheirReasonAndCallNoHook_andAnUnknownProductNeedsAPersonInstead() throws {
        let refunded = world.scriptReceipt("refunded", [SimulatedTransaction(productId: world.coins, transactionId: "1", cancellationDateMs: 5)])
        let otherApp = world.scriptReceipt("other-app", bundleId: "com.other", [SimulatedTransaction(productId: world.coins, transactionId: "2")])
        let forged = world.receipt("forged")
        world.simulator.script(forged, .forged)
        _ = try ledger.enqueue(NewOrder(orderId: "refunded", userId: "u", productId: world.coins, transactionId: "1", receipt: refunded))
        _ = try ledger.enqueue(NewOrder(orderId: "other-app", userId: "u", productId: world.coins, transactionId: "2", receipt: otherApp))
        _ = try ledger.enqueue(NewOrder(orderId: "forged", userId: "u", productId: world.coins, receipt: forged))
        _ = try ledger.enqueue(NewOrder(orderId: "gems", userId: "u", productId: "com.example.game.gems", transactionId: "3", receipt: refunded))
        let report = try pass()
        XCTAssertEqual(report.rejected, 3)
        XCTAssertEqual(try order("refunded").reason, "refunded")
        XCTAssertEqual(try order("other-app").reason, "bundle_mismatch")
        XCTAssertEqual(try order("forged").reason, "receipt_invalid")
        // A product missing from the configuration is settle's gap, not Apple's word: a person, never rejected.
        XCTAssertEqual(report.needsAttention, 1)
        XCTAssertEqual(try order("gems").state, .needsAttention)
        XCTAssertEqual(try order("gems").reason, "unknown_product")
        XCTAssertEqual(world.deliveries, [])
        XCTAssertEqual(try history("forged").last?.appleStatus, 21003)
    }

    // MARK: - Apple outages and the breaker

    func testAppleWideFailures_useNoAttempts_andTheBreakerStopsClaimingAfterFive() throws {
        try world.writeConfig(schedule: [("concurrency", .number(1))])
        for i in 1...8 { try enqueueValid("o-\(i)", txn: "\(i)", answers: [.http(503)]) }
        let report = try pass()
        XCTAssertTrue(report.breakersOpened.contains(.appStore))
        XCTAssertEqual(report.storeWideFailures[.appStore, default: 0], 5, "claiming stopped after five consecutive Apple-wide failures")
        XCTAssertTrue(report.storeUnavailableForWholePass)
        let orders = try (1...8).map { try order("o-\($0)") }
        XCTAssertTrue(orders.allSatisfy { $0.state == .pending && $0.attempts == 0 }, "\(orders.map { ($0.state, $0.attempts) })")
        XCTAssertEqual(orders.filter { $0.lastError?.contains("HTTP 503") == true }.count, 5)
        XCTAssertEqual(world.simulator.requests.count, 5)
        // Apple recovers: the next pass an hour later settles everything.
        for i in 1...8 { world.scriptReceipt("o-\(i)", [SimulatedTransaction(productId: world.coins, transactionId: "\(i)")]) }
        world.time.advance(by: 3600)
        XCTAssertEqual(try pass().finished, 8)
    }

    func testBreakerOpeningMidPass_withClaimsTakenInBatches_putsTheUnworkedClaimsBack_pendingAndUntouched() throws {
        // Concurrency 8: each claim takes a batch of four (half, on SQLite), so claims wait for a worker when the breaker opens.
        try world.writeConfig(schedule: [("concurrency", .number(8))])
        let reconciler = try Reconciler.configured(try world.configuration(), ledger: ledger, environment: [:], log: .silent, modules: TestStores.modules)
        XCTAssertEqual(reconciler.claimBatchSize, 4)
        for i in 1...40 { try enqueueValid("o-\(i)", txn: "\(i)", answers: [.http(503)]) }
        let report = try reconciler.runPass()
        XCTAssertTrue(report.breakersOpened.contains(.appStore))
        let orders = try (1...40).map { try order("o-\($0)") }
        XCTAssertTrue(orders.allSatisfy { $0.state == .pending && $0.attempts == 0 && $0.lease == nil },
                      "no claim is left behind: \(orders.map { ($0.orderId, $0.state, $0.attempts) })")
        XCTAssertEqual(orders.filter { $0.lastError?.contains("HTTP 503") == true }.count, world.simulator.requests.count,
                       "only the orders sent to Apple carry its answer")
        XCTAssertLessThan(world.simulator.requests.count, 40, "claiming stopped once the breaker opened")
    }

    func testOpenBreaker_claimsNothingUntilRetryAt_thenProbesWithOneOrder() throws {
        try world.writeConfig(schedule: [("concurrency", .number(1))])
        for i in 1...8 { try enqueueValid("o-\(i)", txn: "\(i)", answers: Array(repeating: .http(503), count: 2)) }
        XCTAssertTrue(try pass().breakersOpened.contains(.appStore))
        XCTAssertEqual(world.simulator.requests.count, 5)
        // Still inside the cool-down: nothing is claimed, and Apple is not asked.
        let waiting = try pass()
        XCTAssertNotNil(waiting.breakerWaits[.appStore])
        XCTAssertTrue(waiting.storeUnavailableForWholePass)
        XCTAssertEqual(world.simulator.requests.count, 5)
        // After it: exactly one probe; it fails again, so the breaker re-opens with twice the cool-down.
        world.time.advance(by: 31)
        let probe = try pass()
        XCTAssertEqual(world.simulator.requests.count, 6)
        XCTAssertEqual(probe.storeWideFailures[.appStore, default: 0], 1)
        let breaker = try ledger.breakers()[.appStore]!
        XCTAssertEqual(breaker.state, .open)
        XCTAssertEqual(breaker.cooldownSeconds, 60)
        XCTAssertTrue((1...8).allSatisfy { (try? order("o-\($0)").attempts) == 0 })
    }

    /// Issue 36, bug 5: the end of an outage is logged as plainly as its start.
    func testAnsweredProbe_closesTheBreaker_andLogsBreakerClosed() throws {
        try world.writeConfig(schedule: [("concurrency", .number(1))])
        for i in 1...5 { try enqueueValid("o-\(i)", txn: "\(i)", answers: [.http(503)]) }
        XCTAssertTrue(try pass().breakersOpened.contains(.appStore))
        XCTAssertFalse(logLines.lines.contains { $0.contains("breaker_closed") }, logLines.lines.joined(separator: "\n"))
        world.time.advance(by: 31)
        _ = try pass()
        XCTAssertEqual(try ledger.breakers()[.appStore]?.state, .closed)
        let closed = logLines.lines.filter { $0.contains("apple.breaker_closed") }
        XCTAssertEqual(closed.count, 1, logLines.lines.joined(separator: "\n"))
        XCTAssertTrue(closed.first?.contains("503") == true, "names the error that opened it: \(closed)")
        _ = try pass()
        XCTAssertEqual(logLines.lines.filter { $0.contains("breaker_closed") }.count, 1, "logged once, when it closed")
    }

    func testWrongSharedSecret_stopsThePass_keepingAttempts() throws {
        try world.write("shared-secret", "not-the-secret", mode: 0o600)
        for i in 1...3 { try enqueueValid("o-\(i)", txn: "\(i)") }
        try world.writeConfig(schedule: [("concurrency", .number(1))])
        let report = try pass()
        XCTAssertEqual(report.configurationFault?.contains("21004"), true)
        XCTAssertEqual(world.simulator.requests.count, 1, "the pass stopped at the first configuration fault")
        for i in 1...3 {
            let o = try order("o-\(i)")
            XCTAssertEqual(o.state, .pending)
            XCTAssertEqual(o.attempts, 0)
        }
    }

    func testTemporaryOrderFailure_countsAttempts_untilNeedsAttention() throws {
        try enqueueValid("o-1", txn: "100", answers: Array(repeating: .status(21002), count: 10))
        for _ in 1...3 {
            _ = try pass()
            world.time.advance(by: 7200)
        }
        let o = try order("o-1")
        XCTAssertEqual(o.state, .needsAttention)
        XCTAssertEqual(o.attempts, 3)
        XCTAssertEqual(o.reason, "attempts_exhausted")
    }

    // MARK: - Concurrency and claims

    func testConcurrency_neverMoreAppleRequestsInFlightThanConfigured() throws {
        try world.writeConfig(schedule: [("concurrency", .number(3))])
        for i in 1...12 { try enqueueValid("o-\(i)", txn: "\(i)", answers: [.slow(seconds: 0.15)]) }
        XCTAssertEqual(try pass().finished, 12)
        XCTAssertLessThanOrEqual(world.simulator.peakConcurrentRequests, 3)
        XCTAssertGreaterThanOrEqual(world.simulator.peakConcurrentRequests, 2, "requests did run in parallel")
    }

    func testNamedOrders_areReconciledEvenWhenNotDue_othersAreLeftAlone() throws {
        try useHook(exit: 75)
        try enqueueValid("o-1", txn: "1")
        try enqueueValid("o-2", txn: "2")
        _ = try pass()
        try world.writeConfig()
        let report = try pass(["o-1", "missing"])
        XCTAssertEqual(report.finished, 1)
        XCTAssertEqual(report.skipped, [PassReport.SkippedOrder(orderId: "missing", why: "no such order", exists: false)])
        XCTAssertEqual(try order("o-1").state, .finished)
        XCTAssertEqual(try order("o-2").state, .pending)
    }

    func testRescuedDelivery_isDeliveredAgainWithTheSameKey() throws {
        try enqueueValid("o-1", txn: "777")
        let dead = LeaseOwner(host: LeaseOwner.current.host, pid: Int32.max - 1, startTime: "1",
                              bootId: LeaseOwner.current.bootId, pidNamespace: LeaseOwner.current.pidNamespace)
        _ = try ledger.claim(orderId: "o-1", owner: dead, leaseSeconds: 3600)
        _ = try ledger.recordVerified(orderId: "o-1", owner: dead, fence: nil, match: .only(VerifiedPurchase(
            transactionId: "777", originalTransactionId: "777", productId: world.coins, environment: "Production",
            quantity: 1, purchaseDateMs: 1, expiresDateMs: nil)), deliveryLeaseSeconds: 3600,
            history: HistoryEntry(at: 0, kind: .verification, outcome: "verified"))
        let report = try pass()
        XCTAssertEqual(report.finished, 1)
        XCTAssertEqual(world.deliveries, ["777 o-1"])
        XCTAssertEqual(world.simulator.requests.count, 0, "a verified order is not verified again")
        XCTAssertTrue(try history("o-1").contains { $0.kind == .rescue && $0.outcome == "redeliver" })
    }

    func testDryRun_verifiesButChangesNothing() throws {
        try enqueueValid("o-1", txn: "100")
        let before = try XCTUnwrap(try ledger.orderRecord("o-1"))
        let preview = try world.reconciler(ledger: ledger).dryRun()
        XCTAssertEqual(preview.wouldGrant, 1)
        XCTAssertTrue(preview.lines[0].contains("would grant transaction 100"), preview.lines[0])
        let after = try XCTUnwrap(try ledger.orderRecord("o-1"))
        XCTAssertEqual(after.order, before.order)
        XCTAssertEqual(after.history, before.history)
        XCTAssertEqual(world.deliveries, [])
        XCTAssertNil(try ledger.grantHolder(transactionId: "100"))
    }

    // MARK: - Secrets

    func testSharedSecret_appearsInNoLogLineAndNoLedgerByte() throws {
        try enqueueValid("o-ok", txn: "1")
        try enqueueValid("o-down", txn: "2", answers: [.http(503)])
        let forged = world.receipt("forged")
        world.simulator.script(forged, .forged)
        _ = try ledger.enqueue(NewOrder(orderId: "o-forged", userId: "u", productId: world.coins, receipt: forged))
        _ = try pass()
        let lines = logLines.lines
        XCTAssertFalse(lines.isEmpty)
        XCTAssertFalse(lines.joined().contains(world.sharedSecret))
        for suffix in ["", "-wal"] {
            let bytes = (try? Data(contentsOf: URL(fileURLWithPath: world.ledgerPath + suffix))) ?? Data()
            XCTAssertNil(bytes.range(of: Data(world.sharedSecret.utf8)), "secret found in ledger\(suffix)")
        }
        XCTAssertEqual("\(try world.configuration().receiptAPI!.sharedSecretFile.read())", "<redacted>")
    }
}
