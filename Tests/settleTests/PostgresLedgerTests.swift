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
        // Both orders name the one purchase; workers race for it and exactly one wins.
        XCTAssertEqual(world.deliveries.count, 1, "one purchase, granted once")
        let (winner, loser) = world.deliveries.first == "100 o-1" ? ("o-1", "o-2") : ("o-2", "o-1")
        let payload = try String(contentsOfFile: world.folder + "/payload-\(winner).json", encoding: .utf8)
        XCTAssertTrue(payload.contains("\"fencing_token\""), payload)
        let status = try settle(expecting: 0, ["status", "--json"])
        XCTAssertTrue(status.stdout.contains("\"workers\""), status.stdout)
        XCTAssertTrue(try settle(expecting: 0, ["status", loser]).stdout.contains("already_granted"))
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

    func testLedgerCopy_movesASQLiteLedgerIntoPostgreSQL_withMatchingCounts_andSettleCarriesOnThere() throws {
        let sqlite = try world.ledger()
        for i in 0..<3 {
            _ = try sqlite.enqueue(NewOrder(orderId: "o-\(i)", userId: "u-1", productId: world.coins, transactionId: "t-\(i)",
                                            receipt: world.scriptReceipt("o-\(i)", [purchase("t-\(i)")])))
        }
        _ = try world.reconciler(ledger: sqlite).runPass()
        XCTAssertEqual(try sqlite.recordOutsideGrant(transactionId: "t-9", grantKey: "t-9", note: "by hand"), .recorded)
        _ = try sqlite.enqueue(NewOrder(orderId: "o-late", userId: "u-1", productId: world.coins, transactionId: "t-late",
                                        receipt: world.scriptReceipt("o-late", [purchase("t-late")])))
        try sqlite.close()
        let copy = try settleWithoutConfig(["ledger", "copy", "--from", "sqlite:" + world.ledgerPath, "--to", url])
        XCTAssertEqual(copy.status, 0, copy.stderr)
        XCTAssertTrue(copy.stdout.contains("orders: 4 rows copied, counts match"), copy.stdout)
        XCTAssertTrue(copy.stdout.contains("grants: 4 rows copied"), copy.stdout)
        XCTAssertEqual(try settleWithoutConfig(["ledger", "copy", "--from", "sqlite:" + world.ledgerPath, "--to", url]).status, 65,
                       "a second copy into a ledger with orders is refused")
        try settle(expecting: 0, ["reconcile"])
        let ledger = try PostgresLedger(url: url, access: .readOnly)
        XCTAssertEqual(try ledger.summary(OrderFilter(limit: 0)).counts[.finished], 4)
        XCTAssertEqual(try ledger.orderRecord("o-0")?.history.map(\.outcome), ["enqueued", "verified", "delivered"])
        XCTAssertEqual(try ledger.grantHolder(of: VerifiedPurchase(transactionId: "t-9", originalTransactionId: "t-9", productId: "",
                                                                   environment: "", quantity: 1, purchaseDateMs: nil, expiresDateMs: nil)),
                       .outside(note: "by hand"))
    }
}
