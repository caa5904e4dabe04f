import Foundation
import Synchronization
import SettleTesting
import XCTest
@testable import SettleApp
@testable import SettleBase
@testable import SettleModel
import SettleAppStore
@testable import SettleLedger
@testable import SettleEngine
@testable import SettleAppStoreSimulator
@testable import SettleAppStoreModule

/// Purchases Apple reports without the user's appAccountToken, bound by the Apple Account's
/// `appTransactionId`, and Set App Account Token after a person assigns one: through the inbox
/// and passes in process, on the test clock, with the simulator as Apple. SQLite here, PostgreSQL
/// in `AppleAccountInboxPostgresTests`.
class AppleAccountInboxTests: XCTestCase {
    var world: TestWorld!
    var schema: (url: String, schema: String)?
    /// User ids are the buyers' appAccountTokens (`user_binding.app_account_token: "user_id"`).
    let buyer = "6f1e4c2a-5b3d-4e8f-9a0b-1c2d3e4f5a6b"
    let stranger = "9a8b7c6d-5e4f-4a3b-8c2d-1e0f9a8b7c6d"
    let member = "3c2b1a09-8f7e-4d6c-9b5a-4f3e2d1c0b9a"
    var nowMs: Int64 { world.time.unixSeconds * 1000 }

    override func setUpWithError() throws { world = try TestWorld() }
    override func tearDown() {
        schema.map { TestPostgres.drop(schema: $0.schema) }
        world = nil
    }

    func makeLedger() throws -> any SettleLedger { try world.ledger() }

    func configure(delivery: JSONValue? = nil) throws {
        var overrides: [(String, JSONValue)] = [
            ("notifications", .object([("listen", .string("127.0.0.1:0"))])),
            ("user_binding", .object([("app_account_token", .string("user_id"))])),
        ]
        if let delivery { overrides.append(("delivery", delivery)) }
        try world.writeConfig(serverAPI: true, overrides: overrides)
    }

    /// A command delivery with a revoke hook that appends "<key> <order>" to revokes.log.
    func revokingDelivery() throws -> JSONValue {
        let revoke = try world.write("revoke.sh", """
            #!/bin/sh
            cat > /dev/null
            echo "$SETTLE_IDEMPOTENCY_KEY $SETTLE_ORDER_ID" >> "\(world.folder)/revokes.log"
            """, mode: 0o755)
        return .object([("command", .array([.string(world.folder + "/grant.sh")])), ("revoke_command", .array([.string(revoke)]))])
    }

    var revokes: [String] {
        ((try? String(contentsOfFile: world.folder + "/revokes.log", encoding: .utf8)) ?? "").split(separator: "\n").map(String.init)
    }

    func settle(_ ledger: any SettleLedger) throws -> (Reconciler, NotificationInbox) {
        let reconciler = try world.reconciler(ledger: ledger)
        return (reconciler, try XCTUnwrap(reconciler.inbox))
    }

    /// Apple tells the endpoint; returns what storing it did.
    @discardableResult
    func tell(_ inbox: NotificationInbox, _ type: String, _ transaction: SimulatedSignedTransaction,
              file: StaticString = #filePath, line: UInt = #line) throws -> IngestResult {
        let signed = try SimulatedNotification(type: type, transaction: transaction, bundleId: world.bundleId,
                                               signedDateMs: nowMs - 1000).signed()
        guard case let .stored(result) = inbox.receive(signedPayload: signed, source: "endpoint") else {
            XCTFail("not stored", file: file, line: line)
            throw CocoaError(.fileWriteUnknown)
        }
        return result
    }

    func order(_ ledger: any SettleLedger, _ id: String) throws -> Order? { try ledger.orderRecord(id)?.order }

    func history(_ ledger: any SettleLedger, _ id: String) throws -> [HistoryEntry] { try ledger.orderRecord(id)?.history ?? [] }

