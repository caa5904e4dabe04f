import Foundation
import SettleApp
import SettleTesting
import XCTest
import SettleBase
import SettleLedger
import SettleAppStoreSimulator

/// Numbers from outside through the binary (issue 32, item 16): a store's Retry-After of
/// Int64.max, and a ledger whose rows a backend wrote by SQL with numbers settle never writes.
/// `settle reconcile` and `settle status` answer; nothing traps (a trap is exit 132).
class OutsideNumberEndToEndTests: GooglePlayTestCase {
    static let int64Min = "-9223372036854775808"
    static let int64Max = "9223372036854775807"

    /// SQL on the ledger, as a backend would run it.
    func execute(_ sql: String) throws {
        try SQLiteDatabase(path: world.ledgerPath, mode: .readWrite).execute(sql)
    }

    /// The largest number PostgreSQL's `integer` columns hold, or SQLite's.
    var largestCount: String { Self.int64Max }

    func testRetryAfterOfInt64Max_fromEitherStore_holdsItsBreakerADayAtMost_andSettleGoesOn() throws {
        try enqueuePlay("gp-1", token: scriptProduct("one", orderId: "GPA.one"))
        // Apple's verifyReceipt rate limiting, asking for 9223372036854775807 seconds (or milliseconds) of quiet.
        let outage: [SimulatedAnswer] = Array(repeating: .http(429, retryAfter: Self.int64Max), count: 40)
        for i in 1...3 { try enqueueValid("as-\(i)", transaction: "200000000000000\(i)", answers: outage) }
        fake.failNextAPICalls(.status(503, retryAfter: Self.int64Max))
        let started = world.time.unixSeconds
        let first = try settle(["reconcile"])
        XCTAssertEqual(first.status, 69, first.stderr)
        let status = try statusJSON()
        for store in ["google_play", "app_store"] {
            XCTAssertEqual(status["health"]?[store]?["breaker"], .string("open"), store)
            let retryAt = try XCTUnwrap(status["health"]?[store]?["retry_at"]?.looseString, store)
            let formatter = ISO8601DateFormatter()
            let at = try XCTUnwrap(formatter.date(from: retryAt), retryAt)
            XCTAssertLessThanOrEqual(Int64(at.timeIntervalSince1970), started + 86_400 + 60, "\(store): \(retryAt)")
        }
        // Named, an order is tried whatever the breaker says: both stores answer now.
        try settle(expecting: 0, ["reconcile", "--order", "gp-1"])
        XCTAssertEqual(try state("gp-1"), "finished")
        try settle(expecting: 0, ["status"])
    }

    func testLedgerRowsWithAbsurdNumbers_areSettledAndShown_andNeitherReconcileNorStatusTraps() throws {
        for name in ["early", "late", "tried"] {
            try enqueuePlay("gp-\(name)", token: scriptProduct(name, orderId: "GPA.\(name)"))
        }
        try enqueuePlay("gp-done", token: scriptProduct("done", orderId: "GPA.done"))
        try settle(expecting: 0, ["reconcile", "--order", "gp-done"])
        try execute("UPDATE orders SET created_at = \(Self.int64Min), updated_at = \(Self.int64Min) WHERE order_id = 'gp-early'")
        try execute("UPDATE orders SET created_at = \(Self.int64Max), updated_at = \(Self.int64Max) WHERE order_id = 'gp-late'")
        try execute("UPDATE orders SET attempts = \(largestCount) WHERE order_id = 'gp-tried'")
        try execute("UPDATE orders SET updated_at = \(Self.int64Min) WHERE order_id = 'gp-done'")
        try execute("INSERT INTO play_cursor(id, voided_since_ms, polled_at) VALUES (1, \(Self.int64Max), \(Self.int64Min))")
        let status = try settle(["status"])
        XCTAssertEqual(status.status, 0, status.stderr)
        try settle(expecting: 0, ["status", "--json"])
        try settle(expecting: 0, ["status", "gp-early"])
        try settle(expecting: 0, ["status", "gp-late"])
        let pass = try settle(["reconcile"])
        XCTAssertEqual(pass.status, 0, pass.stderr)
        for name in ["early", "late", "tried"] { XCTAssertEqual(try state("gp-\(name)"), "finished", name) }
        try settle(expecting: 0, ["status"])
    }
}

/// The same on a PostgreSQL ledger.
final class OutsideNumberPostgresTests: OutsideNumberEndToEndTests {
    var schema = ""
    var url = ""

    override func setUpWithError() throws {
        try super.setUpWithError()
        let fresh = try TestPostgres.freshSchema()
        (url, schema) = (fresh.url, fresh.schema)
        try writePlayConfig(extra: [("ledger", .string(url))])
        try settle(expecting: 0, ["migrate"])
    }

    override func tearDownWithError() throws {
        TestPostgres.drop(schema: schema)
        try super.tearDownWithError()
    }

    override func execute(_ sql: String) throws {
        let connection = try PostgresConnection(url: url)
        defer { connection.close() }
        try connection.execute(sql)
    }

    override var largestCount: String { String(Int32.max) }

    override func testLedgerRowsWithAbsurdNumbers_areSettledAndShown_andNeitherReconcileNorStatusTraps() throws {
        try super.testLedgerRowsWithAbsurdNumbers_areSettledAndShown_andNeitherReconcileNorStatusTraps()
    }
}
