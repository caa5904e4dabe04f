import Foundation
import SettleTesting
import XCTest
@testable import SettleLedger

/// `GooglePlayReconcileTests` on a PostgreSQL ledger (a schema of its own per test).
final class GooglePlayReconcilePostgresTests: GooglePlayReconcileTests {
    override func makeLedger() throws -> any SettleLedger {
        if schema == nil { schema = try TestPostgres.freshSchema() }
        return try PostgresLedger(url: schema!.url, time: world.time)
    }

    override func execute(_ sql: String) throws {
        if schema == nil { schema = try TestPostgres.freshSchema() }
        let connection = try PostgresConnection(url: schema!.url)
        defer { connection.close() }
        try connection.execute(sql)
    }

    override func poisonOrders(orderId: String) throws {
        try execute("""
            CREATE FUNCTION poisoned() RETURNS trigger LANGUAGE plpgsql AS $$
            BEGIN
                IF NEW.order_id = '\(orderId)' THEN RAISE EXCEPTION 'this row cannot be written' USING ERRCODE = 'check_violation'; END IF;
                RETURN NEW;
            END $$;
            CREATE TRIGGER poisoned BEFORE INSERT ON orders FOR EACH ROW EXECUTE FUNCTION poisoned();
            """)
    }

    // Linux test discovery lists only the methods a class declares: each inherited test is named
    // here, and `testEveryGooglePlayReconcileTest_alsoRunsOnPostgreSQL` fails when one is missing.
    override func testRenewal_goesToTheSubscriberWhoseGrantItIs_neverToTheOldestOrderHoldingTheToken() throws { try super.testRenewal_goesToTheSubscriberWhoseGrantItIs_neverToTheOldestOrderHoldingTheToken() }
    override func testRenewal_thatNoOrderHoldsAGrantOfUnderAVerifiedBinding_isUnclaimed_neverDelivered() throws { try super.testRenewal_thatNoOrderHoldsAGrantOfUnderAVerifiedBinding_isUnclaimed_neverDelivered() }
    override func testUpgrade_goesToTheUserOfTheLinkedGrant_andItsPayloadNamesTheGrantItReplaces() throws { try super.testUpgrade_goesToTheUserOfTheLinkedGrant_andItsPayloadNamesTheGrantItReplaces() }
    override func testSubscriptionRetriedAcrossARenewal_keepsThePeriodItHolds_andTheRenewalIsItsOwnOrder() throws { try super.testSubscriptionRetriedAcrossARenewal_keepsThePeriodItHolds_andTheRenewalIsItsOwnOrder() }
    override func testSubscriptionBoughtOutsideTheApp_isFoundWithoutSubscriptionId_andGrantedItsLatestSuccessfulOrder() throws { try super.testSubscriptionBoughtOutsideTheApp_isFoundWithoutSubscriptionId_andGrantedItsLatestSuccessfulOrder() }
    override func testRefundOfOnePeriod_revokesThatPeriodOnly_andARenewalNotYetDelivered_isStillDelivered() throws { try super.testRefundOfOnePeriod_revokesThatPeriodOnly_andARenewalNotYetDelivered_isStillDelivered() }
    override func testQuantityBasedPartialRefund_revokesOnlyTheVoidedQuantity() throws { try super.testQuantityBasedPartialRefund_revokesOnlyTheVoidedQuantity() }
    override func testVoidedPush_revokesNothingUntilGooglesVoidedPurchasesListConfirmsIt() throws { try super.testVoidedPush_revokesNothingUntilGooglesVoidedPurchasesListConfirmsIt() }
    override func testPurchasePush_forATokenAnotherUsersRejectedOrderHolds_createsTheBuyersOwnOrder() throws { try super.testPurchasePush_forATokenAnotherUsersRejectedOrderHolds_createsTheBuyersOwnOrder() }
    override func testPurchasePush_forAProductNotInTheConfiguration_isKeptAsAnOrder_unknownProduct() throws { try super.testPurchasePush_forAProductNotInTheConfiguration_isKeptAsAnOrder_unknownProduct() }
    override func testPurchaseGoogleSaysConsumedOrAcknowledged_isSetAside_finishedElsewhere_andARetryDeliversIt() throws { try super.testPurchaseGoogleSaysConsumedOrAcknowledged_isSetAside_finishedElsewhere_andARetryDeliversIt() }

    override func testSlowGoogle_getsABoundedShareOfThePass_kicksProgressAfterEachPush_andTheAppStoreOrdersSettleInThatPass() throws { try super.testSlowGoogle_getsABoundedShareOfThePass_kicksProgressAfterEachPush_andTheAppStoreOrdersSettleInThatPass() }
    override func testGoogleFailingAsAWhole_stopsTheStoredPushesAtTheFirst_feedsItsBreaker_andTheRestWaitForItsRetryAfter() throws { try super.testGoogleFailingAsAWhole_stopsTheStoredPushesAtTheFirst_feedsItsBreaker_andTheRestWaitForItsRetryAfter() }
    override func testGoogle429AboveTheFloor_isPaced_thePushesWaitForTheNextPass_andTheBreakerStaysClosed() throws { try super.testGoogle429AboveTheFloor_isPaced_thePushesWaitForTheNextPass_andTheBreakerStaysClosed() }
    override func testPushWhoseEffectCannotBeWritten_isKeptNotApplied_andTheOtherPushesAndPassesGoOn() throws { try super.testPushWhoseEffectCannotBeWritten_isKeptNotApplied_andTheOtherPushesAndPassesGoOn() }
    override func testPushMadeOrder_keepsItsOrigin() throws { try super.testPushMadeOrder_keepsItsOrigin() }

    override func testPushSignedUnderAKeyGoogleRotatedIn_isAcceptedThroughTheConfiguredURL_andUnknownKeysAreCounted() throws { try super.testPushSignedUnderAKeyGoogleRotatedIn_isAcceptedThroughTheConfiguredURL_andUnknownKeysAreCounted() }

    override func testOrdersWithAbsurdTimesAndAttemptsInTheirRows_areSettled_andThePassDoesNotTrap() throws { try super.testOrdersWithAbsurdTimesAndAttemptsInTheirRows_areSettled_andThePassDoesNotTrap() }
    override func testVoidedPollCursorWithAbsurdTimes_neverTraps_andNeverAsksGoogleForAWindowAfterNow() throws { try super.testVoidedPollCursorWithAbsurdTimes_neverTraps_andNeverAsksGoogleForAWindowAfterNow() }
    override func testStoredPushesWithAbsurdTimes_areNotApplied_withTheirReason_andNeverClaimedAgain() throws { try super.testStoredPushesWithAbsurdTimes_areNotApplied_withTheirReason_andNeverClaimedAgain() }

    func testEveryGooglePlayReconcileTest_alsoRunsOnPostgreSQL() throws {
        let folder = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        let base = try String(contentsOf: folder.appendingPathComponent("GooglePlayReconcileTests.swift"), encoding: .utf8)
        let here = try String(contentsOf: URL(fileURLWithPath: #filePath), encoding: .utf8)
        for line in base.split(separator: "\n") where line.hasPrefix("    func test") && line.hasSuffix("() throws {") {
            let name = line.dropFirst("    func ".count).prefix { $0 != "(" }
            XCTAssertTrue(here.contains("override func \(name)() throws { try super.\(name)() }"), "\(name) does not run on PostgreSQL")
        }
    }
}