    /// Runs passes, each after the order's backoff, until the order leaves `pending`.
    func passUntilSettled(_ reconciler: Reconciler, _ ledger: any SettleLedger, _ id: String) throws {
        for _ in 0..<5 where try order(ledger, id)?.state == .pending {
            _ = try reconciler.runPass()
            world.time.advance(by: 3600)
        }
    }

    /// A purchase of the Apple Account `account` that Apple knows, made a few seconds ago.
    func accountPurchase(_ id: String, account: String, product: String? = nil, familyShared: Bool = false,
                         token: String? = nil) -> SimulatedSignedTransaction {
        var t = SimulatedSignedTransaction(transactionId: id, productId: product ?? world.coins, bundleId: world.bundleId,
                                           purchaseDateMs: nowMs - 5000)
        t.appTransactionId = account
        t.appAccountToken = token
        if familyShared { t.inAppOwnershipType = "FAMILY_SHARED" }
        world.simulator.script(transaction: id, TransactionScript(transaction: t))
        return t
    }

    func link(_ ledger: any SettleLedger, _ account: String, to user: String) throws {
        try ledger.linkAppTransaction(AppTransaction(appTransactionId: account, bundleId: world.bundleId, environment: .production,
                                                     signedDateMs: nowMs), userId: user, source: "link", orderId: nil)
    }

    /// `settle assign`'s effect: the buyer named, and the token the configuration gives them owed to Apple.
    func assign(_ ledger: any SettleLedger, _ orderId: String, to user: String) throws {
        let order = try XCTUnwrap(try ledger.orderRecord(orderId)?.order)
        try ledger.assign(orderId: orderId, userId: user, note: nil,
                          accountToken: AssignCommand.tokenToSet(for: order, user: user, configuration: try world.configuration())?.token)
    }

    func outcomes(_ ledger: any SettleLedger, _ id: String) throws -> [String] {
        try history(ledger, id).filter { $0.outcome.hasPrefix("account_token") }.map(\.outcome)
    }

    // MARK: - appTransactionId

    func testTokenlessPurchase_ofALinkedAppleAccount_isGrantedToItsUser_andOfAnUnlinkedOne_waitsUnclaimed() throws {
        try configure()
        let ledger = try makeLedger()
        let (reconciler, inbox) = try settle(ledger)
        try link(ledger, "acct-1", to: buyer)
        XCTAssertEqual(try tell(inbox, "ONE_TIME_CHARGE", accountPurchase("500", account: "acct-1")).outcome, "order_created")
        XCTAssertEqual(try tell(inbox, "ONE_TIME_CHARGE", accountPurchase("501", account: "acct-2")).outcome, "unclaimed")
        try passUntilSettled(reconciler, ledger, "apple-500")
        XCTAssertEqual(try order(ledger, "apple-500")?.state, .finished)
        XCTAssertEqual(try order(ledger, "apple-500")?.userId, buyer)
        XCTAssertEqual(try order(ledger, "apple-501")?.reason, AttentionReason.unclaimedPurchase.rawValue)
        XCTAssertEqual(world.deliveries, ["500 apple-500"])
    }

    func testFamilyMembersSharedPurchase_isGrantedToTheMember_neverTheBuyer_andItsRevokeTakesOnlyTheMembersGrantBack() throws {
        try configure(delivery: try revokingDelivery())
        let ledger = try makeLedger()
        let (reconciler, inbox) = try settle(ledger)
        try link(ledger, "acct-member", to: member)
        let own = accountPurchase("509", account: "acct-buyer", product: world.premium, token: buyer)
        let shared = accountPurchase("510", account: "acct-member", product: world.premium, familyShared: true, token: buyer)
        XCTAssertEqual(try tell(inbox, "ONE_TIME_CHARGE", own).outcome, "order_created")
        XCTAssertEqual(try tell(inbox, "ONE_TIME_CHARGE", shared).outcome, "order_created")
        try passUntilSettled(reconciler, ledger, "apple-509")
        try passUntilSettled(reconciler, ledger, "apple-510")
        XCTAssertEqual(try order(ledger, "apple-509")?.userId, buyer)
        XCTAssertEqual(try order(ledger, "apple-510")?.userId, member, "the member's copy is the member's, whatever token it carries")
        XCTAssertEqual(Set(world.deliveries), ["509 apple-509", "510 apple-510"])

        // The buyer stops sharing: Apple revokes the member's copy.
        var revoked = shared
        revoked.revocationDateMs = nowMs
        XCTAssertEqual(try tell(inbox, "REVOKE", revoked).outcome, "revoke_queued")
        _ = try reconciler.runPass()
        XCTAssertEqual(revokes, ["revoke:510 apple-510"])
        XCTAssertEqual(try order(ledger, "apple-509")?.state, .finished)
    }

