import XCTest
@testable import SettleLedger

/// The prepared-statement cache is keyed by the SQL's bytes, hashed by its length and both ends:
/// texts that differ only in the middle are still two statements, and the same text is one.
/// Text is bound in place and read back whole; columns are found by name.
final class SQLiteStatementTests: XCTestCase {
    func testKeys_equalOnlyForTheSameBytes_evenWhenLengthAndEndsAgree() {
        let head = String(repeating: "SELECT state FROM orders WHERE ", count: 2)
        let pending = StatementKey(head + "state = 'pending_' AND order_id = ?" + head)
        let finished = StatementKey(head + "state = 'finished' AND order_id = ?" + head)
        XCTAssertEqual(pending.sql.utf8.count, finished.sql.utf8.count)
        XCTAssertNotEqual(pending, finished)
        XCTAssertEqual(pending, StatementKey(String(pending.sql.reversed().reversed())))
        XCTAssertEqual(pending.hashValue, StatementKey(String(pending.sql.reversed().reversed())).hashValue)
        XCTAssertEqual(StatementKey(""), StatementKey(""))
        XCTAssertNotEqual(StatementKey(""), StatementKey(" "))
    }

    func testStatementsDifferingInTheMiddle_runAsTheirOwnSQL() throws {
        let database = try SQLiteDatabase(path: ":memory:", mode: .readWrite)
        let padding = String(repeating: " ", count: 40)
        let one = try database.query("SELECT 1 AS n" + padding + "WHERE 1 = ?", [.integer(1)])
        let two = try database.query("SELECT 2 AS n" + padding + "WHERE 1 = ?", [.integer(1)])
        XCTAssertEqual(one.first?.int("n"), 1)
        XCTAssertEqual(two.first?.int("n"), 2)
        XCTAssertEqual(try database.query("SELECT 1 AS n" + padding + "WHERE 1 = ?", [.integer(1)]).first?.int("n"), 1)
    }

    func testColumnsByName_findEachColumn_theLastOfARepeatedName_andNothingElse() throws {
        let names = (0..<70).map { "column_\($0)" } + ["state", "", "state"]
        let positions = ColumnPositions(names)
        for (index, name) in names.enumerated() where name != "state" {
            XCTAssertEqual(positions.position(name), index, name)
        }
        XCTAssertEqual(positions.position("state"), 72)
        XCTAssertNil(positions.position("column_70"))
        XCTAssertNil(positions.position("State"))
        XCTAssertNil(ColumnPositions([]).position("state"))
        let database = try SQLiteDatabase(path: ":memory:", mode: .readWrite)
        let row = try database.query("SELECT 1 AS a, 'x' AS b, 3 AS a").first
        XCTAssertEqual(row?.int("a"), 3)
        XCTAssertEqual(row?.string("b"), "x")
        XCTAssertNil(row?.value("c"))
    }

    func testText_isBoundWhole_emptyIsNotNull_andAFailedBindLeavesTheStatementUsable() throws {
        let database = try SQLiteDatabase(path: ":memory:", mode: .readWrite)
        try database.execute("CREATE TABLE t(id INTEGER PRIMARY KEY, v TEXT)")
        let odd = "a\u{0}b é " + String(repeating: "x", count: 5000)
        let back = try database.query("INSERT INTO t(v) VALUES (?) RETURNING v, length(CAST(v AS BLOB)) AS n",
                                      [.text(odd)])
        XCTAssertEqual(back.first?.string("v"), odd)
        XCTAssertEqual(back.first?.int("n"), Int64(odd.utf8.count))
        let empty = try database.query("SELECT ? AS v, ? IS NULL AS missing, ? AS n",
                                       [.text(""), .text(""), .integer(7)])
        XCTAssertEqual(empty.first?.value("v"), .text(""))
        XCTAssertEqual(empty.first?.int("missing"), 0)
        XCTAssertEqual(empty.first?.int("n"), 7)
        XCTAssertThrowsError(try database.query("SELECT ? AS v", [.text("one"), .text("too many")]))
        XCTAssertEqual(try database.query("SELECT ? AS v", [.text("again")]).first?.string("v"), "again")
        XCTAssertEqual(try database.query("SELECT ? IS NULL AS unbound", []).first?.int("unbound"), 1,
                       "nothing stays bound from the run before")
        XCTAssertEqual(try database.query("SELECT count(*) AS n FROM t WHERE v = ?", [.text(odd)]).first?.int("n"), 1)
    }

    /// A customer's every transaction in one `IN` list: thousands of parameters, past the few bound
    /// in place, each bound and matched, on a thread with a small stack.
    func testThousandsOfParameters_areBoundAndMatched_withoutAFramePerParameter() throws {
        let database = try SQLiteDatabase(path: ":memory:", mode: .readWrite)
        try database.execute("CREATE TABLE t(id INTEGER PRIMARY KEY, v TEXT)")
        for i in 0..<3 { try database.query("INSERT INTO t(v) VALUES (?)", [.text("tx-\(i * 2_000)")]) }
        let ids = (0..<10_000).map { SQLiteValue.text("tx-\($0)") }
        let sql = "SELECT count(*) AS n FROM t WHERE v IN (\(ids.map { _ in "?" }.joined(separator: ",")))"
        /// The run's outcome, written by the small-stack thread and read after it signalled.
        final class Outcome: @unchecked Sendable {
            let database: SQLiteDatabase
            var counted: Int64?
            var failure: (any Error)?
            init(_ database: SQLiteDatabase) { self.database = database }
        }
        let outcome = Outcome(database)
        let done = DispatchSemaphore(value: 0)
        let thread = Thread {
            do { outcome.counted = try outcome.database.query(sql, ids).first?.int("n") } catch { outcome.failure = error }
            done.signal()
        }
        thread.stackSize = 256 * 1024
        thread.start()
        done.wait()
        XCTAssertNil(outcome.failure)
        XCTAssertEqual(outcome.counted, 3)
    }
}
