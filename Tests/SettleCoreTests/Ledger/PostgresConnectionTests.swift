import SettleTesting
import XCTest
@testable import SettleApp
@testable import SettleLedger

/// Fails, loudly, when the PostgreSQL tests have no server: see `TestPostgres`.
final class PostgresAvailabilityTests: XCTestCase {
    func testPostgreSQL_isAvailableToTheTests_orTheRunSaysSo() throws {
        guard let url = TestPostgres.url else { return XCTFail(TestPostgres.missing) }
        XCTAssertNoThrow(try PostgresConnection(url: url).query("SELECT 1 AS one"), "SETTLE_TEST_POSTGRES_URL is set but unusable")
    }
}

final class PostgresConnectionTests: XCTestCase {
    var connection: PostgresConnection!
    var schema = ""

    override func setUpWithError() throws {
        let fresh = try TestPostgres.freshSchema()
        schema = fresh.schema
        connection = try PostgresConnection(url: fresh.url)
        try connection.execute("CREATE TABLE things (id TEXT PRIMARY KEY, n BIGINT)")
    }

    override func tearDown() {
        connection?.close()
        TestPostgres.drop(schema: schema)
    }

    func testQuery_bindsParameters_andReadsRowsByColumnName() throws {
        try connection.query("INSERT INTO things(id, n) VALUES ($1, $2)", [.text("a"), .integer(42)])
        try connection.query("INSERT INTO things(id, n) VALUES ($1, $2)", [.text("it's; DROP TABLE things"), .null])
        let rows = try connection.query("SELECT id, n FROM things ORDER BY id")
        XCTAssertEqual(rows.map { $0.string("id") }, ["a", "it's; DROP TABLE things"])
        XCTAssertEqual(rows[0].int("n"), 42)
        XCTAssertNil(rows[1].int("n"))
    }

    func testConstraintViolation_carriesSQLState_andNeverTheBoundValues() throws {
        try connection.query("INSERT INTO things(id) VALUES ($1)", [.text("SECRET-receipt")])
        XCTAssertThrowsError(try connection.query("INSERT INTO things(id) VALUES ($1)", [.text("SECRET-receipt")])) { error in
            guard let error = error as? PostgresError else { return XCTFail("\(error)") }
            XCTAssertEqual(error.sqlstate, "23505")
            XCTAssertTrue(error.isConstraintViolation)
            XCTAssertFalse(error.isConnectionLost)
            XCTAssertEqual(error.sql, "INSERT INTO things(id) VALUES ($1)")
            XCTAssertFalse("\(error)".contains("SECRET"), "\(error)")
        }
    }

    func testUnreachableServer_isAClientSideConnectionError() {
        XCTAssertThrowsError(try PostgresConnection(url: "postgresql://settle@127.0.0.1:1/none?connect_timeout=2")) { error in
            XCTAssertNil((error as? PostgresError)?.sqlstate)
            XCTAssertTrue((error as? PostgresError)?.isConnectionLost == true)
        }
    }
}
