import Foundation
import SettleCore
import SettleTesting
import XCTest

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
    override func testRefundAfterDelivery_withoutARevokeRoute_waitsVisiblyInStatus_andNothingIsSentToTheGrantHook() throws { try super.testRefundAfterDelivery_withoutARevokeRoute_waitsVisiblyInStatus_andNothingIsSentToTheGrantHook() }
    override func testConsumptionRequest_isAnsweredWithTheLedgersFacts() throws { try super.testConsumptionRequest_isAnsweredWithTheLedgersFacts() }
    override func testFirstStart_asksAppleForNoHistoryFromBeforeIt_andDeliversNothingItDidNotHear() throws { try super.testFirstStart_asksAppleForNoHistoryFromBeforeIt_andDeliversNothingItDidNotHear() }
    override func testEnqueue_ofAnOrderIdStartingWithApple_isRefused65() throws { try super.testEnqueue_ofAnOrderIdStartingWithApple_isRefused65() }
    override func testOrderEnqueuedWithOnlyASignedTransaction_isFoundByItsTransactionId_whenAppleTellsFirst() throws { try super.testOrderEnqueuedWithOnlyASignedTransaction_isFoundByItsTransactionId_whenAppleTellsFirst() }
    override func testHistoryCall429_opensTheBreaker_andNothingCrashes() throws { try super.testHistoryCall429_opensTheBreaker_andNothingCrashes() }
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
