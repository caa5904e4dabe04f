import SettleTesting
import XCTest
@testable import SettleApp
@testable import SettleModel
@testable import SettleLedger
@testable import SettleEngine
@testable import SettleAppStoreSimulator

/// An HTTP 4xx from Apple about one order's request fails that order (an attempt, retried with
/// backoff) and the pass goes on; only the credentials' 401/403 are a configuration fault. Whole
/// passes through the simulator over loopback and a real ledger (SQLite here, PostgreSQL in the
/// subclass).
class AppleClientErrorTests: XCTestCase {
    var world: TestWorld!
    var schema: (url: String, schema: String)?
    var ledger: (any SettleLedger)!

    func makeLedger() throws -> any SettleLedger { try world.ledger() }

    override func setUpWithError() throws {
        world = try TestWorld()
        // One order at a time, the failing one first: a pass that stopped at it leaves the rest.
        try world.writeConfig(schedule: [("concurrency", .number(1))])
        ledger = try makeLedger()
    }

    override func tearDown() {
        ledger = nil
        schema.map { TestPostgres.drop(schema: $0.schema) }
        schema = nil
        world = nil
    }

    func pass() throws -> PassReport { try world.reconciler(ledger: ledger).runPass() }
    func order(_ id: String) throws -> Order { try XCTUnwrap(try ledger.orderRecord(id)?.order) }

    func enqueueReceipt(_ id: String, txn: String, answers: [SimulatedAnswer] = []) throws {
        let receipt = world.scriptReceipt(id, [SimulatedTransaction(productId: world.coins, transactionId: txn)], answers: answers)
        _ = try ledger.enqueue(NewOrder(orderId: id, userId: "u-\(id)", productId: world.coins, transactionId: txn, receipt: receipt))
        world.time.advance(by: 1)   // claimed in the order enqueued
    }

    func testVerifyReceipt4xxAboutOneOrder_failsThatOrderWithAnAttempt_andThePassSettlesTheOthers() throws {
        for status in [400, 413, 422] {
            tearDown()
            try setUpWithError()
            try enqueueReceipt("bad", txn: "2000000950000001", answers: [.http(status)])
            try enqueueReceipt("good-1", txn: "2000000950000002")
            try enqueueReceipt("good-2", txn: "2000000950000003")
            let report = try pass()
            XCTAssertNil(report.configurationFault, "\(status) is about one order, not the configuration")
            XCTAssertEqual(report.finished, 2, "\(status)")
            XCTAssertEqual(try order("good-1").state, .finished)
            XCTAssertEqual(try order("good-2").state, .finished)
            let bad = try order("bad")
            XCTAssertEqual(bad.state, .pending)
            XCTAssertEqual(bad.attempts, 1, "\(status) counts an attempt")
            XCTAssertGreaterThan(bad.nextAttemptAt, world.time.unixSeconds, "retried with backoff")
            XCTAssertEqual(bad.lastError, "Apple's production verifyReceipt answered HTTP \(status) for this order's receipt")
        }
    }

    func testVerifyReceipt401Or403_isAConfigurationFault_thatUsesNoAttempt() throws {
        for status in [401, 403] {
            tearDown()
            try setUpWithError()
            try enqueueReceipt("o-1", txn: "2000000950000011", answers: [.http(status)])
            let report = try pass()
            XCTAssertEqual(report.configurationFault, "Apple's production verifyReceipt answered HTTP \(status); "
                           + "check receipt_api and the shared secret")
            XCTAssertEqual(try order("o-1").attempts, 0)
            XCTAssertEqual(try order("o-1").state, .pending)
        }
    }

