import Foundation
import SettleApp
import SettleBase
import SettleAppStoreSimulator
import SettleTesting
import XCTest

/// Apple's notifications of purchases without the user's token, through a running `settle run`
/// and the built binary's `link` and `assign`: bound by a linked `appTransactionId`, and the
/// buyer's token set with Apple after an assignment. On PostgreSQL in the subclass.
class AppleAccountNotificationTests: NotificationTestCase {
    /// A tokenless purchase of Apple Account `account` that Apple knows, and its notification.
    func accountPurchase(_ id: String, account: String) -> SimulatedNotification {
        var t = SimulatedSignedTransaction(transactionId: id, productId: world.coins, bundleId: world.bundleId, purchaseDateMs: nowMs - 5000)
        t.appTransactionId = account
        world.simulator.script(transaction: id, TransactionScript(transaction: t))
        return SimulatedNotification(type: "ONE_TIME_CHARGE", transaction: t, bundleId: world.bundleId, signedDateMs: nowMs - 5000)
    }

    func testTokenlessPurchaseFromApple_ofAnAccountLinkedWithSettleLink_isGrantedToThatUser() throws {
        try writeNotificationConfig()
        let (daemon, url) = try startDaemon()
        let app = try world.write("app.jws", try SimulatedAppTransaction(appTransactionId: "acct-600", bundleId: world.bundleId)
            .signed(at: nowMs))
        try settle(expecting: 0, ["link", "--user", buyer, "--app-transaction-file", app])
        XCTAssertEqual(try world.simulator.send(accountPurchase("600", account: "acct-600"), to: url), 200)
        XCTAssertTrue(eventually(within: 10) { stateInLedger("apple-600") == "finished" }, log(daemon))
        XCTAssertEqual(try order("apple-600")["user_id"]?.looseString, buyer)
        XCTAssertEqual(world.deliveries, ["600 apple-600"])
    }

    func testAssign_ofAnUnclaimedPurchase_setsTheBuyersAppAccountTokenWithApple_once() throws {
        try writeNotificationConfig()
        let (daemon, url) = try startDaemon()
        XCTAssertEqual(try world.simulator.send(accountPurchase("601", account: "acct-601"), to: url), 200)
        XCTAssertTrue(eventually(within: 10) { stateInLedger("apple-601") == "needs_attention" }, log(daemon))
        let assigned = try settle(expecting: 0, ["assign", "apple-601", "--user", buyer]).stdout
        XCTAssertTrue(assigned.contains("Apple is asked to set appAccountToken \(buyer) on it (Set App Account Token)"), assigned)
        daemon.send(SIGUSR1)
        XCTAssertTrue(eventually(within: 10) { self.world.simulator.appAccountTokenRequests.count == 1 }, log(daemon))
        XCTAssertEqual(stateInLedger("apple-601"), "finished")
        let request = try XCTUnwrap(world.simulator.appAccountTokenRequests.first)
        XCTAssertEqual(request.originalTransactionId, "601")
        XCTAssertEqual(request.appAccountToken, buyer)
        XCTAssertNil(request.tokenProblem)
        XCTAssertTrue(eventually(within: 10) {
            ((try? self.history("apple-601")) ?? []).contains { $0["outcome"]?.looseString == "account_token_set" }
        })
    }
}

/// Every test of `AppleAccountNotificationTests`, with the daemon's ledger on PostgreSQL.
final class AppleAccountNotificationPostgresTests: AppleAccountNotificationTests {
    override func setUpWithError() throws {
        try super.setUpWithError()
        postgres = try TestPostgres.freshSchema()
    }

    override func testTokenlessPurchaseFromApple_ofAnAccountLinkedWithSettleLink_isGrantedToThatUser() throws {
        try super.testTokenlessPurchaseFromApple_ofAnAccountLinkedWithSettleLink_isGrantedToThatUser()
    }
    override func testAssign_ofAnUnclaimedPurchase_setsTheBuyersAppAccountTokenWithApple_once() throws {
        try super.testAssign_ofAnUnclaimedPurchase_setsTheBuyersAppAccountTokenWithApple_once()
    }
}
