import Foundation
import SettleTesting
import XCTest
@testable import SettleModel
@testable import SettleLedger

/// Migration 21 (issue 38): the CHECKs' `IN` lists of more than two values become comparisons,
/// which SQLite checks without building an ephemeral b-tree per statement; what they allow does
/// not change.
final class InListChecksTests: XCTestCase {
    func testExpanded_rewritesListsOfMoreThanTwo_andLeavesNotInAndShortListsAlone() {
        XCTAssertEqual(InListChecks.expanded("CHECK (state IN ('a','b','c'))"),
                       "CHECK ((state = 'a' OR state = 'b' OR state = 'c'))")
        XCTAssertEqual(InListChecks.expanded("CHECK (kind IN ('x', 'y',\n      'z, w'))"),
                       "CHECK ((kind = 'x' OR kind = 'y' OR kind = 'z, w'))")
        let untouched = "CHECK (state NOT IN ('a','b','c')) CHECK (s IN ('a','b')) CHECK (t IS NULL OR t IN (1,2,3))"
        XCTAssertEqual(InListChecks.expanded(untouched), untouched)
        XCTAssertEqual(InListChecks.expanded("CHECK (target IS NULL OR target IN ('g','r','t'))"),
                       "CHECK (target IS NULL OR (target = 'g' OR target = 'r' OR target = 't'))")
    }

    func testFreshLedger_holdsNoLongInListInItsCoreTables_andStillRefusesWhatTheyRefused() throws {
        let world = try TestWorld()
        let ledger = try SQLiteLedger(path: world.ledgerPath, time: world.time)
        XCTAssertEqual(try ledger.schemaVersion(), LedgerSchema.migrations.count)
        let database = try SQLiteDatabase(path: world.ledgerPath, mode: .readWrite)
        for table in ["orders", "history", "grants", "support_actions", "apple_finishes"] {
            let sql = try XCTUnwrap(try database.query("SELECT sql FROM sqlite_schema WHERE name = ?1", [.text(table)]).first?
                .string("sql"), table)
            XCTAssertEqual(InListChecks.expanded(sql), sql, "\(table) still holds a list of more than two values")
        }
        try assertChecksHold(database)
    }

    func testLedgerAtSchemaTwenty_migrates_keepsItsRows_andItsChecks() throws {
        let world = try TestWorld()
        let path = world.folder + "/v20.sqlite3"
        try LedgerBeforeMigration.sqlite(path: path, version: LedgerSchema.inListChecksVersion - 1, seed: """
            INSERT INTO orders(order_id, user_id, product_id, transaction_id, state, reason)
            VALUES ('o-old', 'u-1', 'coins', '1', 'needs_attention', 'attempts_exhausted');
            INSERT INTO history(order_id, at, kind, outcome) VALUES ('o-old', 5, 'enqueue', 'enqueued');
            """)
        let atTwenty = try SQLiteDatabase(path: path, mode: .readOnly)
        let before = try atTwenty.query("SELECT sql FROM sqlite_schema WHERE name = 'orders'").first?.string("sql") ?? ""
        try atTwenty.close()
        XCTAssertNotEqual(InListChecks.expanded(before), before, "the ledger at 20 should hold the IN list")

        let ledger = try SQLiteLedger(path: path, time: world.time)
        XCTAssertEqual(try ledger.schemaVersion(), LedgerSchema.migrations.count)
        let record = try XCTUnwrap(try ledger.orderRecord("o-old"))
        XCTAssertEqual(record.order.state, .needsAttention)
        XCTAssertEqual(record.history.first?.outcome, "enqueued")
        let migrated = try SQLiteDatabase(path: path, mode: .readWrite)
        XCTAssertEqual(try migrated.query("PRAGMA integrity_check").first?.string("integrity_check"), "ok")
        let after = try migrated.query("SELECT sql FROM sqlite_schema WHERE name = 'orders'").first?.string("sql") ?? ""
        XCTAssertEqual(InListChecks.expanded(after), after)
        XCTAssertTrue(after.contains("state = 'needs_attention'"), after)
        try assertChecksHold(migrated)
    }

    /// The rewritten CHECKs refuse an unknown state or history kind, and accept every known one.
    private func assertChecksHold(_ database: SQLiteDatabase, file: StaticString = #filePath, line: UInt = #line) throws {
        try database.execute("""
            INSERT OR IGNORE INTO orders(order_id, user_id, product_id, transaction_id, state)
            VALUES ('o-check', 'u-1', 'coins', 't-check', 'pending')
            """)
        XCTAssertThrowsError(try database.execute("UPDATE orders SET state = 'granted' WHERE order_id = 'o-check'"),
                             file: file, line: line)
        XCTAssertThrowsError(try database.execute("""
            INSERT INTO history(order_id, at, kind, outcome) VALUES ('o-check', 1, 'bogus', 'x')
            """), file: file, line: line)
        for kind in ["enqueue", "verification", "delivery", "rescue", "retry", "notification", "revoke", "consumption", "assign"] {
            try database.execute("INSERT INTO history(order_id, at, kind, outcome) VALUES ('o-check', 1, '\(kind)', 'x')")
        }
        try database.execute("UPDATE orders SET state = 'rejected' WHERE order_id = 'o-check'")
        try database.execute("UPDATE orders SET state = 'needs_attention' WHERE order_id = 'o-check'")
    }
}