    func testServerAPI403_isAConfigurationFault_andAnother4xxFailsOnlyItsOrder() throws {
        try world.writeConfig(receiptAPI: false, serverAPI: true, schedule: [("concurrency", .number(1))])
        let token = "6f1e4c2a-5b3d-4e8f-9a0b-1c2d3e4f5a6b"
        func enqueueId(_ id: String, _ txn: String, answers: [SimulatedServerAnswer]) throws {
            world.scriptTransaction(txn, appAccountToken: token, answers: answers)
            _ = try ledger.enqueue(NewOrder(orderId: id, userId: "u-\(id)", productId: world.coins, transactionId: txn,
                                            appAccountToken: token))
            world.time.advance(by: 1)
        }
        try enqueueId("odd", "2000000950000021", answers: [.error(status: 400, code: 4000000)])
        try enqueueId("good", "2000000950000022", answers: [])
        let report = try pass()
        XCTAssertNil(report.configurationFault)
        XCTAssertEqual(try order("good").state, .finished)
        XCTAssertEqual(try order("odd").attempts, 1)
        XCTAssertEqual(try order("odd").lastError, "production App Store Server API answered HTTP 400 (error 4000000)")

        try enqueueId("refused", "2000000950000023", answers: [.error(status: 403, code: 0)])
        let refused = try pass()
        XCTAssertEqual(refused.configurationFault,
                       "production App Store Server API answered HTTP 403: check server_api.issuer_id, key_id, private_key_file and bundle_id")
        XCTAssertEqual(try order("refused").attempts, 0, "the order is not at fault")
    }

    /// Issue 36, bug 11: Apple's final 4000185 from Get Transaction Info is about a purchase
    /// nothing was delivered for: `store_refused`, never `store_finish_refused` (goods granted).
    func testGetTransactionInfo4000185_endsNeedsAttentionStoreRefused_notStoreFinishRefused_andDeliversNothing() throws {
        try world.writeConfig(receiptAPI: false, serverAPI: true)
        let token = "6f1e4c2a-5b3d-4e8f-9a0b-1c2d3e4f5a6b"
        world.scriptTransaction("2000000950000031", appAccountToken: token, answers: [.error(status: 400, code: 4000185)])
        _ = try ledger.enqueue(NewOrder(orderId: "family", userId: "u-1", productId: world.coins, transactionId: "2000000950000031",
                                        appAccountToken: token))
        _ = try pass()
        let family = try order("family")
        XCTAssertEqual(family.state, .needsAttention)
        XCTAssertEqual(family.reason, "store_refused")
        XCTAssertTrue(family.lastError?.contains("4000185") == true, family.lastError ?? "")
        XCTAssertNil(family.deliveredAt)
        XCTAssertTrue(world.deliveries.isEmpty, "nothing was delivered")
        XCTAssertTrue(Verdict(family, now: world.time.unixSeconds).why?.contains("nothing was delivered") == true)
    }
}

/// The same passes on a PostgreSQL ledger.
final class AppleClientErrorPostgresTests: AppleClientErrorTests {
    override func makeLedger() throws -> any SettleLedger {
        if schema == nil { schema = try TestPostgres.freshSchema() }
        return try PostgresLedger(url: schema!.url, time: world.time)
    }

    // Linux test discovery lists only the methods a class declares.
    override func testGetTransactionInfo4000185_endsNeedsAttentionStoreRefused_notStoreFinishRefused_andDeliversNothing() throws {
        try super.testGetTransactionInfo4000185_endsNeedsAttentionStoreRefused_notStoreFinishRefused_andDeliversNothing()
    }
    override func testVerifyReceipt4xxAboutOneOrder_failsThatOrderWithAnAttempt_andThePassSettlesTheOthers() throws {
        try super.testVerifyReceipt4xxAboutOneOrder_failsThatOrderWithAnAttempt_andThePassSettlesTheOthers()
    }
    override func testVerifyReceipt401Or403_isAConfigurationFault_thatUsesNoAttempt() throws {
        try super.testVerifyReceipt401Or403_isAConfigurationFault_thatUsesNoAttempt()
    }
    override func testServerAPI403_isAConfigurationFault_andAnother4xxFailsOnlyItsOrder() throws {
        try super.testServerAPI403_isAConfigurationFault_andAnother4xxFailsOnlyItsOrder()
    }
}
