import Foundation
import SettleTesting
import XCTest
@testable import SettleApp
@testable import SettleLedger

/// SQLite migration 8 rebuilds `orders` (its proof CHECK cannot be altered in place): every row,
/// its history, grants and counts must come through, and the rows that reference orders keep
/// referring to them.
final class PlayMigrationTests: XCTestCase {
    func testMigrationEight_keepsEveryOrderAndWhatReferencesIt_andCountsThemAsBefore() throws {
        let world = try TestWorld()
        let path = world.folder + "/v7.sqlite3"
        let database = try SQLiteDatabase(path: path, mode: .readWrite)
        try database.execute("PRAGMA foreign_keys = ON")
        try database.execute("BEGIN IMMEDIATE")
        for sql in LedgerSchema.migrations.prefix(7) { try database.execute(sql) }
        try database.execute("PRAGMA user_version = 7")
        try database.execute("""
            INSERT INTO orders(order_id, user_id, product_id, transaction_id) VALUES ('o-pending', 'u-1', 'coins', '1');
            INSERT INTO orders(order_id, user_id, product_id, transaction_id, state, verified_transaction_id, grant_key, finished_at,
                               app_account_token, origin)
                VALUES ('o-done', 'u-2', 'coins', '2', 'finished', '2', '2', 100, 'd4c3b2a1-0000-4000-8000-000000000001', 'backend');
            INSERT INTO grants(grant_key, transaction_id, order_id, source, granted_at) VALUES ('2', '2', 'o-done', 'settle', 100);
            INSERT INTO history(order_id, at, kind, outcome) VALUES ('o-done', 100, 'delivery', 'delivered');
            INSERT INTO revocations(transaction_id, order_id, kind, next_attempt_at, created_at, updated_at)
                VALUES ('2', 'o-done', 'REFUND', 0, 0, 0);
            """)
        try database.execute("COMMIT")
        try database.close()

        let ledger = try SQLiteLedger(path: path, time: world.time)
        XCTAssertEqual(try ledger.schemaVersion(), LedgerSchema.migrations.count)
        let done = try XCTUnwrap(try ledger.orderRecord("o-done"))
        XCTAssertEqual(done.order.state, .finished)
        XCTAssertEqual(done.order.store, .appStore)
        XCTAssertEqual(done.order.appAccountToken, "d4c3b2a1-0000-4000-8000-000000000001")
        XCTAssertEqual(done.history.map(\.outcome), ["delivered"])
        XCTAssertEqual(try ledger.grantHolder(transactionId: "2"), "o-done")
        let summary = try ledger.summary(OrderFilter())
        XCTAssertEqual(summary.counts[.pending], 1)
        XCTAssertEqual(summary.counts[.finished], 1)
        XCTAssertEqual(Set(summary.orders.map(\.orderId)), ["o-pending", "o-done"])
        try ledger.close()
        let check = try SQLiteDatabase(path: path, mode: .readOnly)
        defer { try? check.close() }
        XCTAssertTrue(try check.query("PRAGMA foreign_key_check").isEmpty)
        let triggers = "SELECT count(*) AS n FROM sqlite_master WHERE type = 'trigger' AND tbl_name = 'orders'"
        XCTAssertEqual(try check.query(triggers).first?.int("n"), 5,
                       "the order counts' three, migration 12's Finish Transaction queue, the revenue insert guard")
    }
}
