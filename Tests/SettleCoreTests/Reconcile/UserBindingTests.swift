import SettleTesting
import XCTest
@testable import SettleApp
@testable import SettleBase
@testable import SettleModel
@testable import SettleAppStore
@testable import SettleLedger
@testable import SettleEngine
@testable import SettleAppStoreSimulator

/// Purchases are granted only to the customer who made them: StoreKit's appAccountToken against
/// the order's user, and a policy for proofs that bind the purchase to nobody. Whole passes
/// against the simulated App Store Server API.
final class UserBindingTests: XCTestCase {
    var world: TestWorld!
    var ledger: SQLiteLedger!
    let alice = "6f1e4c2a-5b3d-4e8f-9a0b-1c2d3e4f5a6b"
    let mallory = "0d9c8b7a-6f5e-4d3c-8b2a-19f8e7d6c5b4"

    override func setUpWithError() throws {
        world = try TestWorld()
        try config()
        ledger = try world.ledger()
    }

    override func tearDown() {
        ledger = nil
        world = nil
    }

    func config(_ binding: [(String, JSONValue)] = []) throws {
        try world.writeConfig(receiptAPI: false, serverAPI: true,
                              overrides: binding.isEmpty ? [] : [("user_binding", .object(binding))])
    }

    func pass() throws -> PassReport { try world.reconciler(ledger: ledger).runPass() }
    func order(_ id: String) throws -> Order { try XCTUnwrap(try ledger.orderRecord(id)?.order) }

    func enqueue(_ id: String, user: String = "u-1", txn: String, token: String? = nil, signed: String? = nil,
                 product: String? = nil) throws {
        _ = try ledger.enqueue(NewOrder(orderId: id, userId: user, productId: product ?? world.coins,
                                        transactionId: signed == nil ? txn : nil, signedTransaction: signed, appAccountToken: token))
    }

    // MARK: - Bare transaction ids

    func testStrangersTransactionId_isRefusedAsUserMismatch_andTheOwnersOrderIsStillGranted() throws {
        world.scriptTransaction("2000000800000001", appAccountToken: alice)
        try enqueue("o-mallory", user: "mallory", txn: "2000000800000001", token: mallory)
        try enqueue("o-alice", user: "alice", txn: "2000000800000001", token: alice)
        let report = try pass()
        XCTAssertEqual(try order("o-mallory").state, .rejected)
        XCTAssertEqual(try order("o-mallory").reason, "user_mismatch")
        XCTAssertEqual(try order("o-alice").state, .finished, "the owner's genuine order is not refused as already granted")
        XCTAssertEqual(world.deliveries, ["2000000800000001 o-alice"])
        XCTAssertEqual(report.finished, 1)
    }

    func testBareIdWithoutAnyToken_needsAPersonByDefault_neverGranted() throws {
        world.scriptTransaction("2000000800000002")
        try enqueue("o-1", txn: "2000000800000002")
        XCTAssertEqual(try pass().needsAttention, 1)
        XCTAssertEqual(try order("o-1").state, .needsAttention)
        XCTAssertEqual(try order("o-1").reason, "proof_unbound")
        XCTAssertTrue(world.deliveries.isEmpty)
    }

    func testBareIdWithoutAToken_refusePolicy_rejects_trustPolicy_grants() throws {
        world.scriptTransaction("2000000800000003")
        world.scriptTransaction("2000000800000004")
        try config([("unsigned_proofs", .string("refuse"))])
        try enqueue("o-1", txn: "2000000800000003")
        _ = try pass()
        XCTAssertEqual(try order("o-1").reason, "proof_unbound")
        XCTAssertEqual(try order("o-1").state, .rejected)
        try config([("unsigned_proofs", .string("trust"))])
        try enqueue("o-2", txn: "2000000800000004")
        _ = try pass()
        XCTAssertEqual(try order("o-2").state, .finished)
    }