    // MARK: - Set App Account Token

    func testAssign_setsTheUsersAppAccountTokenWithApple_onceThePurchaseIsVerifiedAsTheirs() throws {
        try configure()
        let ledger = try makeLedger()
        let (reconciler, inbox) = try settle(ledger)
        XCTAssertEqual(try tell(inbox, "ONE_TIME_CHARGE", accountPurchase("520", account: "acct-20")).outcome, "unclaimed")
        try assign(ledger, "apple-520", to: buyer)
        XCTAssertEqual(world.simulator.appAccountTokenRequests.count, 0, "nothing is asked before the purchase is verified as the user's")
        try passUntilSettled(reconciler, ledger, "apple-520")
        XCTAssertEqual(try order(ledger, "apple-520")?.state, .finished)
        XCTAssertEqual(world.simulator.appAccountTokenRequests.map { "\($0.environment) \($0.originalTransactionId) \($0.appAccountToken ?? "")" },
                       ["Production 520 \(buyer)"])
        XCTAssertNil(world.simulator.appAccountTokenRequests.first?.tokenProblem)
        XCTAssertEqual(try outcomes(ledger, "apple-520"), ["account_token_set"])
        XCTAssertEqual(try ledger.accountTokenUpdate(orderId: "apple-520")?.state, "set")
        _ = try reconciler.runPass()
        XCTAssertEqual(world.simulator.appAccountTokenRequests.count, 1, "set once")
    }

    func testAssign_ofAFamilyMembersSharedPurchase_recordsApplesRefusal4000185_neverRetriesIt_andNeverUndoesTheAssignment() throws {
        try configure()
        let ledger = try makeLedger()
        let (reconciler, inbox) = try settle(ledger)
        let shared = accountPurchase("530", account: "acct-30", product: world.premium, familyShared: true)
        XCTAssertEqual(try tell(inbox, "ONE_TIME_CHARGE", shared).outcome, "unclaimed")
        try assign(ledger, "apple-530", to: member)
        try passUntilSettled(reconciler, ledger, "apple-530")
        for _ in 0..<3 {
            world.time.advance(by: 7200)
            _ = try reconciler.runPass()
        }
        XCTAssertEqual(world.simulator.appAccountTokenRequests.count, 1, "a final answer is not asked again")
        XCTAssertEqual(try outcomes(ledger, "apple-530"), ["account_token_refused"])
        let refusal = try XCTUnwrap(try history(ledger, "apple-530").last { $0.outcome == "account_token_refused" }?.detail)
        XCTAssertTrue(refusal.contains("error 4000185") && refusal.contains("family member's shared purchase"), refusal)
        let job = try XCTUnwrap(try ledger.accountTokenUpdate(orderId: "apple-530"))
        XCTAssertEqual(job.state, "refused")
        XCTAssertEqual(job.appleStatus, 400)
        XCTAssertEqual(try order(ledger, "apple-530")?.state, .finished)
        XCTAssertEqual(try order(ledger, "apple-530")?.userId, member)
        XCTAssertEqual(world.deliveries, ["530 apple-530"])
    }

