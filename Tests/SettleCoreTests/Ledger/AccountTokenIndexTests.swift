import Foundation
import SettleTesting
import XCTest
@testable import SettleModel
@testable import SettleLedger

/// Orders found by their account token (SQLite migration 25, PostgreSQL 22): a ledger of the
/// previous settle gains `orders_account_token`, and the three reads by token go through it, never
/// through the store's index (every order of the store) and never by a scan.
final class AccountTokenIndexTests: XCTestCase {
    private func sqliteLedgerBefore(_ world: TestWorld) throws -> String {
        let path = world.folder + "/before.sqlite3"
        let database = try SQLiteDatabase(path: path, mode: .readWrite)
        try database.execute("BEGIN IMMEDIATE")
        for (index, sql) in LedgerSchema.migrations.prefix(LedgerSchema.accountTokenIndexVersion - 1).enumerated() {
            try database.execute(sql)
            try LedgerSchema.afterMigration[index + 1]?(database)
        }
        try database.execute("PRAGMA user_version = \(LedgerSchema.accountTokenIndexVersion - 1)")
        try database.execute("""
            INSERT INTO orders(order_id, user_id, product_id, transaction_id, store, app_account_token)
            VALUES ('o-old', 'u-buyer', 'coins', '1', 'app_store', 'ABCDEF00-0000-4000-8000-000000000001');
            INSERT INTO grants(grant_key, transaction_id, order_id, source, granted_at) VALUES ('1', '1', 'o-old', 'settle', 5);
            """)
        try database.execute("COMMIT")
        try database.close()
        return path
    }

    func testSQLiteLedgerAtTheSchemaBefore_findsOrdersByToken_throughTheTokenIndexOnly() throws {
        let world = try TestWorld()
        let ledger = try SQLiteLedger(path: try sqliteLedgerBefore(world), time: world.time)
        XCTAssertEqual(try ledger.schemaVersion(), LedgerSchema.migrations.count)
        XCTAssertEqual(try ledger.user(store: .appStore, accountId: "ABCDEF00-0000-4000-8000-000000000001"), "u-buyer")
        // Exact text, as before: the same UUID in another case is not this buyer's token here.
        XCTAssertNil(try ledger.user(store: .appStore, accountId: "abcdef00-0000-4000-8000-000000000001"))
        // Many orders of one store, most with a token, as on a real ledger; then statistics.
        try ledger.writing { db in
            for i in 0..<400 {
                try db.query("""
                    INSERT INTO orders(order_id, user_id, product_id, transaction_id, store, app_account_token)
                    VALUES (?, ?, 'coins', ?, 'app_store', ?)
                    """, [.text("o-\(i)"), .text("u-\(i % 50)"), .text("t-\(i)"), .text(UUID().uuidString)])
            }
            try db.query("ANALYZE")
        }
        let token = LedgerValue.text("abcdef00-0000-4000-8000-000000000001")
        for (what, sql, values) in [
            ("a reported purchase's buyer", AccountTokenSQL.buyers, [token, token, .text("app_store")]),
            ("another user's order with the token", AccountTokenSQL.otherUsersOrder,
             [token, .text("app_store"), .text("o-new"), .text("u-new"), .text("u-new")]),
            ("support's search by token", "SELECT order_id FROM orders WHERE lower(app_account_token) = lower(?)", [token]),
        ] {
            let plan = try ledger.reading { db in try db.query("EXPLAIN QUERY PLAN " + sql, values) }
                .compactMap { $0.string("detail") }
            let orderReads = plan.filter { $0.contains(" o ") || $0.contains(" orders ") || $0.hasSuffix(" o") || $0.hasSuffix(" orders") }
            XCTAssertTrue(orderReads.contains { $0.contains("orders_account_token") }, "\(what): \(plan)")
            XCTAssertFalse(plan.contains { $0.contains("orders_store_state") }, "\(what) reads the whole store: \(plan)")
            XCTAssertFalse(plan.contains { $0.hasPrefix("SCAN o") || $0.hasPrefix("SCAN orders") }, "\(what) scans orders: \(plan)")
        }
    }

    func testPostgresLedgerAtTheSchemaBefore_gainsTheTokenIndex_andTheBuyersReadUsesIt() throws {
        let fresh = try TestPostgres.freshSchema()
        defer { TestPostgres.drop(schema: fresh.schema) }
        let connection = try PostgresConnection(url: fresh.url)
        defer { connection.close() }
        try connection.execute("""
            CREATE TABLE settle_schema (version INTEGER PRIMARY KEY, applied_at TIMESTAMPTZ NOT NULL DEFAULT now())
            """)
        for (index, sql) in PostgresLedgerSchema.migrations.prefix(PostgresLedgerSchema.accountTokenIndexVersion - 1).enumerated() {
            try connection.execute(sql)
            try connection.execute("INSERT INTO settle_schema(version) VALUES (\(index + 1))")
        }
        try connection.execute("""
            INSERT INTO orders(order_id, user_id, product_id, transaction_id, store, app_account_token)
            VALUES ('o-old', 'u-buyer', 'coins', '1', 'app_store', 'ABCDEF00-0000-4000-8000-000000000001');
            INSERT INTO grants(grant_key, transaction_id, order_id, source, granted_at) VALUES ('1', '1', 'o-old', 'settle', 5);
            """)

        let world = try TestWorld()
        let ledger = try PostgresLedger(url: fresh.url, time: world.time)
        XCTAssertEqual(try ledger.schemaVersion(), PostgresLedgerSchema.migrations.count)
        let indexes = try ledger.reading { db in
            try db.query("SELECT indexname FROM pg_indexes WHERE tablename = 'orders' AND schemaname = current_schema()")
        }.compactMap { $0.string("indexname") }
        XCTAssertTrue(indexes.contains("orders_account_token"), "\(indexes)")
        XCTAssertEqual(try ledger.user(store: .appStore, accountId: "ABCDEF00-0000-4000-8000-000000000001"), "u-buyer")
        XCTAssertNil(try ledger.user(store: .appStore, accountId: "ABCDEF00-0000-4000-8000-000000000002"))
        try ledger.writing { db in
            for i in 0..<400 {
                try db.query("""
                    INSERT INTO orders(order_id, user_id, product_id, transaction_id, store, app_account_token)
                    VALUES (?, ?, 'coins', ?, 'app_store', ?)
                    """, [.text("o-\(i)"), .text("u-\(i % 50)"), .text("t-\(i)"), .text(UUID().uuidString)])
            }
            try db.query("ANALYZE orders")
        }
        // With sequential scans priced out, what is left to the planner is an index: the token's,
        // since the store is compared in a form its index cannot serve.
        let plan = try ledger.reading { db -> [String] in
            _ = try db.query("SET LOCAL enable_seqscan = off")
            return try db.query("EXPLAIN " + AccountTokenSQL.buyers,
                                [.text("ABCDEF00-0000-4000-8000-000000000001"), .text("ABCDEF00-0000-4000-8000-000000000001"),
                                 .text("app_store")]).compactMap { $0.string("QUERY PLAN") }
        }
        XCTAssertTrue(plan.contains { $0.contains("orders_account_token") }, "\(plan)")
        XCTAssertFalse(plan.contains { $0.contains("orders_store_state") }, "\(plan)")
    }
}
