import XCTest
@testable import SettleLedger

/// The versions code and tests name (the migration a feature needs, the schema a migration test
/// starts before) each stand for one migration, in the order the migrations run. Two once stood for
/// the wrong one (refund history: SQLite 21 for migration 24, PostgreSQL 19 for 21), so the tests
/// meant to start just before it started three migrations earlier.
final class SchemaVersionTests: XCTestCase {
    func testSQLiteNamedVersions_eachAMigrationOfItsOwn_inTheOrderTheyRun() {
        let named: [(String, Int)] = [
            ("storeColumn", LedgerSchema.storeColumnVersion), ("storeBreakers", LedgerSchema.storeBreakersVersion),
            ("pacerBuckets", LedgerSchema.pacerBucketsVersion), ("supportActions", LedgerSchema.supportActionsVersion),
            ("sideClaimOwners", LedgerSchema.sideClaimOwnersVersion), ("openStores", LedgerSchema.openStoresVersion),
            ("storeProof", LedgerSchema.storeProofVersion), ("auditLog", LedgerSchema.auditLogVersion),
            ("inListChecks", LedgerSchema.inListChecksVersion), ("customers", LedgerSchema.customersVersion),
            ("revenue", LedgerSchema.revenueVersion), ("refundHistory", LedgerSchema.refundHistoryVersion),
            ("accountTokenIndex", LedgerSchema.accountTokenIndexVersion),
        ]
        assertInOrder(named, migrations: LedgerSchema.migrations.count)
        XCTAssertEqual(LedgerSchema.migrations[LedgerSchema.refundHistoryVersion - 1], RefundHistorySchema.indexes)
        XCTAssertEqual(LedgerSchema.migrations[LedgerSchema.customersVersion - 1], CustomerSchema.sqlite)
    }

    func testPostgresNamedVersions_eachAMigrationOfItsOwn_inTheOrderTheyRun() {
        let named: [(String, Int)] = [
            ("notifications", PostgresLedgerSchema.notificationsVersion),
            ("storeColumn", PostgresLedgerSchema.storeColumnVersion),
            ("storeBreakers", PostgresLedgerSchema.storeBreakersVersion),
            ("pacerBuckets", PostgresLedgerSchema.pacerBucketsVersion),
            ("supportActions", PostgresLedgerSchema.supportActionsVersion),
            ("sideClaimOwners", PostgresLedgerSchema.sideClaimOwnersVersion),
            ("openStores", PostgresLedgerSchema.openStoresVersion), ("storeProof", PostgresLedgerSchema.storeProofVersion),
            ("auditLog", PostgresLedgerSchema.auditLogVersion), ("orderCounts", PostgresLedgerSchema.orderCountsVersion),
            ("customers", PostgresLedgerSchema.customersVersion), ("revenue", PostgresLedgerSchema.revenueVersion),
            ("refundHistory", PostgresLedgerSchema.refundHistoryVersion),
            ("accountTokenIndex", PostgresLedgerSchema.accountTokenIndexVersion),
        ]
        assertInOrder(named, migrations: PostgresLedgerSchema.migrations.count)
        XCTAssertEqual(PostgresLedgerSchema.migrations[PostgresLedgerSchema.refundHistoryVersion - 1],
                       RefundHistorySchema.indexes)
        XCTAssertEqual(PostgresLedgerSchema.migrations[PostgresLedgerSchema.customersVersion - 1], CustomerSchema.postgres)
    }

    /// Strictly increasing (no two names for one migration), within the list, the newest the last.
    private func assertInOrder(_ named: [(String, Int)], migrations: Int, file: StaticString = #filePath, line: UInt = #line) {
        for (earlier, later) in zip(named, named.dropFirst()) {
            XCTAssertLessThan(earlier.1, later.1, "\(earlier.0) (\(earlier.1)) runs before \(later.0) (\(later.1))",
                              file: file, line: line)
        }
        XCTAssertGreaterThanOrEqual(named.first?.1 ?? 0, 1, file: file, line: line)
        XCTAssertEqual(named.last?.1, migrations, "the newest named migration is the last", file: file, line: line)
    }
}
