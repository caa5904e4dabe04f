import Foundation
import SettleTesting
import XCTest
@testable import SettleApp
@testable import SettleLedger

/// The notification tests of `NotificationInboxTests`, every one, on a PostgreSQL ledger.
final class NotificationInboxPostgresTests: NotificationInboxTests {
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

    override func poisonOrders(transaction: String) throws {
        try execute("""
            CREATE FUNCTION poisoned() RETURNS trigger LANGUAGE plpgsql AS $$
            BEGIN
                IF NEW.transaction_id = '\(transaction)' THEN RAISE EXCEPTION 'this row cannot be written'; END IF;
                RETURN NEW;
            END $$;
            CREATE TRIGGER poisoned BEFORE INSERT ON orders FOR EACH ROW EXECUTE FUNCTION poisoned();
            """)
    }

    // Linux test discovery lists only the methods a class declares: each inherited test is named
    // here, and `testEveryInboxTest_alsoRunsOnPostgreSQL` fails when one is missing.
    override func testAppleDatesOfAnySize_inSignedNotificationsAndTheHistoryCursor_neverTrap_andEachPurchaseIsSettledOnce() throws { try super.testAppleDatesOfAnySize_inSignedNotificationsAndTheHistoryCursor_neverTrap_andEachPurchaseIsSettledOnce() }
    override func testRescindConsentAndExternalPurchaseToken_atTheEndpoint_areStoredAsRecorded_andAnswered200() throws { try super.testRescindConsentAndExternalPurchaseToken_atTheEndpoint_areStoredAsRecorded_andAnswered200() }
    override func testTypesSubtypesAndTransactionFieldsAppleAddsLater_areStoredAndRecorded_andTheirPurchaseDelivered() throws { try super.testTypesSubtypesAndTransactionFieldsAppleAddsLater_areStoredAndRecorded_andTheirPurchaseDelivered() }
    override func testNewShapes_whoseBundleOrEnvironmentFails_areStillRefused() throws { try super.testNewShapes_whoseBundleOrEnvironmentFails_areStillRefused() }
    override func testHistoryCatchUp_readsOnPastNotificationsSettleDoesNotUse_andDeliversThePurchaseAfterThem() throws { try super.testHistoryCatchUp_readsOnPastNotificationsSettleDoesNotUse_andDeliversThePurchaseAfterThem() }
    override func testNotificationWhoseSignedTransactionSettleCannotRead_isKeptNotApplied_answered200_andTheCatchUpMovesOn() throws { try super.testNotificationWhoseSignedTransactionSettleCannotRead_isKeptNotApplied_answered200_andTheCatchUpMovesOn() }
    override func testConsumptionAnswer_refusedWith4000185ForAFamilyMembersTransaction_isRecordedFinal_andNeverSentAgain() throws { try super.testConsumptionAnswer_refusedWith4000185ForAFamilyMembersTransaction_isRecordedFinal_andNeverSentAgain() }
    override func testProratedRefund_revokeCarriesApplesRevocationTypeAndPercentage_andARefundWithoutOneSaysREFUND_FULL() throws { try super.testProratedRefund_revokeCarriesApplesRevocationTypeAndPercentage_andARefundWithoutOneSaysREFUND_FULL() }
    override func testPurchaseNotification_whileAStrangersOrderNamesItsTransaction_createsTheBuyersOwnOrder_andOnlyTheBuyerIsGranted() throws { try super.testPurchaseNotification_whileAStrangersOrderNamesItsTransaction_createsTheBuyersOwnOrder_andOnlyTheBuyerIsGranted() }
    override func testPurchaseNotification_forTheBuyersOrderRejectedNotFound_requeuesItWithApplesSignedTransaction_andDeliversItOnce() throws { try super.testPurchaseNotification_forTheBuyersOrderRejectedNotFound_requeuesItWithApplesSignedTransaction_andDeliversItOnce() }
    override func testPurchaseNotification_forAnotherUsersRejectedOrder_isNotRequeued_theBuyerGetsItsOwnOrder() throws { try super.testPurchaseNotification_forAnotherUsersRejectedOrder_isNotRequeued_theBuyerGetsItsOwnOrder() }
    override func testPurchaseNotification_forABackendRowWhoseOnlyProofIsItsSignedTransaction_isAttachedToIt_andGrantedOnce() throws { try super.testPurchaseNotification_forABackendRowWhoseOnlyProofIsItsSignedTransaction_isAttachedToIt_andGrantedOnce() }
    override func testConsumptionRequest_forAPurchaseSettleCannotShowDelivered_sendsNoAnswer_andRecordsWhy() throws { try super.testConsumptionRequest_forAPurchaseSettleCannotShowDelivered_sendsNoAnswer_andRecordsWhy() }
    override func testConsumptionRequest_forAGrantRecordedOutsideSettle_isAnsweredDelivered() throws { try super.testConsumptionRequest_forAGrantRecordedOutsideSettle_isAnsweredDelivered() }
    override func testConsumptionAnswer_isSentBeforeThePassClaimsItsDueOrders() throws { try super.testConsumptionAnswer_isSentBeforeThePassClaimsItsDueOrders() }
    override func testConsumptionAnswer_whoseStoredEnvironmentIsNotApplesSpelling_isSentNowhere_andTheTextStaysVisible() throws { try super.testConsumptionAnswer_whoseStoredEnvironmentIsNotApplesSpelling_isSentNowhere_andTheTextStaysVisible() }
    override func testConsumptionRequest_whileItsOrderIsStillBeingSettled_waits_andIsAnsweredDeliveredOnceItIs() throws { try super.testConsumptionRequest_whileItsOrderIsStillBeingSettled_waits_andIsAnsweredDeliveredOnceItIs() }
    override func testSecondRefund_afterAReversalOfARevokedOne_isRevokedAgain_underAKeyOfItsOwn() throws { try super.testSecondRefund_afterAReversalOfARevokedOne_isRevokedAgain_underAKeyOfItsOwn() }
    override func testSecondRefund_afterAReversalBeforeTheRevokeRan_isRevokedOnce() throws { try super.testSecondRefund_afterAReversalBeforeTheRevokeRan_isRevokedOnce() }
    override func testRefund_ofAnOrderWhoseHookTimedOut_isStillRevoked_andNeverDeliveredAgain() throws { try super.testRefund_ofAnOrderWhoseHookTimedOut_isStillRevoked_andNeverDeliveredAgain() }
    override func testFirstCatchUp_withoutBackfillSince_startsAtNow_andAPurchaseFromBeforeIsReportedNotDelivered() throws { try super.testFirstCatchUp_withoutBackfillSince_startsAtNow_andAPurchaseFromBeforeIsReportedNotDelivered() }
    override func testFirstCatchUp_withBackfillSince_readsFromThere_andReportsThePurchasesItFindsForAPerson() throws { try super.testFirstCatchUp_withBackfillSince_readsFromThere_andReportsThePurchasesItFindsForAPerson() }
    override func testHistoryNotificationOurVerifierRefuses_stopsTheCatchUp_keepsItsPlace_andIsReadOnceTheVerifierIsFixed() throws { try super.testHistoryNotificationOurVerifierRefuses_stopsTheCatchUp_keepsItsPlace_andIsReadOnceTheVerifierIsFixed() }
    override func testHistoryNotificationWhoseEffectCannotBeWritten_isKeptNotApplied_andTheCatchUpMovesOn() throws { try super.testHistoryNotificationWhoseEffectCannotBeWritten_isKeptNotApplied_andTheCatchUpMovesOn() }
    override func testSyncHistory_reportsProgressAfterEveryPage() throws { try super.testSyncHistory_reportsProgressAfterEveryPage() }
    override func testBackendRowWithAnAppleOrderId_isQuarantinedRowInvalid_andNeverDelivered() throws { try super.testBackendRowWithAnAppleOrderId_isQuarantinedRowInvalid_andNeverDelivered() }
    override func testRevokeURL_equalToTheGrantURL_isRefused() throws { try super.testRevokeURL_equalToTheGrantURL_isRefused() }
    override func testBackfillSince_mustBeAnRFC3339Time() throws { try super.testBackfillSince_mustBeAnRFC3339Time() }

    func testEveryInboxTest_alsoRunsOnPostgreSQL() throws {
        let folder = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        let base = try String(contentsOf: folder.appendingPathComponent("NotificationInboxTests.swift"), encoding: .utf8)
        let here = try String(contentsOf: URL(fileURLWithPath: #filePath), encoding: .utf8)
        for line in base.split(separator: "\n") where line.hasPrefix("    func test") && line.hasSuffix("() throws {") {
            let name = line.dropFirst("    func ".count).prefix { $0 != "(" }
            XCTAssertTrue(here.contains("override func \(name)() throws { try super.\(name)() }"), "\(name) does not run on PostgreSQL")
        }
    }
}
