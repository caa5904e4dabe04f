import Foundation
import SettleApp
import SettleTesting
import Synchronization
import XCTest
import SettleLedger
import SettleAppStoreSimulator

// Linux test discovery lists only the methods a class declares: each inherited test is named in
// these subclasses, and their `...alsoRunsOnPostgreSQL` test fails when one is missing.

/// Every test of `NotificationOrderTests`, with the daemon's ledger on PostgreSQL.
final class NotificationOrderPostgresTests: NotificationOrderTests {
    override func setUpWithError() throws {
        try super.setUpWithError()
        postgres = try TestPostgres.freshSchema()
    }

    override func testPurchaseFromTheAppThenFromApple_isGrantedOnce() throws { try super.testPurchaseFromTheAppThenFromApple_isGrantedOnce() }
    override func testPurchaseFromAppleThenFromTheApp_isGrantedOnce() throws { try super.testPurchaseFromAppleThenFromTheApp_isGrantedOnce() }
    override func testPurchaseWithoutAUser_waitsAsUnclaimed_untilSupportAssignsIt() throws { try super.testPurchaseWithoutAUser_waitsAsUnclaimed_untilSupportAssignsIt() }
    override func testPurchaseFromApple_ofAUserWhoseIdIsUpperCase_isOrderedUnderTheUsersOwnSpelling() throws { try super.testPurchaseFromApple_ofAUserWhoseIdIsUpperCase_isOrderedUnderTheUsersOwnSpelling() }
    override func testPurchaseOfAProductMissingFromTheConfiguration_isKeptAsAnOrderNeedingAPerson_neverForgotten() throws { try super.testPurchaseOfAProductMissingFromTheConfiguration_isKeptAsAnOrderNeedingAPerson_neverForgotten() }
    override func testNotificationSentWhileDown_isFoundByHistoryAtStart_andDelivered() throws { try super.testNotificationSentWhileDown_isFoundByHistoryAtStart_andDelivered() }
    override func testRefundBeforeDelivery_marksTheOrderNeverToBeDelivered() throws { try super.testRefundBeforeDelivery_marksTheOrderNeverToBeDelivered() }
    override func testRefundAfterDelivery_callsTheRevokeHookOnce_withItsOwnKey() throws { try super.testRefundAfterDelivery_callsTheRevokeHookOnce_withItsOwnKey() }
    override func testRefundAfterATransfer_revokesFromTheNewHolder_underTheRefundsKey() throws { try super.testRefundAfterATransfer_revokesFromTheNewHolder_underTheRefundsKey() }
    override func testARefund_cancelsAWaitingRedeliveryOfItsGrant_andARedeliveryOfARefundedGrantIsRefused() throws { try super.testARefund_cancelsAWaitingRedeliveryOfItsGrant_andARedeliveryOfARefundedGrantIsRefused() }
    override func testAfterATransfer_theBuyersNextPurchaseFromApple_isTheBuyers_notTheHolders() throws { try super.testAfterATransfer_theBuyersNextPurchaseFromApple_isTheBuyers_notTheHolders() }
    override func testRefundAfterDelivery_withoutARevokeRoute_waitsVisiblyInStatus_andNothingIsSentToTheGrantHook() throws { try super.testRefundAfterDelivery_withoutARevokeRoute_waitsVisiblyInStatus_andNothingIsSentToTheGrantHook() }
    override func testConsumptionRequest_isAnsweredWithTheLedgersFacts() throws { try super.testConsumptionRequest_isAnsweredWithTheLedgersFacts() }
    override func testFirstStart_asksAppleForNoHistoryFromBeforeIt_andDeliversNothingItDidNotHear() throws { try super.testFirstStart_asksAppleForNoHistoryFromBeforeIt_andDeliversNothingItDidNotHear() }
    override func testEnqueue_ofAnOrderIdStartingWithApple_isRefused65() throws { try super.testEnqueue_ofAnOrderIdStartingWithApple_isRefused65() }
    override func testOrderEnqueuedWithOnlyASignedTransaction_isFoundByItsTransactionId_whenAppleTellsFirst() throws { try super.testOrderEnqueuedWithOnlyASignedTransaction_isFoundByItsTransactionId_whenAppleTellsFirst() }
    override func testHistoryCall429_isPaced_keepsItsPlace_breakerClosed_andNothingCrashes() throws { try super.testHistoryCall429_isPaced_keepsItsPlace_breakerClosed_andNothingCrashes() }
    override func testHistoryCall5xx_isRetriedNextInterval_andThenFindsTheMissedNotification() throws { try super.testHistoryCall5xx_isRetriedNextInterval_andThenFindsTheMissedNotification() }

