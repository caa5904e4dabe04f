import Foundation
import SettleTesting
import XCTest
@testable import SettleModel
@testable import SettleLedger

/// The audit log's migration (SQLite 20, PostgreSQL 17): a ledger of the previous settle opens,
/// keeps its orders and history, and its next support action is audited.
final class AuditLogMigrationTests: XCTestCase {
    func testSQLiteLedgerAtSchemaNineteen_keepsItsOrders_andAuditsTheNextAction() throws {
        let world = try TestWorld()
        let path = world.folder + "/v19.sqlite3"
        try LedgerBeforeMigration.sqlite(path: path, version: LedgerSchema.auditLogVersion - 1, seed: """
            INSERT INTO orders(order_id, user_id, product_id, transaction_id, state, reason)
            VALUES ('o-old', 'u-1', 'coins', '1', 'needs_attention', 'attempts_exhausted');
            INSERT INTO history(order_id, at, kind, outcome) VALUES ('o-old', 5, 'enqueue', 'enqueued');
            """)

        let ledger = try SQLiteLedger(path: path, time: world.time)
        XCTAssertEqual(try ledger.schemaVersion(), LedgerSchema.migrations.count)
        let record = try XCTUnwrap(try ledger.orderRecord("o-old"))
        XCTAssertEqual(record.order.state, .needsAttention)
        XCTAssertEqual(record.history.first?.outcome, "enqueued")
        XCTAssertEqual(try ledger.auditEntries(), [])
        try ledger.retry(orderIds: ["o-old"], note: "ticket 9", by: Operator(name: "root", channel: .cli))
        XCTAssertEqual(try ledger.auditEntries().map { "\($0.actor) \($0.action) \($0.subject) \($0.source)" },
                       ["root retry o-old local"])
    }

    func testPostgresLedgerAtSchemaSixteen_keepsItsOrders_andAuditsTheNextAction() throws {
        let fresh = try TestPostgres.freshSchema()
        defer { TestPostgres.drop(schema: fresh.schema) }
        try LedgerBeforeMigration.postgres(url: fresh.url, version: PostgresLedgerSchema.auditLogVersion - 1, seed: """
            INSERT INTO orders(order_id, user_id, product_id, transaction_id) VALUES ('o-old', 'u-1', 'coins', '1');
            UPDATE orders SET state = 'rejected', reason = 'receipt_invalid' WHERE order_id = 'o-old';
            """)

        let world = try TestWorld()
        let ledger = try PostgresLedger(url: fresh.url, time: world.time)
        XCTAssertEqual(try ledger.schemaVersion(), PostgresLedgerSchema.migrations.count)
        XCTAssertEqual(try ledger.orderRecord("o-old")?.order.state, .rejected)
        try ledger.retry(orderIds: ["o-old"], note: "ticket 9", by: Operator(name: "root", channel: .cli))
        XCTAssertEqual(try ledger.auditEntries().map { "\($0.actor) \($0.action) \($0.subject) \($0.outcome)" },
                       ["root retry o-old ok"])
    }

    func testLedgerCopy_carriesTheAuditLog_andPostgreSQLNumbersTheNextEntryAfterIt() throws {
        let world = try TestWorld()
        let path = world.folder + "/audited.sqlite3"
        let source = try SQLiteLedger(path: path, time: world.time)
        _ = try source.enqueue(NewOrder(orderId: "o-1", userId: "u-1", productId: world.coins, transactionId: "1",
                                        receipt: world.receipt("o-1")))
        let alice = Operator(name: "alice", channel: .web, role: .support, source: "192.0.2.5")
        try source.recordAudit(AuditEntry(alice, action: "sign_in", subject: "alice"))
        try source.recordAudit(AuditEntry(alice, action: "retry", subject: "o-1", detail: "needs role admin",
                                          outcome: .refused))
        let before = try source.auditEntries()
        try source.close()
        let fresh = try TestPostgres.freshSchema()
        defer { TestPostgres.drop(schema: fresh.schema) }
        let destination = try PostgresLedger(url: fresh.url, time: world.time)
        let report = try LedgerCopy.copy(fromSQLite: path, to: destination)
        XCTAssertTrue(report.counts.contains { $0 == ("audit_log", 2) }, "\(report.counts)")
        XCTAssertEqual(try destination.auditEntries(), before, "every field, the ids too")
        try destination.recordAudit(AuditEntry(Operator(name: "root", channel: .cli), action: "sign_in"))
        XCTAssertEqual(try destination.auditEntries().first?.id, (before.first?.id ?? 0) + 1)
    }
}
