import Foundation
import SettleTesting
import XCTest
@testable import SettleModel
@testable import SettleLedger

/// The revenue migration (issue 37): a ledger of the previous settle opens, each order it had
/// delivered is recovered on the day of its delivery (without a price: none was kept then), and
/// the report reads through the time index, not every order.
final class RevenueMigrationTests: XCTestCase {
    func testSQLiteLedgerBeforeRevenue_marksItsDeliveredOrdersRecovered_withoutAPrice() throws {
        let world = try TestWorld()
        let path = world.folder + "/before-revenue.sqlite3"
        try LedgerBeforeMigration.sqlite(path: path, version: LedgerSchema.revenueVersion - 1, seed: """
            INSERT INTO orders(order_id, user_id, product_id, transaction_id, state, verified_transaction_id, grant_key,
                               finished_at)
            VALUES ('o-delivered', 'u-1', 'coins', '1', 'finished', '1', '1', 200000);
            INSERT INTO orders(order_id, user_id, product_id, transaction_id, state, reason, verified_transaction_id,
                               grant_key, finished_at)
            VALUES ('o-outside', 'u-1', 'coins', '2', 'finished', 'already_delivered', '2', '2', 200000);
            INSERT INTO history(order_id, at, kind, outcome) VALUES ('o-delivered', 100000, 'delivery', 'delivered');
            INSERT INTO history(order_id, at, kind, outcome)
            VALUES ('o-outside', 100000, 'delivery', 'already_granted');
            """)

        let ledger = try SQLiteLedger(path: path, time: world.time)
        XCTAssertEqual(try ledger.schemaVersion(), LedgerSchema.migrations.count)
        XCTAssertTrue(try ledger.knowsRevenue())
        let report = try ledger.revenue(since: 0, until: 1_000_000)
        XCTAssertEqual(report.recovered,
                       [RevenueReport.Row(day: 86400, store: "app_store", currency: nil, orders: 1, milliunits: 0)])
        XCTAssertNil(try ledger.orderRecord("o-delivered")?.order.verified?.price)
    }

    func testPostgresLedgerBeforeRevenue_marksItsDeliveredOrdersRecovered() throws {
        let fresh = try TestPostgres.freshSchema()
        defer { TestPostgres.drop(schema: fresh.schema) }
        try LedgerBeforeMigration.postgres(url: fresh.url, version: PostgresLedgerSchema.revenueVersion - 1, seed: """
            INSERT INTO orders(order_id, user_id, product_id, transaction_id)
            VALUES ('o-delivered', 'u-1', 'coins', '1');
            UPDATE orders SET state = 'finished', verified_transaction_id = '1', grant_key = '1', finished_at = 200000
            WHERE order_id = 'o-delivered';
            INSERT INTO history(order_id, at, kind, outcome) VALUES ('o-delivered', 100000, 'delivery', 'delivered');
            """)
        let world = try TestWorld()
        let ledger = try PostgresLedger(url: fresh.url, time: world.time)
        XCTAssertEqual(try ledger.schemaVersion(), PostgresLedgerSchema.migrations.count)
        let report = try ledger.revenue(since: 0, until: 1_000_000)
        XCTAssertEqual(report.recovered.map { "\($0.day) \($0.orders) \($0.currency ?? "-")" }, ["86400 1 -"])
    }

    /// `settle report --since` at a million orders reads the window through `orders_recovered`
    /// and `revocations_revoked`, never every order.
    func testTheReport_readsThroughTheTimeIndexes() throws {
        let world = try TestWorld()
        let ledger = try world.ledger()
        _ = try ledger.revenue(since: 0, until: 1)
        let plans = try ledger.reading { db in
            try ["SELECT count(*) FROM orders WHERE recovered_at >= 1 AND recovered_at < 2",
                 "SELECT count(*) FROM revocations WHERE state = 'revoked' AND updated_at >= 1 AND updated_at < 2"]
                .map { sql in
                    try db.query("EXPLAIN QUERY PLAN " + sql, []).compactMap { $0.string("detail") }
                        .joined(separator: "; ")
                }
        }
        XCTAssertTrue(plans[0].contains("orders_recovered"), plans[0])
        XCTAssertTrue(plans[1].contains("revocations_revoked"), plans[1])
    }
}