    func testEveryOrderTest_alsoRunsOnPostgreSQL() throws {
        try assertEveryTestForwarded(from: "NotificationOrderTests.swift")
    }
}

/// Every test of `NotificationEndpointTests`, with the daemon's ledger on PostgreSQL.
final class NotificationEndpointPostgresTests: NotificationEndpointTests {
    override func setUpWithError() throws {
        try super.setUpWithError()
        postgres = try TestPostgres.freshSchema()
    }

    override func testValidNotification_ofAPurchaseNobodyEnqueued_isStoredAnswered200_andDeliveredOnce() throws { try super.testValidNotification_ofAPurchaseNobodyEnqueued_isStoredAnswered200_andDeliveredOnce() }
    override func testReplayedNotification_isANoOp_answered200_andDeliveredOnce() throws { try super.testReplayedNotification_isANoOp_answered200_andDeliveredOnce() }
    override func testForgedWrongBundleAndWrongEnvironment_are403_storeNothing_andAreLogged() throws { try super.testForgedWrongBundleAndWrongEnvironment_are403_storeNothing_andAreLogged() }
    override func testRescindConsentAndExternalPurchaseToken_overRealHTTP_areStoredRecordedAndAnswered200() throws { try super.testRescindConsentAndExternalPurchaseToken_overRealHTTP_areStoredRecordedAndAnswered200() }
    override func testMalformedWrongMethodWrongPathAndOversized_get4xx_andTheDaemonLivesOn() throws { try super.testMalformedWrongMethodWrongPathAndOversized_get4xx_andTheDaemonLivesOn() }
    override func testSlowSender_isCutOffAtTheRequestDeadline_whileOthersAreServed() throws { try super.testSlowSender_isCutOffAtTheRequestDeadline_whileOthersAreServed() }
    override func testSIGTERM_stopsTheEndpointAndTheDaemonCleanly() throws { try super.testSIGTERM_stopsTheEndpointAndTheDaemonCleanly() }

    func testEveryEndpointTest_alsoRunsOnPostgreSQL() throws {
        try assertEveryTestForwarded(from: "NotificationEndpointTests.swift")
    }
}

extension NotificationTestCase {
    /// Fails for each `func test...() throws` of the named file (beside this one) that this file does not forward.
    func assertEveryTestForwarded(from file: String, here: String = #filePath) throws {
        let folder = URL(fileURLWithPath: here).deletingLastPathComponent()
        let base = try String(contentsOf: folder.appendingPathComponent(file), encoding: .utf8)
        let forwarding = try String(contentsOf: URL(fileURLWithPath: here), encoding: .utf8)
        for line in base.split(separator: "\n") where line.hasPrefix("    func test") && line.hasSuffix("() throws {") {
            let name = line.dropFirst("    func ".count).prefix { $0 != "(" }
            XCTAssertTrue(forwarding.contains("override func \(name)() throws { try super.\(name)() }"), "\(name) does not run on PostgreSQL")
        }
    }
}

/// Several `settle run` sharing one PostgreSQL ledger behind one URL: each notification is stored
/// once whichever host Apple reaches, and its effects (an order, a delivery, a revoke) happen once.
final class NotificationSeveralHostsTests: NotificationTestCase {
    override func setUpWithError() throws {
        try super.setUpWithError()
        postgres = try TestPostgres.freshSchema()
    }

    var revokes: [Substring] {
        ((try? String(contentsOfFile: world.folder + "/revokes.log", encoding: .utf8)) ?? "").split(separator: "\n")
    }

    /// Posts one signed notification to every URL at the same moment; returns each answer.
    func postToAll(_ notification: SimulatedNotification, _ urls: [String]) throws -> [Int?] {
        let signed = try notification.signed()
        world.simulator.record(signedPayload: signed, environment: notification.environment, signedDateMs: notification.signedDateMs)
        let answers = Mutex<[Int: Int?]>([:])
        DispatchQueue.concurrentPerform(iterations: urls.count) { i in
            let status = AppleSimulator.post(signedPayload: signed, to: urls[i])
            answers.withLock { $0[i] = status }
        }
        return answers.withLock { all in urls.indices.map { all[$0] ?? nil } }
    }

