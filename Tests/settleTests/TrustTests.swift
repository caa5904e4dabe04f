import Foundation
import SettleApp
import SettleTesting
import XCTest
import SettleLedger
import SettleAppStoreSimulator

/// Issue 7 through the built binary: orders are never lost to races, long receipts or bad rows,
/// and purchases granted outside settle are recorded and skipped.
final class TrustTests: EndToEndTestCase {
    // MARK: - Races between processes

    func testTwoReconcileProcessesAtOnce_over24OrdersSharingOneReceipt_finishAllWith24DistinctKeys() throws {
        try world.writeConfig(schedule: [("concurrency", .number(8))])
        let transactions = (0..<24).map {
            SimulatedTransaction(productId: world.coins, transactionId: String(2_000_000_730_000_000 + $0), purchaseDateMs: Int64(1000 + $0))
        }
        let receipt = world.scriptReceipt("shared", transactions)
        for i in 0..<24 { try enqueue("o-\(i)", receipt: receipt) }
        let config = ["--config", world.configPath]
        let first = try SettleBinary.start(["reconcile"] + config, outputFolder: world.folder)
        let second = try SettleBinary.start(["reconcile"] + config, outputFolder: world.folder)
        let results = [first.wait(), second.wait()]
        XCTAssertEqual(results.map(\.status), [0, 0], results.map(\.stderr).joined(separator: "\n"))
        let keys = world.deliveries.map { String($0.split(separator: " ")[0]) }
        XCTAssertEqual(keys.count, 24, "\(world.deliveries)")
        XCTAssertEqual(Set(keys).count, 24)
        for i in 0..<24 { XCTAssertEqual(try state("o-\(i)"), "finished") }
        XCTAssertFalse(results.contains { $0.stdout.contains("rejected") && !$0.stdout.contains("0 rejected") }, "a race never rejects")
    }

    // MARK: - Grants made outside settle

    func testGrantRecorded_makesAnOrderNamingThatTransactionFinishAsAlreadyDelivered_withoutCallingTheHook() throws {
        try settle(expecting: 0, ["grant-recorded", "--transaction", "2000000000000777", "--note", "granted by the shop"])
        let again = try settle(expecting: 0, ["grant-recorded", "--transaction", "2000000000000777"])
        XCTAssertTrue(again.stdout.contains("already recorded"), again.stdout)
        try enqueueValid("o-1", transaction: "2000000000000777")
        try settle(expecting: 0, ["reconcile"])
        XCTAssertEqual(try state("o-1"), "finished")
        XCTAssertEqual(try order("o-1")["reason"], .string("already_delivered"))
        XCTAssertTrue(world.deliveries.isEmpty)
    }

    func testGrantRecorded_ofATransactionSettleGranted_exits65NamingTheOrder() throws {
        try enqueueValid("o-1", transaction: "2000000000000778")
        try settle(expecting: 0, ["reconcile"])
        let result = try settle(["grant-recorded", "--transaction", "2000000000000778"])
        XCTAssertEqual(result.status, 65)
        XCTAssertTrue(result.stderr.contains("order o-1"), result.stderr)
    }

    func testGrantRecorded_ofANonConsumable_needsItsOriginalTransaction() throws {
        let result = try settle(["grant-recorded", "--transaction", "900", "--product", world.premium])
        XCTAssertEqual(result.status, 64, result.stderr)
        try settle(expecting: 0, ["grant-recorded", "--transaction", "900", "--product", world.premium, "--original-transaction", "100"])
        // The original purchase is now taken: an order for it (or any restore of it) is not delivered.
        try enqueueValid("o-1", transaction: "100", product: world.premium)
        try settle(expecting: 0, ["reconcile"])
        XCTAssertEqual(try order("o-1")["reason"], .string("already_delivered"))
    }

    // MARK: - The Apple root

    func testMissingAppleRoot_isAConfigurationFault_checkConfigFails_andOrdersAreUntouched() throws {
        try enqueueValid("o-1", transaction: "2000000000000801")
        try FileManager.default.removeItem(atPath: world.folder + "/AppleRootCA-G3.pem")
        let check = try settle(["check-config"])
        XCTAssertEqual(check.status, 78)
        XCTAssertTrue(check.stderr.contains("AppleRootCA-G3.pem"), check.stderr)
        XCTAssertEqual(try settle(["reconcile"]).status, 78)
        XCTAssertEqual(try state("o-1"), "pending")
        XCTAssertEqual(try attempts("o-1"), 0)
        XCTAssertTrue(world.deliveries.isEmpty)
    }

    // MARK: - Rows a backend wrote badly

    func testBadRows_goToNeedsAttentionWithAReason_andThePassGoesOn() throws {
        try enqueueValid("o-good", transaction: "2000000000000901")
        let db = try SQLiteDatabase(path: world.ledgerPath, mode: .readWrite)
        // Foreign keys off, as a backend's own connection may have them.
        try db.execute("""
            INSERT INTO orders(order_id, user_id, product_id, transaction_id) VALUES (x'6f2d626c6f62', 'u', '\(world.coins)', '2000000000000902');
            INSERT INTO orders(order_id, user_id, product_id, receipt_sha256) VALUES ('o-no-receipt', 'u', '\(world.coins)', '\(String(repeating: "a", count: 64))');
            INSERT INTO receipts(sha256, data) VALUES ('\(String(repeating: "b", count: 64))', 'dGFtcGVyZWQ=');
            INSERT INTO orders(order_id, user_id, product_id, receipt_sha256) VALUES ('o-wrong-hash', 'u', '\(world.coins)', '\(String(repeating: "b", count: 64))');
            INSERT INTO orders(order_id, user_id, product_id, transaction_id) VALUES ('o-bare-id', 'u', '\(world.coins)', '2000000000000903');
            """)
        try db.close()
        let result = try settle(["reconcile"])
        XCTAssertEqual(result.status, 0, result.stderr)
        XCTAssertEqual(try state("o-good"), "finished")
        for (id, reason) in [("o-no-receipt", "proof_missing"), ("o-wrong-hash", "proof_missing"), ("o-bare-id", "server_api_required")] {
            XCTAssertEqual(try state(id), "needs_attention", id)
            XCTAssertEqual(try order(id)["reason"], .string(reason), id)
            XCTAssertEqual(try attempts(id), 0, "\(id): at once, no attempts burnt")
        }
        let reader = try SQLiteDatabase(path: world.ledgerPath, mode: .readOnly)
        let blob = try reader.query("SELECT state, reason FROM orders WHERE typeof(order_id) = 'blob'")
        XCTAssertEqual(blob.first?.string("state"), "needs_attention")
        XCTAssertEqual(blob.first?.string("reason"), "row_invalid")
        XCTAssertTrue(result.stderr.contains("row_invalid"), result.stderr)
    }
}
