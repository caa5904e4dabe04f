import Foundation
import SettleTesting
import XCTest
@testable import SettleModel
@testable import SettleLedger

/// Orders found by their account token (SQLite migration 25, PostgreSQL 22): a ledger of the
/// previous settle gains `orders_account_token`, and the three reads by token go through it, never
/// through the store's index (every order of the store) and never by a scan.
final class AccountTokenIndexTests: XCTestCase {
    private let token = "ABCDEF00-0000-4000-8000-000000000001"

    /// A granted App Store order with a token, as the schema before the index held it.
    private var seed: String {
        """
        INSERT INTO orders(order_id, user_id, product_id, transaction_id, store, app_account_token)
        VALUES ('o-old', 'u-buyer', 'coins', '1', 'app_store', '\(token)');
        INSERT INTO grants(grant_key, transaction_id, order_id, source, granted_at) VALUES ('1', '1', 'o-old', 'settle', 5);
        """
    }

    /// The buyer's read finds the seeded order's buyer by the token's exact text, and nobody by another token.
    private func checkBuyers(_ ledger: some TransactionalLedger) throws {
        XCTAssertEqual(try ledger.user(store: .appStore, accountId: token), "u-buyer")
        // Exact text, as before: the same UUID in another case is not this buyer's token here.
        XCTAssertNil(try ledger.user(store: .appStore, accountId: token.lowercased()))
        XCTAssertNil(try ledger.user(store: .appStore, accountId: "ABCDEF00-0000-4000-8000-000000000002"))
    }

    /// Many orders of one store, each with a token, as on a real ledger; then statistics.
    private func addOrdersWithTokens(_ ledger: some TransactionalLedger) throws {
        try ledger.writing { db in
            for i in 0..<400 {
                try db.query("""
                    INSERT INTO orders(order_id, user_id, product_id, transaction_id, store, app_account_token)
                    VALUES (?, ?, 'coins', ?, 'app_store', ?)
                    """, [.text("o-\(i)"), .text("u-\(i % 50)"), .text("t-\(i)"), .text(UUID().uuidString)])
            }
            try db.query("ANALYZE orders")
        }
    }

    func testSQLiteLedgerAtTheSchemaBefore_findsOrdersByToken_throughTheTokenIndexOnly() throws {
        let world = try TestWorld()
        let path = world.folder + "/before.sqlite3"
        try LedgerBeforeMigration.sqlite(path: path, version: LedgerSchema.accountTokenIndexVersion - 1, seed: seed)
        let ledger = try SQLiteLedger(path: path, time: world.time)
        XCTAssertEqual(try ledger.schemaVersion(), LedgerSchema.migrations.count)
        try checkBuyers(ledger)
        try addOrdersWithTokens(ledger)
        let any = LedgerValue.text(token.lowercased())
        for (what, sql, values) in [
            ("a reported purchase's buyer", AccountTokenSQL.buyers, [any, any, .text("app_store")]),
            ("another user's order with the token", AccountTokenSQL.otherUsersOrder,
             [any, .text("app_store"), .text("o-new"), .text("u-new"), .text("u-new")]),
            ("support's search by token", "SELECT order_id FROM orders WHERE lower(app_account_token) = lower(?)", [any]),
        ] {
            let plan = try ledger.reading { db in try db.query("EXPLAIN QUERY PLAN " + sql, values) }
                .compactMap { $0.string("detail") }
            XCTAssertTrue(plan.contains { $0.contains("orders_account_token") }, "\(what): \(plan)")
            XCTAssertFalse(plan.contains { $0.contains("orders_store_state") }, "\(what) reads the whole store: \(plan)")
            XCTAssertFalse(plan.contains { $0.hasPrefix("SCAN o") || $0.hasPrefix("SCAN orders") }, "\(what) scans orders: \(plan)")
        }
    }

    func testPostgresLedgerAtTheSchemaBefore_gainsTheTokenIndex_andTheBuyersReadUsesIt() throws {
        let fresh = try TestPostgres.freshSchema()
        defer { TestPostgres.drop(schema: fresh.schema) }
        try LedgerBeforeMigration.postgres(url: fresh.url, version: PostgresLedgerSchema.accountTokenIndexVersion - 1, seed: seed)
        let world = try TestWorld()
        let ledger = try PostgresLedger(url: fresh.url, time: world.time)
        XCTAssertEqual(try ledger.schemaVersion(), PostgresLedgerSchema.migrations.count)
        let indexes = try ledger.reading { db in
            try db.query("SELECT indexname FROM pg_indexes WHERE tablename = 'orders' AND schemaname = current_schema()")
        }.compactMap { $0.string("indexname") }
        XCTAssertTrue(indexes.contains("orders_account_token"), "\(indexes)")
        try checkBuyers(ledger)
        try addOrdersWithTokens(ledger)
        // With sequential scans priced out, what is left to the planner is an index: the token's,
        // since the store is compared in a form its index cannot serve.
        let plan = try ledger.reading { db -> [String] in
            _ = try db.query("SET LOCAL enable_seqscan = off")
            return try db.query("EXPLAIN " + AccountTokenSQL.buyers, [.text(token), .text(token), .text("app_store")])
                .compactMap { $0.string("QUERY PLAN") }
        }
        XCTAssertTrue(plan.contains { $0.contains("orders_account_token") }, "\(plan)")
        XCTAssertFalse(plan.contains { $0.contains("orders_store_state") }, "\(plan)")
    }
}
