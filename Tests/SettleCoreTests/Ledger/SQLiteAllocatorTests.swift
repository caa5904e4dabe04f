import CSQLite
import Foundation
import XCTest
@testable import SettleLedger

/// SQLite's allocator: glibc's, with a pool for the 1 KiB pieces its in-memory journals come in
/// (CSQLite's shim.h). These tests use this module's own copy of the pool, which nothing else here
/// touches; SQLite uses SettleLedger's.
final class SQLiteAllocatorTests: XCTestCase {
    func testSQLite_runsOnThePooledAllocator_installedBeforeItsFirstConnection() throws {
        let path = NSTemporaryDirectory() + "/settle-allocator-\(UUID().uuidString).sqlite3"
        defer { try? FileManager.default.removeItem(atPath: path) }
        let database = try SQLiteDatabase(path: path, mode: .readWrite)
        XCTAssertEqual(SQLiteDatabase.pooledMalloc, SQLITE_OK)
        // A statement journal of many pieces inside a transaction, rolled back: SQLite reads the
        // pieces back, so a piece handed out twice would show as a wrong row.
        try database.execute("CREATE TABLE t (x TEXT NOT NULL CHECK (length(x) > 0))")
        try database.execute("""
            WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 200)
            INSERT INTO t SELECT printf('%04d', i) || hex(zeroblob(500)) FROM n
            """)
        try database.execute("BEGIN")
        XCTAssertThrowsError(try database.execute("UPDATE t SET x = CASE WHEN x LIKE '0200%' THEN '' ELSE lower(x) END"))
        try database.execute("COMMIT")
        let rows = try database.query("SELECT count(*) AS n, sum(x = upper(x)) AS unchanged FROM t").first
        XCTAssertEqual(rows?.int("n"), 200)
        XCTAssertEqual(rows?.int("unchanged"), 200, "the failed statement was rolled back from its journal")
    }

    func testAFreedPiece_isHandedOutAgain_otherSizesAreGlibcs_andThePoolKeepsAtMost512() {
        let piece = settle_pool_malloc(1024)
        XCTAssertNotNil(piece)
        XCTAssertEqual(settle_pool_size(piece), 1032, "any request of 1,017 to 1,032 bytes gets a block of 1,032")
        settle_pool_free(piece)
        let again = settle_pool_malloc(1017)
        XCTAssertEqual(again, piece, "a freed piece waits in the pool for the next request of its size")
        settle_pool_free(again)

        let smaller = settle_pool_malloc(1016)
        XCTAssertEqual(settle_pool_size(smaller), 1016)
        XCTAssertEqual(settle_pool_malloc(1032), piece, "a smaller block is glibc's, not the pool's")
        settle_pool_free(smaller)
        settle_pool_free(piece)
        let larger = settle_pool_malloc(4096)
        XCTAssertGreaterThanOrEqual(settle_pool_size(larger), 4096)
        settle_pool_free(larger)
        XCTAssertEqual(settle_pool_malloc(1024), piece, "the pool still holds its piece")

        var pieces = [piece] + (0..<512).map { _ in settle_pool_malloc(1024) }
        for piece in pieces { settle_pool_free(piece) }
        // Kept in order until full: the first 512 freed wait, the last went back to glibc.
        let handedOut = (0..<512).map { _ in settle_pool_malloc(1024) }
        XCTAssertEqual(Set(handedOut.map { UInt(bitPattern: $0) }), Set(pieces.prefix(512).map { UInt(bitPattern: $0) }))
        XCTAssertEqual(handedOut.first, pieces[511], "last in, first out")
        pieces = handedOut
        for piece in pieces { settle_pool_free(piece) }
    }
}
