import Foundation
import SettleTesting
import XCTest
@testable import SettleModel
@testable import SettleLedger

/// The customers' migration (issue 37): a ledger of the previous settle opens with its orders
/// and learns customers; an unmigrated one answers as before (no record, the global settings);
/// `settle ledger copy` carries both tables.
final class CustomerPolicyMigrationTests: XCTestCase {
    func testSQLiteLedgerBeforeCustomers_keepsItsOrders_andRecordsCustomersAfterMigrating() throws {
        let world = try TestWorld()
        let path = world.folder + "/before.sqlite3"
        try LedgerBeforeMigration.sqlite(path: path, version: LedgerSchema.customersVersion - 1, seed: """
            INSERT INTO orders(order_id, user_id, product_id, transaction_id, state, reason)
            VALUES ('o-old', 'u-1', 'coins', '1', 'needs_attention', 'attempts_exhausted');
            """)
        let old = try SQLiteLedger(readOnlyPath: path)
        XCTAssertFalse(try old.knowsCustomers())
        XCTAssertEqual(try old.refundEvidence(orderId: "o-old"), .unknown(nil), "an unmigrated ledger answers as before")

        let ledger = try SQLiteLedger(path: path, time: world.time)
        XCTAssertTrue(try ledger.knowsCustomers())
        XCTAssertEqual(try ledger.orderRecord("o-old")?.order.state, .needsAttention)
        try ledger.setCustomer("u-1", CustomerChange(consented: true, refundPreference: .decline), source: .cli)
        XCTAssertEqual(try ledger.refundEvidence(orderId: "o-old").preference, .decline)
    }

    func testPostgresLedgerBeforeCustomers_keepsItsOrders_andRecordsCustomersAfterMigrating() throws {
        let fresh = try TestPostgres.freshSchema()
        defer { TestPostgres.drop(schema: fresh.schema) }
        try LedgerBeforeMigration.postgres(url: fresh.url, version: PostgresLedgerSchema.customersVersion - 1, seed: "INSERT INTO orders(order_id, user_id, product_id, transaction_id) VALUES ('o-old', 'u-1', 'coins', '1')")
        let world = try TestWorld()
        let ledger = try PostgresLedger(url: fresh.url, time: world.time)
        XCTAssertEqual(try ledger.schemaVersion(), PostgresLedgerSchema.migrations.count)
        XCTAssertEqual(try ledger.orderRecord("o-old")?.order.userId, "u-1")
        try ledger.setCustomer("u-1", CustomerChange(consented: false), source: .hook)
        XCTAssertEqual(try ledger.refundEvidence(orderId: "o-old").consent, .refused)
    }

    func testLedgerCopy_carriesCustomersAndUsage_fieldForField() throws {
        let world = try TestWorld()
        let path = world.folder + "/customers.sqlite3"
        let source = try SQLiteLedger(path: path, time: world.time)
        _ = try source.enqueue(NewOrder(orderId: "o-1", userId: "u-1", productId: world.coins, transactionId: "1",
                                        receipt: world.receipt("o-1")))
        try source.setCustomer("u-1", CustomerChange(consented: true, refundPreference: .grantProrated, note: "ticket 7"),
                               source: .console, by: Operator(name: "alice", channel: .web, role: .support))
        try source.setOrderUsage(OrderUsage(orderId: "o-1", consumptionMilliunits: 45200, playTimeSeconds: 60,
                                            events: [UsageEvent(at: 1_767_225_600, description: "opened")], ipAddress: "192.0.2.1",
                                            location: CoarseLocation(regionCode: "KR", administrativeArea: "Seoul", locality: "Jongno")),
                                 source: .hook)
        let policy = try source.customerPolicy(userId: "u-1"), usage = try source.orderUsage(orderId: "o-1")
        try source.close()
        let fresh = try TestPostgres.freshSchema()
        defer { TestPostgres.drop(schema: fresh.schema) }
        let destination = try PostgresLedger(url: fresh.url, time: world.time)
        let report = try LedgerCopy.copy(fromSQLite: path, to: destination)
        XCTAssertTrue(report.counts.contains { $0 == ("customers", 1) } && report.counts.contains { $0 == ("order_usage", 1) },
                      "\(report.counts)")
        XCTAssertEqual(try destination.customerPolicy(userId: "u-1"), policy)
        XCTAssertEqual(try destination.orderUsage(orderId: "o-1"), usage)
    }
}
