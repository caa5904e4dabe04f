import Foundation
import SettleCore
import SettleTesting
import XCTest

/// The `settle` binary on a PostgreSQL ledger: configuration, migrate, enqueue, reconcile,
/// status, and two daemons sharing the work.
final class PostgresLedgerTests: EndToEndTestCase {
    var schema = ""
    var url = ""
    var daemons: [SettleBinary.Running] = []

    override func setUpWithError() throws {
        try super.setUpWithError()
        let fresh = try TestPostgres.freshSchema()
        (url, schema) = (fresh.url, fresh.schema)
        try world.writeConfig(schedule: [("interval_seconds", .number(1))], overrides: [("ledger", .string(url))])
    }

    override func tearDownWithError() throws {
        for daemon in daemons {
            daemon.send(SIGTERM)
            _ = daemon.wait()
        }
        TestPostgres.drop(schema: schema)
        try super.tearDownWithError()
    }

    func testMigrateDryRun_thenMigrate_thenEnqueueReconcileAndStatus_allOnPostgreSQL() throws {
        let plan = try settle(expecting: 0, ["migrate", "--dry-run"])
        XCTAssertTrue(plan.stdout.contains("is at schema 0; settle migrate would apply migration 1"), plan.stdout)
        XCTAssertTrue(try settle(expecting: 0, ["migrate"]).stdout.contains("from schema 0 to 1"))
        XCTAssertTrue(try settle(expecting: 0, ["migrate", "--dry-run"]).stdout.contains("nothing to do"))
        try enqueue("o-1", transaction: "100", receipt: world.scriptReceipt("o-1", [purchase("100")]))
        try enqueue("o-2", transaction: "100", receipt: world.scriptReceipt("o-2", [purchase("100")]))
        try settle(expecting: 0, ["reconcile"])
        XCTAssertEqual(world.deliveries, ["100 o-1"], "one purchase, granted once")
        let payload = try String(contentsOfFile: world.folder + "/payload-o-1.json", encoding: .utf8)
        XCTAssertTrue(payload.contains("\"fencing_token\""), payload)
        let status = try settle(expecting: 0, ["status", "--json"])
        XCTAssertTrue(status.stdout.contains("\"workers\""), status.stdout)
        XCTAssertTrue(try settle(expecting: 0, ["status", "o-2"]).stdout.contains("already_granted"))
        XCTAssertFalse(transcript.joined().contains(world.sharedSecret))
    }

    func testLedgerObject_withAPasswordFileReadableByOthers_isRefusedLikeAnySecret() throws {
        _ = try world.write("pg-password", "not-used\n", mode: 0o644)
        try world.writeConfig(overrides: [("ledger", .object([("url", .string(url)), ("password_file", .string("pg-password"))]))])
        let result = try settle(["check-config"])
        XCTAssertEqual(result.status, 78, result.stderr)
        XCTAssertTrue(result.stderr.contains("ledger.password_file"), result.stderr)
    }

    func testTwoDaemonsOnOneLedger_shareTheWork_andGrantEachPurchaseOnce_andStatusListsBoth() throws {
        try settle(expecting: 0, ["migrate"])
        for i in 0..<40 {
            try enqueue("o-\(i)", transaction: "t-\(i % 20)", receipt: world.scriptReceipt("o-\(i)", [purchase("t-\(i % 20)")]))
        }
        for _ in 0..<2 {
            daemons.append(try SettleBinary.start(["run", "--config", world.configPath], outputFolder: world.folder))
        }
        XCTAssertTrue(eventually(within: 60) {
            let summary = try? PostgresLedger(url: url, access: .readOnly).summary(OrderFilter(limit: 0))
            return (summary?.counts[.finished] ?? 0) + (summary?.counts[.rejected] ?? 0) == 40
        }, "every order settled")
        XCTAssertEqual(world.deliveries.count, 20)
        XCTAssertEqual(Set(world.deliveries.map { $0.split(separator: " ")[0] }).count, 20, "no purchase granted twice")
        XCTAssertTrue(eventually(within: 10) {
            ((try? settle(["status"]))?.stdout ?? "").contains("workers: 2 live")
        }, (try? settle(["status"]))?.stdout ?? "")
    }
}