    func testAssign_whenAppleFailsForNow_retriesAfterTheBackoff_andGivesUpAfterMaxAttempts_withoutTouchingTheOrder() throws {
        try configure()
        let ledger = try makeLedger()
        let (reconciler, inbox) = try settle(ledger)
        _ = try tell(inbox, "ONE_TIME_CHARGE", accountPurchase("540", account: "acct-40"))
        try assign(ledger, "apple-540", to: buyer)
        world.simulator.script(appAccountToken: [.error(status: 500, code: 5000000)])
        _ = try reconciler.runPass()
        XCTAssertEqual(try order(ledger, "apple-540")?.state, .finished)
        XCTAssertEqual(try outcomes(ledger, "apple-540"), ["account_token_retry"])
        _ = try reconciler.runPass()
        XCTAssertEqual(world.simulator.appAccountTokenRequests.count, 1, "not again before its backoff")
        world.time.advance(by: 3600)
        _ = try reconciler.runPass()
        XCTAssertEqual(try outcomes(ledger, "apple-540"), ["account_token_retry", "account_token_set"])

        // schedule.max_attempts is 3: three temporary failures and it stops, shown.
        _ = try tell(inbox, "ONE_TIME_CHARGE", accountPurchase("541", account: "acct-41"))
        try assign(ledger, "apple-541", to: buyer)
        // A 429 is settle's pace, not Apple's failure: it uses no attempt.
        world.simulator.script(appAccountToken: [.error(status: 503, code: 5000001), .rateLimited(retryAfter: "1"),
                                                 .error(status: 500, code: 5000000), .error(status: 500, code: 5000000), .transaction])
        let paced = try world.reconciler(ledger: ledger, pacer: try world.pacer())
        for _ in 0..<6 {
            _ = try paced.runPass()
            world.time.advance(by: 7200)
        }
        XCTAssertEqual(try history(ledger, "apple-541").filter { $0.kind == .assign && $0.outcome != "assigned" }.map(\.outcome),
                       ["account_token_retry", "paced", "account_token_retry", "account_token_failed"])
        XCTAssertEqual(try ledger.accountTokenUpdate(orderId: "apple-541")?.state, "failed")
        XCTAssertEqual(try ledger.accountTokenUpdate(orderId: "apple-541")?.attempts, 3)
        XCTAssertEqual(try order(ledger, "apple-541")?.state, .finished)
        XCTAssertEqual(world.simulator.appAccountTokenRequests.filter { $0.originalTransactionId == "541" }.count, 4)
    }

    /// Issue 32, item 19: Apple answering Set App Account Token slowly (each call waiting out the
    /// client's timeout, on the test clock) holds a pass for its lent side-work time at most, the
    /// watchdog is kicked after each call, and the rest of the batch is set in later passes.
    func testAssign_whenAppleAnswersSetAppAccountTokenSlowly_aPassWaitsOnlyItsSideWorkTime_andKicksTheWatchdogPerCall() throws {
        try configure()
        let ledger = try makeLedger()
        let (reconciler, inbox) = try settle(ledger)
        let ids = ["560", "561", "562", "563"]
        for id in ids {
            _ = try tell(inbox, "ONE_TIME_CHARGE", accountPurchase(id, account: "acct-\(id)"))
            try assign(ledger, "apple-\(id)", to: buyer)
        }
        let lent = reconciler.sideWorkSeconds
        let clock = world.time
        world.simulator.slowAppAccountToken { clock.advance(by: lent) }
        let kicks = Mutex<[Int64]>([])
        let start = clock.unixSeconds
        _ = try reconciler.runPass(progress: { kicks.withLock { $0.append(clock.unixSeconds) } })
        for id in ids { XCTAssertEqual(try order(ledger, "apple-\(id)")?.state, .finished) }
        XCTAssertEqual(world.simulator.appAccountTokenRequests.count, 1,
                       "one call spends the pass's lent time; the others wait for the next pass, not one timeout after another")
        XCTAssertLessThanOrEqual(clock.unixSeconds - start, Int64(lent) + 1)
        XCTAssertEqual(kicks.withLock { $0.last }, start + Int64(lent), "the watchdog is kicked after the slow call")
        for _ in 0..<6 {
            world.time.advance(by: 1)
            _ = try reconciler.runPass()
        }
        XCTAssertEqual(Set(world.simulator.appAccountTokenRequests.map(\.originalTransactionId)), Set(ids))
        for id in ids { XCTAssertEqual(try ledger.accountTokenUpdate(orderId: "apple-\(id)")?.state, "set", id) }
        XCTAssertEqual(world.simulator.appAccountTokenRequests.count, ids.count, "each set once")
    }

