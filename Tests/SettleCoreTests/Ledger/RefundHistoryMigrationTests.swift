import Foundation
import SettleTesting
import XCTest
@testable import SettleModel
@testable import SettleLedger

/// Refund history's migration (SQLite 21, PostgreSQL 19): a ledger of the previous settle opens
/// with its transferred, refunded order counted for its buyer, and a buyer's refunds and the
/// overview's newest refunds are read through indexes, never a scan of orders or support_actions.
final class RefundHistoryMigrationTests: XCTestCase {
    private let transferred = """
        INSERT INTO support_actions(order_id, kind, number, state, step, from_user, to_user, note, requested_by,
                                    requested_at, done_at, next_attempt_at, updated_at)
        VALUES ('o-old', 'transfer', 1, 'done', 'done', 'u-buyer', 'u-holder', 'T-1', 'alice via cli', 5, 6, 5, 6);
        UPDATE orders SET user_id = 'u-holder', state = 'rejected', reason = 'refunded', refunded_at = 90,
                          refund_kind = 'REFUND' WHERE order_id = 'o-old';
        """

    func testSQLiteLedgerAtTheSchemaBefore_countsItsTransferredRefundForTheBuyer_throughIndexesOnly() throws {
        let world = try TestWorld()
        let path = world.folder + "/before.sqlite3"
        try LedgerBeforeMigration.sqlite(path: path, version: LedgerSchema.refundHistoryVersion - 1, seed: """
            INSERT INTO orders(order_id, user_id, product_id, transaction_id) VALUES ('o-old', 'u-buyer', 'coins', '1');
            """ + transferred)

        let ledger = try SQLiteLedger(path: path, time: world.time)
        XCTAssertEqual(try ledger.schemaVersion(), LedgerSchema.migrations.count)
        XCTAssertEqual(try ledger.refundHistory(of: "u-buyer", now: 100).entries.map(\.orderId), ["o-old"])
        XCTAssertEqual(try ledger.refundHistory(of: "u-holder", now: 100).count, 0)
        // Enough rows that a scan would cost more than a probe, as on a real ledger.
        try ledger.writing { db in
            for i in 0..<300 {
                try db.query("""
                    INSERT INTO orders(order_id, user_id, product_id, transaction_id) VALUES (?, ?, 'coins', ?)
                    """, [.text("o-\(i)"), .text("u-\(i % 50)"), .text("t-\(i)")])
            }
            try db.query("ANALYZE")
        }
        for (what, sql, values) in [
            ("a buyer's refunds", RefundHistorySQL.buyersRefunds(transfers: true),
             [LedgerValue.text("u-buyer"), .integer(0), .text("u-buyer"), .integer(0)]),
            ("the newest refunds", RefundHistorySQL.newestRefunds(transfers: true),
             [LedgerValue.integer(0), .integer(10)]),
        ] {
            let plan = try ledger.reading { db in try db.query("EXPLAIN QUERY PLAN " + sql, values) }
                .compactMap { $0.string("detail") }
            let scans = plan.filter { $0.hasPrefix("SCAN ") && !$0.hasPrefix("SCAN CONSTANT") }
            XCTAssertEqual(scans, [], "\(what) scans a table: \(plan)")
            XCTAssertTrue(plan.contains { $0.contains("USING") && $0.contains("INDEX") }, "\(what): \(plan)")
        }
        let buyerPlan = try ledger.reading { db in
            try db.query("EXPLAIN QUERY PLAN " + RefundHistorySQL.buyersRefunds(transfers: true),
                         [.text("u-buyer"), .integer(0), .text("u-buyer"), .integer(0)])
        }.compactMap { $0.string("detail") }
        XCTAssertTrue(buyerPlan.contains { $0.contains("support_actions_from_user") }, "\(buyerPlan)")
        // By the buyer AND the refund's time: `orders_user` alone would read every order the buyer has.
        XCTAssertTrue(buyerPlan.contains { $0.contains("orders_user_refunded") }, "\(buyerPlan)")
    }

    func testPostgresLedgerAtTheSchemaBefore_gainsTheIndex_andCountsItsTransferredRefundForTheBuyer() throws {
        let fresh = try TestPostgres.freshSchema()
        defer { TestPostgres.drop(schema: fresh.schema) }
        try LedgerBeforeMigration.postgres(url: fresh.url, version: PostgresLedgerSchema.refundHistoryVersion - 1, seed: """
            INSERT INTO orders(order_id, user_id, product_id, transaction_id) VALUES ('o-old', 'u-buyer', 'coins', '1');
            """ + transferred)

        let world = try TestWorld()
        let ledger = try PostgresLedger(url: fresh.url, time: world.time)
        XCTAssertEqual(try ledger.schemaVersion(), PostgresLedgerSchema.migrations.count)
        let indexes = try ledger.reading { db in
            try db.query("""
                SELECT indexname FROM pg_indexes WHERE tablename = 'support_actions' AND schemaname = current_schema()
                """)
        }.compactMap { $0.string("indexname") }
        XCTAssertTrue(indexes.contains("support_actions_from_user"), "\(indexes)")
        XCTAssertEqual(try ledger.refundHistory(of: "u-buyer", now: 100).entries.map(\.orderId), ["o-old"])
        XCTAssertEqual(try ledger.refundHistory(of: "u-holder", now: 100).count, 0)
    }
}
