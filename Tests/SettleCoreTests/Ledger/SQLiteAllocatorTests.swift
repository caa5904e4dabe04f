import CSQLite
import Foundation
import XCTest
@testable import SettleLedger

/// SQLite's allocator: glibc's, with a pool for the 1 KiB pieces its in-memory journals come in
/// (CSQLite's shim.h).
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

    func testAFreedPiece_isHandedOutAgain_otherSizesAreGlibcs_andAPoolKeepsAtMost512() {
        // A pool of this test's own: SQLite's may hold pieces other tests' ledgers freed.
        let pool = UnsafeMutablePointer<settle_pool_t>.allocate(capacity: 1)
        pool.initialize(to: settle_pool_t())
        pthread_mutex_init(&pool.pointee.lock, nil)
        defer {
            while settle_pool_waiting(pool) > 0 { free(settle_pool_take(pool, 1024)) }
            pthread_mutex_destroy(&pool.pointee.lock)
            pool.deallocate()
        }
        let piece = settle_pool_take(pool, 1024)
        XCTAssertNotNil(piece)
        XCTAssertTrue((1032..<1064).contains(settle_pool_size(piece)), "any request of 1,017 to 1,032 bytes gets a block of 1,032 or a little more")
        settle_pool_give(pool, piece)
        XCTAssertEqual(settle_pool_waiting(pool), 1)
        XCTAssertEqual(settle_pool_take(pool, 1017), piece, "a freed piece waits for the next request of its size")
        XCTAssertEqual(settle_pool_waiting(pool), 0)

        settle_pool_give(pool, piece)
        let smaller = settle_pool_take(pool, 1016)
        XCTAssertGreaterThanOrEqual(settle_pool_size(smaller), 1016)
        XCTAssertEqual(settle_pool_waiting(pool), 1, "a smaller request is glibc's, not the pool's")
        free(smaller)
        let larger = settle_pool_take(pool, 4096)
        XCTAssertGreaterThanOrEqual(settle_pool_size(larger), 4096)
        settle_pool_give(pool, larger)
        XCTAssertEqual(settle_pool_waiting(pool), 1, "blocks of other sizes go back to glibc")
        XCTAssertEqual(settle_pool_take(pool, 1032), piece)

        let pieces = [piece] + (0..<512).map { _ in settle_pool_take(pool, 1024) }
        for piece in pieces { settle_pool_give(pool, piece) }
        XCTAssertEqual(settle_pool_waiting(pool), 512, "the 513th went back to glibc")
        let handedOut = (0..<512).map { _ in settle_pool_take(pool, 1024) }
        XCTAssertEqual(Set(handedOut.map { UInt(bitPattern: $0) }), Set(pieces.prefix(512).map { UInt(bitPattern: $0) }))
        XCTAssertEqual(handedOut.first, pieces[511], "last in, first out")
        for piece in handedOut { settle_pool_give(pool, piece) }
    }

    func testSQLitesPool_keepsAtMost512() throws {
        let path = NSTemporaryDirectory() + "/settle-allocator-\(UUID().uuidString).sqlite3"
        defer { try? FileManager.default.removeItem(atPath: path) }
        _ = try SQLiteDatabase(path: path, mode: .readWrite)
        XCTAssertLessThanOrEqual(settle_pool_waiting(settle_pool()), 512)
    }
}
