import SettleTesting
import XCTest
@testable import SettleApp
@testable import SettleBase
@testable import SettleModel
@testable import SettleLedger
@testable import SettleEngine
@testable import SettleAppStoreSimulator

/// A confirmed purchase's write handed to the group commit (`Reconciler.handOver`): its worker
/// goes back to the store, and the order is delivered once the write is durable, in the same
/// pass, or set aside when the write breaks a constraint.
final class HandedOverWriteTests: XCTestCase {
    var world: TestWorld!
    var ledger: SQLiteLedger!
    let logLines = LineCollector()

    override func setUpWithError() throws {
        world = try TestWorld()
        try world.writeConfig(schedule: [("concurrency", .number(4))])
        ledger = try world.ledger()
    }

    override func tearDown() {
        ledger = nil
        world = nil
    }

    func pass() throws -> PassReport {
        let lines = logLines
        let log = Log(environment: [:], time: world.time, sink: { line in lines.append(line) })
        return try world.reconciler(ledger: ledger, log: log).runPass(orderIds: [])
    }

    func enqueueValid(_ id: String, txn: String) throws {
        let receipt = world.scriptReceipt(id, [SimulatedTransaction(productId: world.coins, transactionId: txn)])
        _ = try ledger.enqueue(NewOrder(orderId: id, userId: "u-\(id)", productId: world.coins, transactionId: txn, receipt: receipt))
    }

    /// The handed-over writes wait long for company here (half a second, where a claim or a
    /// full batch ends the wait early), and the first order's answer comes last (slow): its
    /// write is handed over after every other order was delivered and every other worker found
    /// nothing left to claim, so nothing ends its wait. The pass still ends only after it
    /// committed and its order was delivered.
    func testEveryConfirmedPurchase_isDeliveredInItsPass_thoughTheLastWriteWaitsForCompanyAlone() throws {
        ledger.groupCommit.handedOverWait = 0.5
        let slow = world.scriptReceipt("o-slow", [SimulatedTransaction(productId: world.coins, transactionId: "2999999")],
                                       answers: [.slow(seconds: 0.3)])
        _ = try ledger.enqueue(NewOrder(orderId: "o-slow", userId: "u-slow", productId: world.coins, transactionId: "2999999",
                                        receipt: slow))
        world.time.advance(by: 1)
        for i in 0..<8 { try enqueueValid("o-\(i)", txn: "\(3_000_000 + i)") }
        world.time.advance(by: 1)
        let report = try pass()
        XCTAssertEqual(report.summaryLine, "reconciled 9: 9 finished, 0 rejected, 0 retrying, 0 needs attention")
        XCTAssertEqual(Set(world.deliveries), Set((0..<8).map { "\(3_000_000 + $0) o-\($0)" } + ["2999999 o-slow"]))
        XCTAssertEqual(try ledger.orderRecord("o-slow")?.order.state, .finished)
    }

    /// A write the ledger refuses (a trigger a backend left, here refusing one order's grant):
    /// that order is set aside for a person with the database's words, its hook never runs, and
    /// every other order of the pass is delivered.
    func testAConfirmedPurchaseWhoseWriteBreaksAConstraint_isSetAside_andTheOthersAreDelivered() throws {
        for i in 0..<6 { try enqueueValid("o-\(i)", txn: "\(4_000_000 + i)") }
        try ledger.database.execute("""
            CREATE TRIGGER refuse_one_grant BEFORE INSERT ON grants WHEN NEW.order_id = 'o-3'
            BEGIN SELECT RAISE(ABORT, 'grant refused on purpose'); END
            """)
        let report = try pass()
        XCTAssertEqual(report.summaryLine, "reconciled 6: 5 finished, 0 rejected, 0 retrying, 1 needs attention")
        let broken = try XCTUnwrap(try ledger.orderRecord("o-3")?.order)
        XCTAssertEqual(broken.state, .needsAttention)
        XCTAssertEqual(broken.reason, AttentionReason.rowInvalid.rawValue)
        XCTAssertTrue(broken.lastError?.contains("grant refused on purpose") == true, broken.lastError ?? "")
        XCTAssertEqual(Set(world.deliveries), Set([0, 1, 2, 4, 5].map { "\(4_000_000 + $0) o-\($0)" }), "never the refused one")
        XCTAssertNil(try ledger.grantHolder(of: VerifiedPurchase(transactionId: "4000003", originalTransactionId: "4000003",
                                                                  productId: world.coins, environment: "Production", quantity: 1,
                                                                  purchaseDateMs: 1, expiresDateMs: nil, grantKey: nil)))
        XCTAssertTrue(logLines.lines.contains { $0.contains("order.needs_attention") && $0.contains("o-3") && $0.contains("row_invalid") },
                      logLines.lines.joined(separator: "\n"))
    }
}