    func testAssign_ofAPurchaseThePassDoesNotGrantTheUser_setsNoToken_andWithoutUserTokensNoneIsOwed() throws {
        try configure()
        let ledger = try makeLedger()
        let (reconciler, inbox) = try settle(ledger)
        _ = try tell(inbox, "ONE_TIME_CHARGE", accountPurchase("550", account: "acct-50"))
        try assign(ledger, "apple-550", to: buyer)
        // Before the pass, the account turns out to be someone else's: the purchase is not the buyer's.
        try link(ledger, "acct-50", to: stranger)
        try passUntilSettled(reconciler, ledger, "apple-550")
        XCTAssertEqual(try order(ledger, "apple-550")?.reason, RejectionReason.userMismatch.rawValue)
        _ = try reconciler.runPass()
        XCTAssertEqual(try ledger.accountTokenUpdate(orderId: "apple-550")?.state, "cancelled")
        XCTAssertEqual(try outcomes(ledger, "apple-550"), ["account_token_cancelled"])

        // A user id that is no UUID has no token under "user_id".
        _ = try tell(inbox, "ONE_TIME_CHARGE", accountPurchase("551", account: "acct-51"))
        try assign(ledger, "apple-551", to: "player-551")
        XCTAssertNil(try ledger.accountTokenUpdate(orderId: "apple-551"))
        XCTAssertEqual(world.simulator.appAccountTokenRequests.count, 0)
    }
}

/// Every test of `AppleAccountInboxTests` on a PostgreSQL ledger.
final class AppleAccountInboxPostgresTests: AppleAccountInboxTests {
    override func makeLedger() throws -> any SettleLedger {
        if schema == nil { schema = try TestPostgres.freshSchema() }
        return try PostgresLedger(url: schema!.url, time: world.time)
    }

    override func testTokenlessPurchase_ofALinkedAppleAccount_isGrantedToItsUser_andOfAnUnlinkedOne_waitsUnclaimed() throws {
        try super.testTokenlessPurchase_ofALinkedAppleAccount_isGrantedToItsUser_andOfAnUnlinkedOne_waitsUnclaimed()
    }
    override func testFamilyMembersSharedPurchase_isGrantedToTheMember_neverTheBuyer_andItsRevokeTakesOnlyTheMembersGrantBack() throws {
        try super.testFamilyMembersSharedPurchase_isGrantedToTheMember_neverTheBuyer_andItsRevokeTakesOnlyTheMembersGrantBack()
    }
    override func testAssign_setsTheUsersAppAccountTokenWithApple_onceThePurchaseIsVerifiedAsTheirs() throws {
        try super.testAssign_setsTheUsersAppAccountTokenWithApple_onceThePurchaseIsVerifiedAsTheirs()
    }
    override func testAssign_ofAFamilyMembersSharedPurchase_recordsApplesRefusal4000185_neverRetriesIt_andNeverUndoesTheAssignment() throws {
        try super.testAssign_ofAFamilyMembersSharedPurchase_recordsApplesRefusal4000185_neverRetriesIt_andNeverUndoesTheAssignment()
    }
    override func testAssign_whenAppleFailsForNow_retriesAfterTheBackoff_andGivesUpAfterMaxAttempts_withoutTouchingTheOrder() throws {
        try super.testAssign_whenAppleFailsForNow_retriesAfterTheBackoff_andGivesUpAfterMaxAttempts_withoutTouchingTheOrder()
    }
    override func testAssign_ofAPurchaseThePassDoesNotGrantTheUser_setsNoToken_andWithoutUserTokensNoneIsOwed() throws {
        try super.testAssign_ofAPurchaseThePassDoesNotGrantTheUser_setsNoToken_andWithoutUserTokensNoneIsOwed()
    }
}