    func testTwoDaemonsSharingOneLedger_theSameNotificationPostedToEach_makeOneOrderAndOneDelivery_andItsRefundOneRevoke() throws {
        let revoke = try world.write("revoke.sh", """
            #!/bin/sh
            cat > /dev/null
            echo "$SETTLE_IDEMPOTENCY_KEY $SETTLE_ORDER_ID" >> "\(world.folder)/revokes.log"
            """, mode: 0o755)
        try writeNotificationConfig(delivery: .object([("command", .array([.string(world.folder + "/grant.sh")])),
                                                       ("revoke_command", .array([.string(revoke)]))]))
        let (first, firstURL) = try startDaemon()
        let (second, secondURL) = try startDaemon()
        let purchase = applePurchase("500", token: buyer)
        XCTAssertEqual(try postToAll(purchase, [firstURL, secondURL]), [200, 200], "Apple's retry reaching the other host is answered 200")
        XCTAssertTrue(eventually(within: 15) { stateInLedger("apple-500") == "finished" }, log(first) + log(second))
        XCTAssertEqual(try rowCount("notifications"), 1, "stored once")
        XCTAssertEqual(try rowCount("orders"), 1, "one order")
        let outcomes = try Set([firstURL, secondURL].map { _ in try statusJSON(["--notification", purchase.uuid])["outcome"]?.looseString })
        XCTAssertEqual(outcomes, ["order_created"])
        // Apple sends it again, to each host in turn: nothing changes.
        XCTAssertEqual(try world.simulator.send(purchase, to: firstURL), 200)
        XCTAssertEqual(try world.simulator.send(purchase, to: secondURL), 200)

        var refunded = purchase.transaction!
        refunded.revocationDateMs = nowMs
        let refund = SimulatedNotification(type: "REFUND", transaction: refunded, bundleId: world.bundleId, signedDateMs: nowMs)
        XCTAssertEqual(try postToAll(refund, [firstURL, secondURL]), [200, 200])
        XCTAssertTrue(eventually(within: 15) { self.revokes.count >= 1 }, log(first) + log(second))
        // Both hosts run a pass more: neither revokes it again.
        let passes = { (daemon: SettleBinary.Running) in self.log(daemon).components(separatedBy: "pass.finished").count - 1 }
        let before = (passes(first), passes(second))
        for daemon in [first, second] { daemon.send(SIGUSR1) }
        XCTAssertTrue(eventually(within: 15) { passes(first) > before.0 && passes(second) > before.1 })
        XCTAssertEqual(revokes, ["revoke:500 apple-500"], "revoked once across both hosts")
        XCTAssertEqual(try rowCount("notifications"), 2)
        XCTAssertEqual(world.deliveries, ["500 apple-500"], "the hook granted it once")
        XCTAssertEqual(try ledger().revocation(orderId: "apple-500")?.state, "revoked")
    }

    func testDatabaseUnreachable_aNotificationIsAnswered503_andAppleRetryIsStoredAndDeliveredOnceItIsBack() throws {
        // The daemon's own role, so the database can refuse it (and only it) for a while.
        let (base, schema) = try XCTUnwrap(postgres)
        let role = "notify_" + UUID().uuidString.lowercased().replacingOccurrences(of: "-", with: "").prefix(12)
        let admin = try PostgresConnection(url: base)
        defer {
            try? admin.execute("ALTER ROLE \(role) LOGIN")
            TestPostgres.drop(schema: schema)
            try? admin.execute("DROP ROLE IF EXISTS \(role)")
            admin.close()
        }
        try admin.execute("CREATE ROLE \(role) LOGIN; GRANT ALL ON SCHEMA \(schema) TO \(role)")
        let url = try XCTUnwrap(base.range(of: "://").map { base.replacingCharacters(in: $0.upperBound..<(base.range(of: "@")?.lowerBound ?? $0.upperBound),
                                                                                         with: role) })
        postgres = (url, schema)
        try writeNotificationConfig()
        let (daemon, endpoint) = try startDaemon()
        try admin.execute("ALTER ROLE \(role) NOLOGIN")
        try admin.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE usename = '\(role)'")
        let purchase = applePurchase("510", token: buyer)
        XCTAssertEqual(try world.simulator.send(purchase, to: endpoint), 503, log(daemon))
        XCTAssertTrue(log(daemon).contains("notification.not_stored"), log(daemon))
        try admin.execute("ALTER ROLE \(role) LOGIN")
        XCTAssertEqual(try world.simulator.send(purchase, to: endpoint), 200, "Apple's retry, once the database is back")
        XCTAssertTrue(eventually(within: 15) { stateInLedger("apple-510") == "finished" }, log(daemon))
        XCTAssertEqual(world.deliveries, ["510 apple-510"])
    }
}
