import SettleTesting
import XCTest
@testable import SettleBase
@testable import SettleModel
@testable import SettleLedger
@testable import SettleEngine
@testable import SettleAppStoreSimulator

/// `settle bind` (issue 36) and the pass, against the simulated App Store Server API: a bound
/// token is checked against the purchase's, so binding the right one grants, and a wrong one
/// never does (the order ends `user_mismatch`, which cannot be bound again).
final class BindReconcileTests: XCTestCase {
    var world: TestWorld!
    var ledger: SQLiteLedger!
    let alice = "6f1e4c2a-5b3d-4e8f-9a0b-1c2d3e4f5a6b"
    let mallory = "0d9c8b7a-6f5e-4d3c-8b2a-19f8e7d6c5b4"
    let support = Operator(name: "sam", channel: .cli)

    override func setUpWithError() throws {
        world = try TestWorld()
        try world.writeConfig(receiptAPI: false, serverAPI: true)
        ledger = try world.ledger()
    }

    override func tearDown() {
        ledger = nil
        world = nil
    }

    func pass() throws -> PassReport { try world.reconciler(ledger: ledger).runPass() }
    func order(_ id: String) throws -> Order { try XCTUnwrap(try ledger.orderRecord(id)?.order) }

    /// Alice's signed purchase on an order of `user` that names no token: token_unverifiable.
    func unverifiable(_ id: String, txn: String, user: String) throws {
        let transaction = world.scriptTransaction(txn, appAccountToken: alice)
        _ = try ledger.enqueue(NewOrder(orderId: id, userId: user, productId: world.coins,
                                        signedTransaction: try transaction.signed(at: world.time.unixSeconds * 1000)))
        _ = try pass()
        XCTAssertEqual(try order(id).reason, "token_unverifiable")
    }

    func testBindingTheUsersToken_thenAPass_grantsIt() throws {
        try unverifiable("o-1", txn: "2000000970000001", user: "u-alice")
        try ledger.bind(orderId: "o-1", accountToken: alice, note: "ticket 1", binding: UserBinding(), by: support)
        XCTAssertEqual(try pass().finished, 1)
        XCTAssertEqual(try order("o-1").state, .finished)
        XCTAssertEqual(world.deliveries, ["2000000970000001 o-1"])
    }

    func testBindingAnotherToken_neverGrants_theOrderIsRejectedAsUserMismatch_andCannotBeBoundAgain() throws {
        try unverifiable("o-1", txn: "2000000970000002", user: "mallory")
        try ledger.bind(orderId: "o-1", accountToken: mallory, note: "he says it is his", binding: UserBinding(),
                        by: support)
        _ = try pass()
        XCTAssertEqual(try order("o-1").state, .rejected)
        XCTAssertEqual(try order("o-1").reason, "user_mismatch")
        XCTAssertTrue(world.deliveries.isEmpty)
        XCTAssertThrowsError(try ledger.bind(orderId: "o-1", accountToken: alice, note: "then this one", replace: true,
                                             binding: UserBinding(), by: support)) {
            XCTAssertTrue("\($0)".contains("would hand that user's purchase to user mallory"), "\($0)")
        }
    }
}
