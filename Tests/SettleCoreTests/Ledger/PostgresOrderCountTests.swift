import Foundation
import SettleTesting
import Synchronization
import XCTest
@testable import SettleBase
@testable import SettleModel
@testable import SettleLedger

/// PostgreSQL's counts by store and state (`order_count_deltas`, migration 18): what status and
/// the overview show must stay exact while several hosts change orders at once, and the migration
/// must count the orders a ledger already had.
final class PostgresOrderCountTests: XCTestCase {
    var world: TestWorld!
    var schemas: [String] = []
    let entry = HistoryEntry(at: 0, kind: .verification, outcome: "verified")

    override func setUpWithError() throws { world = try TestWorld() }

    override func tearDown() {
        schemas.forEach(TestPostgres.drop(schema:))
        world = nil
    }

    private func freshURL() throws -> String {
        let fresh = try TestPostgres.freshSchema()
        schemas.append(fresh.schema)
        return fresh.url
    }

    /// The counts as a scan of the orders finds them, by store and state.
    private func scanned(_ url: String) throws -> [String: Int64] {
        let connection = try PostgresConnection(url: url)
        defer { connection.close() }
        var counts: [String: Int64] = [:]
        for row in try connection.query("SELECT store, state, count(*) AS n FROM orders GROUP BY 1, 2") {
            counts["\(row.string("store") ?? "") \(row.string("state") ?? "")"] = row.int("n")
        }
        return counts
    }

    private func summarized(_ ledger: PostgresLedger) throws -> [String: Int64] {
        var counts: [String: Int64] = [:]
        for (store, states) in try ledger.summary(OrderFilter(limit: 0)).storeCounts {
            for (state, n) in states where n != 0 { counts["\(store.rawValue) \(state.rawValue)"] = Int64(n) }
        }
        return counts
    }

    func testCounts_afterConcurrentClaimsAndVerificationsFromTwoHosts_areExact_andReadFromTheKeptCounts() throws {
        let url = try freshURL()
        let hosts = [try PostgresLedger(url: url, time: world.time), try PostgresLedger(url: url, time: world.time)]
        for i in 0..<120 {
            _ = try hosts[i % 2].enqueue(NewOrder(orderId: "o-\(i)", userId: "u-\(i % 7)", productId: world.coins,
                                                  transactionId: "t-\(i)", receipt: world.receipt("o-\(i)")))
        }
        let group = DispatchGroup()
        let failures = Mutex<[String]>([])
        let entry = self.entry
        let coins = world.coins
        for worker in 0..<4 {
            let store = hosts[worker % 2]
            let owner = LeaseOwner(host: "host-\(worker % 2)", pid: Int32(worker + 1), startTime: "1")
            group.enter()
            Thread {
                defer { group.leave() }
                do {
                    while case let batch = try store.claimDue(owner: owner, leaseSeconds: 60, limit: 3),
                          !batch.isEmpty {
                        for order in batch where Int(order.orderId.dropFirst(2))! % 3 != 0 {
                            let txn = order.requestedTransactionId ?? ""
                            let purchase = VerifiedPurchase(transactionId: txn, originalTransactionId: txn,
                                                            productId: coins, environment: "Production", quantity: 1,
                                                            purchaseDateMs: 1, expiresDateMs: nil)
                            _ = try store.recordVerified(orderId: order.orderId, owner: owner,
                                                         fence: order.fencingToken, match: .only(purchase),
                                                         deliveryLeaseSeconds: 60, history: entry)
                        }
                    }
                } catch {
                    failures.withLock { $0.append("\(error)") }
                }
            }.start()
        }
        group.wait()
        XCTAssertEqual(failures.withLock { $0 }, [], "no transition failed (no deadlock on the count rows)")
        let expected = ["app_store verifying": Int64(40), "app_store delivering": 80]
        XCTAssertEqual(try scanned(url), expected)
        XCTAssertEqual(try summarized(hosts[0]), expected)
        XCTAssertEqual(try summarized(hosts[1]), expected)

        // The summary reads the kept counts, not a scan: a count changed by hand is what it shows.
        let connection = try PostgresConnection(url: url)
        defer { connection.close() }
        try connection.execute("INSERT INTO order_count_deltas(store, state, slot, n)"
                               + " VALUES ('app_store', 'finished', 63, 5)"
                               + " ON CONFLICT (store, state, slot) DO UPDATE SET n = order_count_deltas.n + 5")
        XCTAssertEqual(try hosts[0].summary(OrderFilter(limit: 0)).counts[.finished], 5)
    }

    func testCounts_followInsertsUpdatesOfStoreAndStateAndDeletes_madeOutsideSettle() throws {
        let url = try freshURL()
        let ledger = try PostgresLedger(url: url, time: world.time)
        for i in 0..<6 {
            _ = try ledger.enqueue(NewOrder(orderId: "o-\(i)", userId: "u-1", productId: world.coins,
                                            transactionId: "t-\(i)",
                                            receipt: world.receipt("o-\(i)")))
        }
        let connection = try PostgresConnection(url: url)
        defer { connection.close() }
        try connection.execute("""
            UPDATE orders SET state = 'rejected', reason = 'receipt_invalid' WHERE order_id IN ('o-0', 'o-1');
            UPDATE orders SET attempts = 3 WHERE order_id = 'o-2';
            DELETE FROM history WHERE order_id = 'o-3'; DELETE FROM orders WHERE order_id = 'o-3';
            """)
        let expected = ["app_store pending": Int64(3), "app_store rejected": 2]
        XCTAssertEqual(try scanned(url), expected)
        XCTAssertEqual(try summarized(ledger), expected)
    }