    func testUserIdAsToken_andUUID5OfTheUserId_bindTheUser() throws {
        try config([("app_account_token", .string("user_id"))])
        world.scriptTransaction("2000000800000005", appAccountToken: alice)
        try enqueue("o-1", user: alice.uppercased(), txn: "2000000800000005")
        _ = try pass()
        XCTAssertEqual(try order("o-1").state, .finished)

        let namespace = "9c4a7e32-1b5d-4f6a-8e9c-0a1b2c3d4e5f"
        let token = UserBinding.uuid5(namespace: UUID(uuidString: namespace)!, name: "player-42").uuidString.lowercased()
        try config([("app_account_token", .string("uuid5")), ("uuid5_namespace", .string(namespace))])
        world.scriptTransaction("2000000800000006", appAccountToken: token)
        world.scriptTransaction("2000000800000007", appAccountToken: token)
        try enqueue("o-2", user: "player-42", txn: "2000000800000006")
        try enqueue("o-3", user: "player-43", txn: "2000000800000007")
        _ = try pass()
        XCTAssertEqual(try order("o-2").state, .finished)
        XCTAssertEqual(try order("o-3").reason, "user_mismatch")
    }

    func testUUID5_matchesRFC9562sExample() {
        // RFC 9562 appendix A.4: "www.example.com" in the DNS namespace.
        let dns = UUID(uuidString: "6ba7b810-9dad-11d1-80b4-00c04fd430c8")!
        XCTAssertEqual(UserBinding.uuid5(namespace: dns, name: "www.example.com").uuidString.lowercased(),
                       "2ed6657d-e927-568b-95e1-2665a8aea6a2")
    }

    // MARK: - Signed transactions

    func testSignedTransactionOfAnotherUser_isUserMismatch_evenThoughAppleSignedIt() throws {
        let transaction = world.scriptTransaction("2000000800000010", appAccountToken: alice)
        try enqueue("o-1", user: "mallory", txn: "", token: mallory, signed: try transaction.signed(at: world.time.unixSeconds * 1000))
        _ = try pass()
        XCTAssertEqual(try order("o-1").reason, "user_mismatch")
        XCTAssertTrue(world.deliveries.isEmpty)
    }

    func testSignedTransactionWithoutAToken_isTrustedByDefault_orSentToAPersonWhenConfigured() throws {
        let a = world.scriptTransaction("2000000800000011")
        let b = world.scriptTransaction("2000000800000012")
        try enqueue("o-1", txn: "", signed: try a.signed(at: world.time.unixSeconds * 1000))
        _ = try pass()
        XCTAssertEqual(try order("o-1").state, .finished)
        try config([("tokenless_signed_proofs", .string("needs_attention"))])
        try enqueue("o-2", txn: "", signed: try b.signed(at: world.time.unixSeconds * 1000))
        _ = try pass()
        XCTAssertEqual(try order("o-2").reason, "proof_unbound")
    }

    // MARK: - Purchases that name their buyer

    func testSignedTransactionCarryingAToken_whenTheOrderNamesNoToken_needsAttentionTokenUnverifiable_neverGranted() throws {
        // Alice's purchase, uploaded by Mallory's backend order that names no token: under the
        // default tokenless_signed_proofs trust it was once taken as unbound and granted.
        let transaction = world.scriptTransaction("2000000800000040", appAccountToken: alice)
        try enqueue("o-1", user: "mallory", txn: "", signed: try transaction.signed(at: world.time.unixSeconds * 1000))
        XCTAssertEqual(try pass().needsAttention, 1)
        let o = try order("o-1")
        XCTAssertEqual(o.state, .needsAttention)
        XCTAssertEqual(o.reason, "token_unverifiable")
        XCTAssertTrue(o.lastError?.contains(alice) ?? false, o.lastError ?? "")
        XCTAssertTrue(world.deliveries.isEmpty)
    }

