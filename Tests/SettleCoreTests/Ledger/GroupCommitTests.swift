import SettleTesting
import XCTest
@testable import SettleCore

/// Transitions committed together stay independent: each sees the ones before it, a failing one
/// is rolled back alone, and every caller learns its result only after the commit.
final class GroupCommitTests: XCTestCase {
    func testConcurrentTransitions_oneFailing_theOthersAllCommit_andTheFailingOneLeavesNoTrace() throws {
        let world = try TestWorld()
        let ledger = try world.ledger()
        for i in 0..<64 { _ = try ledger.enqueue(NewOrder(orderId: "o-\(i)", userId: "u", productId: world.coins, transactionId: "\(i)")) }
        let failures = LineCollector()
        DispatchQueue.concurrentPerform(iterations: 64) { i in
            do {
                try ledger.transition {
                    try ledger.database.query("UPDATE orders SET last_error = 'touched' WHERE order_id = ?", [.text("o-\(i)")])
                    if i == 13 { throw LedgerError.invalid("refused on purpose") }
                }
            } catch {
                failures.append("\(i): \(error)")
            }
        }
        XCTAssertEqual(failures.lines, ["13: refused on purpose"])
        let reader = try SQLiteDatabase(path: world.ledgerPath, mode: .readOnly)
        let touched = try reader.query("SELECT order_id FROM orders WHERE last_error = 'touched'").compactMap { $0.string("order_id") }
        XCTAssertEqual(touched.count, 63)
        XCTAssertFalse(touched.contains("o-13"))
    }
}
