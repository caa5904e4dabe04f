import Foundation
import SettleTesting
import XCTest
@testable import SettleBase
@testable import SettleModel
@testable import SettleLedger

/// `settle ledger copy` through `COPY … FROM STDIN`: every value arrives as it was, whatever
/// characters it holds; tables larger than a batch arrive whole; a failure leaves nothing.
final class LedgerCopyStreamingTests: XCTestCase {
    var world: TestWorld!
    var schemas: [String] = []

    override func setUpWithError() throws { world = try TestWorld() }

    override func tearDown() {
        schemas.forEach(TestPostgres.drop(schema:))
        world = nil
    }

    private func destination() throws -> (ledger: PostgresLedger, url: String) {
        let fresh = try TestPostgres.freshSchema()
        schemas.append(fresh.schema)
        return (try PostgresLedger(url: fresh.url, time: world.time), fresh.url)
    }

    /// A SQLite ledger with `orders` orders, then `sql` run on it.
    private func source(orders: Int, _ sql: String = "") throws -> String {
        let path = world.folder + "/copy-\(UUID().uuidString).sqlite3"
        let ledger = try SQLiteLedger(path: path, time: world.time)
        for i in 0..<orders {
            _ = try ledger.enqueue(NewOrder(orderId: "o-\(i)", userId: "u-\(i)", productId: world.coins,
                                            transactionId: "t-\(i)",
                                            receipt: world.receipt("o-\(i)")))
        }
        try ledger.close()
        if !sql.isEmpty { try SQLiteDatabase(path: path, mode: .readWrite).execute(sql) }
        return path
    }

    func testEveryAwkwardValue_arrivesAsItWas_tabsNewlinesBackslashesAndTheNullMarkerAsText() throws {
        let awkward = ["a\tb", "line 1\nline 2\r\n", "C:\\path\\N", "\\N", "\\.", "", "ü € 💸 \u{7}"]
        var sql = ""
        for (i, text) in awkward.enumerated() {
            let quoted = "'" + text.replacingOccurrences(of: "'", with: "''") + "'"
            sql += "UPDATE orders SET last_error = \(quoted), user_id = \(quoted),"
                + " purchase_date_ms = \(Int64.max - Int64(i)),"
                + " expires_date_ms = NULL, lease_expires_at = -\(i) WHERE order_id = 'o-\(i)';\n"
        }
        let path = try source(orders: awkward.count + 1, sql)
        let (ledger, url) = try destination()
        _ = try LedgerCopy.copy(fromSQLite: path, to: ledger)
        let connection = try PostgresConnection(url: url)
        defer { connection.close() }
        let rows = try connection.query("SELECT order_id, user_id, last_error, purchase_date_ms, expires_date_ms,"
                                        + " lease_expires_at FROM orders")
        let byId = Dictionary(uniqueKeysWithValues: rows.map { ($0.string("order_id") ?? "", $0) })
        for (i, text) in awkward.enumerated() {
            let row = try XCTUnwrap(byId["o-\(i)"])
            XCTAssertEqual(row.string("user_id"), text, "user_id of o-\(i)")
            XCTAssertEqual(row.string("last_error"), text, "last_error of o-\(i)")
            XCTAssertEqual(row.int("purchase_date_ms"), Int64.max - Int64(i))
            XCTAssertEqual(row.int("lease_expires_at"), -Int64(i))
            XCTAssertNil(row.string("expires_date_ms"), "NULL stays NULL")
        }
        let last = try XCTUnwrap(byId["o-\(awkward.count)"])
        XCTAssertNil(last.string("last_error"), "NULL stays NULL, not the text \\N")
        XCTAssertEqual(last.string("user_id"), "u-\(awkward.count)")
    }

    func testATableLargerThanABatch_arrivesWhole_inOrder_withProgressAsItGoes_andTheCountsKept() throws {
        let extra = LedgerCopy.batchRows * 2 + 17
        let path = try source(orders: 2, """
            WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < \(extra))
            INSERT INTO history(order_id, at, kind, outcome, detail)
                SELECT 'o-1', i, 'verification', 'verified', 'row ' || i FROM n;
            UPDATE orders SET state = 'rejected', reason = 'receipt_invalid' WHERE order_id = 'o-0';
            """)
        let (ledger, url) = try destination()
        let connection = try PostgresConnection(url: url)
        defer { connection.close() }
        let indexes = "SELECT indexdef FROM pg_indexes WHERE schemaname = current_schema() ORDER BY 1"
        let before = try connection.query(indexes).compactMap { $0.string("indexdef") }
        var heard: [Int] = []
        let report = try LedgerCopy.copy(fromSQLite: path, to: ledger) { table, rows in
            if table == "history" { heard.append(rows) }
        }
        let history = try XCTUnwrap(report.counts.first { $0.table == "history" }?.rows)
        XCTAssertEqual(history, extra + 2, "the two enqueued rows and the inserted ones")
        XCTAssertEqual(heard, [LedgerCopy.batchRows, LedgerCopy.batchRows * 2, history])
        XCTAssertEqual(try connection.query(indexes).compactMap { $0.string("indexdef") }, before,
                       "the indexes dropped for the load are all built again")
        XCTAssertGreaterThan(before.count, 20)
        let lastRow = try connection.query("SELECT detail FROM history WHERE at = \(extra)").first
        XCTAssertEqual(lastRow?.string("detail"), "row \(extra)")
        let counts = try ledger.summary(OrderFilter(limit: 0)).counts
        XCTAssertEqual(counts[.pending], 1, "the counts are recounted after the copy")
        XCTAssertEqual(counts[.rejected], 1)
        _ = try ledger.enqueue(NewOrder(orderId: "o-new", userId: "u-9", productId: world.coins, transactionId: "t-new",
                                        receipt: world.receipt("o-new")))
        XCTAssertEqual(try ledger.summary(OrderFilter(limit: 0)).counts[.pending], 2,
                       "and kept again by the trigger after it")
    }

    func testACopyThatFailsPartWay_leavesTheDestinationEmpty_andCanRunAgain() throws {
        // A history row of an order that is not there: the foreign key refuses it in PostgreSQL,
        // after the orders were already sent.
        let path = try source(orders: 3, """
            INSERT INTO history(order_id, at, kind, outcome) VALUES ('ghost', 1, 'verification', 'verified');
            """)
        let (ledger, url) = try destination()
        XCTAssertThrowsError(try LedgerCopy.copy(fromSQLite: path, to: ledger))
        let connection = try PostgresConnection(url: url)
        defer { connection.close() }
        XCTAssertEqual(try connection.query("SELECT count(*) AS n FROM orders").first?.int("n"), 0, "all or nothing")
        try SQLiteDatabase(path: path, mode: .readWrite).execute("DELETE FROM history WHERE order_id = 'ghost'")
        let report = try LedgerCopy.copy(fromSQLite: path, to: ledger)
        XCTAssertTrue(report.counts.contains { $0 == ("orders", 3) }, "\(report.counts)")
    }
}