    func testBareIdOfATokenBearingPurchase_withTrustPolicy_andNoTokenKnown_needsAttention() throws {
        try config([("unsigned_proofs", .string("trust")), ("tokenless_signed_proofs", .string("trust"))])
        world.scriptTransaction("2000000800000041", appAccountToken: alice)
        try enqueue("o-1", user: "mallory", txn: "2000000800000041")
        _ = try pass()
        XCTAssertEqual(try order("o-1").reason, "token_unverifiable")
        XCTAssertTrue(world.deliveries.isEmpty)
    }

    func testTokenBearingPurchase_whenTheUserIdIsNotAUUID_underUserIdTokens_needsAttention() throws {
        try config([("app_account_token", .string("user_id"))])
        let transaction = world.scriptTransaction("2000000800000042", appAccountToken: alice)
        try enqueue("o-1", user: "player-7", txn: "", signed: try transaction.signed(at: world.time.unixSeconds * 1000))
        _ = try pass()
        XCTAssertEqual(try order("o-1").reason, "token_unverifiable")
        XCTAssertTrue(world.deliveries.isEmpty)
    }

    func testLegacyReceiptOfTokenBearingPurchases_whenTheOrderNamesNoToken_needsAttention() throws {
        world.scriptCustomer([SimulatedSignedTransaction(transactionId: "2000000800000043", productId: world.coins,
                                                         bundleId: world.bundleId, appAccountToken: alice)])
        let receipt = try AppReceiptBuilder.buildSignedByTestChain(
            bundleId: world.bundleId, purchases: [AppReceipt.Purchase(productId: world.coins, transactionId: "2000000800000043")])
        _ = try ledger.enqueue(NewOrder(orderId: "o-1", userId: "mallory", productId: world.coins, receipt: receipt))
        _ = try pass()
        XCTAssertEqual(try order("o-1").reason, "token_unverifiable")
        XCTAssertTrue(world.deliveries.isEmpty)
    }

    func testTokenBearingPurchase_whenTheOrderNamesTheSameToken_isGranted() throws {
        let transaction = world.scriptTransaction("2000000800000044", appAccountToken: alice)
        try enqueue("o-1", user: "alice", txn: "", token: alice.uppercased(),
                    signed: try transaction.signed(at: world.time.unixSeconds * 1000))
        XCTAssertEqual(try pass().finished, 1)
    }

    // MARK: - Restores and upgrades

    func testRestoredNonConsumable_isGrantedOnce_underItsOriginalTransactionId() throws {
        world.scriptTransaction("2000000800000020", product: world.premium, appAccountToken: alice)
        world.scriptTransaction("2000000800000021", product: world.premium, originalTransactionId: "2000000800000020",
                                appAccountToken: alice)
        try enqueue("o-bought", txn: "2000000800000020", token: alice, product: world.premium)
        _ = try pass()
        try enqueue("o-restored", txn: "2000000800000021", token: alice, product: world.premium)
        _ = try pass()
        XCTAssertEqual(world.deliveries, ["2000000800000020 o-bought"], "the idempotency key of a non-consumable is its original id")
        XCTAssertEqual(try order("o-restored").state, .rejected)
        XCTAssertEqual(try order("o-restored").reason, "already_granted")
    }

    func testUpgradedTransaction_isNotGranted() throws {
        world.scriptTransaction("2000000800000030", product: world.monthly, appAccountToken: alice, isUpgraded: true)
        try enqueue("o-1", txn: "2000000800000030", token: alice, product: world.monthly)
        _ = try pass()
        XCTAssertEqual(try order("o-1").reason, "upgraded")
        XCTAssertTrue(world.deliveries.isEmpty)
    }

    // MARK: - Configuration

    func testUUID5WithoutANamespace_isAConfigurationError() throws {
        try config([("app_account_token", .string("uuid5"))])
        XCTAssertThrowsError(try world.configuration()) { error in
            XCTAssertTrue("\(error)".contains("user_binding.uuid5_namespace"), "\(error)")
        }
        try config([("unsigned_proofs", .string("maybe"))])
        XCTAssertThrowsError(try world.configuration()) { error in
            XCTAssertTrue("\(error)".contains("user_binding.unsigned_proofs"), "\(error)")
        }
    }
}