    func testMigration_countsTheOrdersTheLedgerAlreadyHad() throws {
        let url = try freshURL()
        let connection = try PostgresConnection(url: url)
        defer { connection.close() }
        try connection.execute("""
            CREATE TABLE settle_schema (version INTEGER PRIMARY KEY, applied_at TIMESTAMPTZ NOT NULL DEFAULT now())
            """)
        let before = PostgresLedgerSchema.migrations.prefix(PostgresLedgerSchema.orderCountsVersion - 1)
        for (index, sql) in before.enumerated() {
            try connection.execute(sql)
            try connection.execute("INSERT INTO settle_schema(version) VALUES (\(index + 1))")
        }
        try connection.execute("""
            INSERT INTO orders(order_id, user_id, product_id, transaction_id) VALUES ('o-1', 'u-1', 'coins', '1'),
                ('o-2', 'u-1', 'coins', '2'), ('o-3', 'u-2', 'coins', '3');
            UPDATE orders SET state = 'rejected', reason = 'receipt_invalid' WHERE order_id = 'o-1';
            """)
        let ledger = try PostgresLedger(url: url, time: world.time)
        XCTAssertEqual(try ledger.schemaVersion(), PostgresLedgerSchema.migrations.count)
        XCTAssertTrue(try ledger.keepsOrderCounts())
        XCTAssertEqual(try summarized(ledger), ["app_store pending": 2, "app_store rejected": 1])
        XCTAssertEqual(try ledger.settlementsPerHour(since: 0).map(\.settled), [1], "the chart's hours are counted too")
        _ = try ledger.enqueue(NewOrder(orderId: "o-4", userId: "u-3", productId: world.coins, transactionId: "4",
                                        receipt: world.receipt("o-4")))
        XCTAssertEqual(try summarized(ledger), ["app_store pending": 3, "app_store rejected": 1])
    }

    /// The chart's hours as a scan of the orders finds them: (hour, ended, finished).
    private func scannedHours(_ url: String) throws -> [String] {
        let connection = try PostgresConnection(url: url)
        defer { connection.close() }
        return try connection.query("""
            SELECT updated_at - updated_at % 3600 AS hour, count(*) AS settled,
                   count(*) FILTER (WHERE state = 'finished') AS recovered
            FROM orders WHERE state IN ('finished', 'rejected') GROUP BY 1 ORDER BY 1
            """).map { "\($0.int("hour") ?? -1) \($0.int("settled") ?? -1) \($0.int("recovered") ?? -1)" }
    }

    func testHourlySettlements_followEveryChangeOfStateAndUpdatedAt_andMatchAScanOfTheOrders() throws {
        let url = try freshURL()
        let ledger = try PostgresLedger(url: url, time: world.time)
        for i in 0..<8 {
            _ = try ledger.enqueue(NewOrder(orderId: "o-\(i)", userId: "u-1", productId: world.coins,
                                            transactionId: "t-\(i)",
                                            receipt: world.receipt("o-\(i)")))
        }
        // The middle of an hour: the four orders finished minutes apart stay in one hour whatever
        // the wall clock says (the test world's clock starts from it).
        let now = world.time.unixSeconds / 3600 * 3600 + 1800
        let connection = try PostgresConnection(url: url)
        defer { connection.close() }
        func run(_ sql: String) throws { try connection.execute(sql) }
        func hours() throws -> [String] {
            try ledger.settlementsPerHour(since: now - 7 * 86400).map { "\($0.hour) \($0.settled) \($0.recovered)" }
        }
        try run("""
            UPDATE orders SET state = 'finished', verified_transaction_id = transaction_id, finished_at = \(now - 7200),
                   updated_at = \(now - 7200) - 60 * substr(order_id, 3)::int
            WHERE order_id IN ('o-0', 'o-1', 'o-2', 'o-3');
            UPDATE orders SET state = 'rejected', reason = 'receipt_invalid', updated_at = \(now - 3600)
            WHERE order_id IN ('o-4', 'o-5');
            """)
        XCTAssertEqual(try hours(), try scannedHours(url))
        let first = try hours()
        XCTAssertEqual(first.count, 2, "\(first)")
        try run("""
            UPDATE orders SET updated_at = \(now - 86400) WHERE order_id = 'o-0';
            UPDATE orders SET attempts = 2 WHERE order_id = 'o-1';
            UPDATE orders SET state = 'pending', reason = NULL, updated_at = \(now) WHERE order_id = 'o-4';
            UPDATE orders SET state = 'finished', verified_transaction_id = transaction_id, finished_at = \(now)
            WHERE order_id = 'o-5';
            DELETE FROM history WHERE order_id = 'o-2'; DELETE FROM apple_finishes WHERE order_id = 'o-2';
            DELETE FROM orders WHERE order_id = 'o-2';
            """)
        XCTAssertEqual(try hours(), try scannedHours(url))
        let after = try hours()
        XCTAssertEqual(after.map { $0.split(separator: " ")[1] }.reduce(0) { $0 + Int($1)! }, 4, "\(after)")
    }
}
