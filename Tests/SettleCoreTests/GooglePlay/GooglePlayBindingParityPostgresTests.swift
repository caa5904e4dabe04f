import Foundation
import SettleTesting
import XCTest
@testable import SettleLedger

/// `GooglePlayBindingParityTests` on a PostgreSQL ledger (a schema of its own per test).
final class GooglePlayBindingParityPostgresTests: GooglePlayBindingParityTests {
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

    // Linux test discovery lists only the methods a class declares: each inherited test is named here.
    override func testAcknowledgeAfterAssign_carriesTheUsersAccountId_andGoogleShowsItOnThePurchase() throws { try super.testAcknowledgeAfterAssign_carriesTheUsersAccountId_andGoogleShowsItOnThePurchase() }
    override func testPurchaseAcknowledgedBeforeTheAssignment_getsNoAccountId_andItsHistorySaysWhy() throws { try super.testPurchaseAcknowledgedBeforeTheAssignment_getsNoAccountId_andItsHistorySaysWhy() }
    override func testAccountIdGoogleWouldRefuseOrThatLooksLikePersonalData_isNeverSent_andTheAcknowledgeStillHappens() throws { try super.testAccountIdGoogleWouldRefuseOrThatLooksLikePersonalData_isNeverSent_andTheAcknowledgeStillHappens() }
    override func testGoogleRefusingTheAccountId_neverCostsTheAcknowledge_andTheOrderSaysSo() throws { try super.testGoogleRefusingTheAccountId_neverCostsTheAcknowledge_andTheOrderSaysSo() }
    override func testNotificationKindsTypesAndFieldsGoogleAddsLater_areStoredAndRecorded_neverRefused() throws { try super.testNotificationKindsTypesAndFieldsGoogleAddsLater_areStoredAndRecorded_neverRefused() }
    override func testSubscriptionAnswerWithFieldsAndStatesGoogleAddsLater_isRead_andAnUnknownStateWaitsForAPerson() throws { try super.testSubscriptionAnswerWithFieldsAndStatesGoogleAddsLater_isRead_andAnUnknownStateWaitsForAPerson() }
    override func testResubscriptionInThePlayStore_goesToTheUserOfTheExpiredGrantItNames_withTheEvidenceInItsHistory() throws { try super.testResubscriptionInThePlayStore_goesToTheUserOfTheExpiredGrantItNames_withTheEvidenceInItsHistory() }
    override func testResubscriptionWhoseExpiredOrderWasRefunded_staysUnclaimed_andSaysWhy() throws { try super.testResubscriptionWhoseExpiredOrderWasRefunded_staysUnclaimed_andSaysWhy() }
    override func testResubscriptionWhoseExpiredOrderSupportTransferred_staysUnclaimed_andSaysWhy() throws { try super.testResubscriptionWhoseExpiredOrderSupportTransferred_staysUnclaimed_andSaysWhy() }
    override func testResubscriptionByAnAccountIdNoVerifiedOrderCarries_orATokenNeverGranted_staysUnclaimed() throws { try super.testResubscriptionByAnAccountIdNoVerifiedOrderCarries_orATokenNeverGranted_staysUnclaimed() }
    override func testOnHoldWithGooglesContext_waitsWithoutAPerson_thenIsDeliveredOnceGoogleRecovers() throws { try super.testOnHoldWithGooglesContext_waitsWithoutAPerson_thenIsDeliveredOnceGoogleRecovers() }
    override func testOnHoldWithoutAContext_stillNeedsAPerson() throws { try super.testOnHoldWithoutAContext_stillNeedsAPerson() }
    override func testGracePeriodContext_isDelivered_andShownInTheOrdersStatus() throws { try super.testGracePeriodContext_isDelivered_andShownInTheOrdersStatus() }

    func testEveryBindingParityTest_alsoRunsOnPostgreSQL() throws {
        let folder = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        let base = try String(contentsOf: folder.appendingPathComponent("GooglePlayBindingParityTests.swift"), encoding: .utf8)
        let here = try String(contentsOf: URL(fileURLWithPath: #filePath), encoding: .utf8)
        for line in base.split(separator: "\n") where line.hasPrefix("    func test") && line.hasSuffix("() throws {") {
            let name = line.dropFirst("    func ".count).prefix { $0 != "(" }
            XCTAssertTrue(here.contains("override func \(name)() throws { try super.\(name)() }"), "\(name) does not run on PostgreSQL")
        }
    }
}
