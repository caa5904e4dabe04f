import Foundation
import SettleTesting
import XCTest
@testable import SettleApp
@testable import SettleModel
@testable import SettleLedger

/// SQLite migration 18 takes the store lists out of the schema by editing the stored table
/// text (no rebuild of a million orders): a ledger of the previous settle opens, keeps every
/// order and every other constraint, and takes a store it never heard of.
final class OpenStoresMigrationTests: XCTestCase {
    func testMigrationEighteen_letsAnyStoreIn_andKeepsEveryOtherConstraint() throws {
        let world = try TestWorld()
        let path = world.folder + "/v17.sqlite3"
        let database = try SQLiteDatabase(path: path, mode: .readWrite)
        try database.execute("BEGIN IMMEDIATE")
        for (index, sql) in LedgerSchema.migrations.prefix(17).enumerated() {
            try database.execute(sql)
            try LedgerSchema.afterMigration[index + 1]?(database)
        }
        try database.execute("PRAGMA user_version = 17")
        try database.execute("""
            INSERT INTO orders(order_id, user_id, product_id, transaction_id, state) VALUES ('o-old', 'u-1', 'coins', '1', 'rejected');
            """)
        XCTAssertThrowsError(try database.execute("""
            INSERT INTO orders(order_id, user_id, product_id, transaction_id, store) VALUES ('o-x', 'u-1', 'coins', '2', 'bogus')
            """), "before the migration, the schema's store list refuses the store")
        try database.execute("COMMIT")
        try database.close()

        let ledger = try SQLiteLedger(path: path, time: world.time)
        XCTAssertEqual(try ledger.schemaVersion(), LedgerSchema.migrations.count)
        XCTAssertEqual(try ledger.orderRecord("o-old")?.order.state, .rejected)
        XCTAssertEqual(try ledger.enqueue(NewOrder(orderId: "o-bogus", userId: "u-1", productId: world.coins, transactionId: "B-1",
                                                   store: .bogus)), .created)
        var proven = NewOrder(orderId: "o-proof", userId: "u-1", productId: world.coins, store: .bogus)
        proven.storeProof = StoreProof(kind: "bogus_sale", proof: "sale:S-1", key: "S-1")
        XCTAssertEqual(try ledger.enqueue(proven), .created, "a module's proof alone proves an order (migration 19)")
        XCTAssertEqual(try ledger.orderRecord("o-proof")?.order.storeProof, proven.storeProof)
        var changed = proven
        changed.storeProof?.proof = "sale:S-2"
        XCTAssertThrowsError(try ledger.enqueue(changed), "the same order with another proof is refused, never overwritten")
        try ledger.saveBreaker(StoreBreaker(state: .open, consecutiveFailures: 1, cooldownSeconds: 30, retryAt: 99, lastError: "down",
                                            lastErrorAt: 1), of: .bogus)
        XCTAssertEqual(try ledger.breakers()[.bogus]?.state, .open)
        let summary = try ledger.summary(OrderFilter())
        XCTAssertEqual(summary.storeCounts[.bogus]?[.pending], 2, "the counts kept by trigger gained the new store's row")
        XCTAssertEqual(summary.storeCounts[.appStore]?[.rejected], 1)

        let check = try SQLiteDatabase(path: path, mode: .readWrite)
        XCTAssertEqual(try check.query("PRAGMA integrity_check").first?.string("integrity_check"), "ok")
        let schema = try check.query("SELECT sql FROM sqlite_schema WHERE name = 'orders'").first?.string("sql") ?? ""
        XCTAssertFalse(schema.contains("store IN"), schema)
        XCTAssertThrowsError(try check.execute("""
            INSERT INTO orders(order_id, user_id, product_id, store) VALUES ('o-no-token', 'u-1', 'coins', 'google_play')
            """), "a Google Play order without its token is still refused")
        XCTAssertThrowsError(try check.execute("""
            INSERT INTO orders(order_id, user_id, product_id, store) VALUES ('o-no-proof', 'u-1', 'coins', 'bogus')
            """), "an order with no proof at all is still refused")
        try check.close()
    }
}
