import Foundation
import SettleApp
import SettleTesting
import XCTest
import SettleBase
import SettleLedger

/// The ledger and the operator's commands against rows and mistakes that would give goods
/// away or stop every order (issue 14), through the built binary on an SQLite ledger.
final class LedgerTrustTests: EndToEndTestCase {
    /// Runs SQL on the ledger as a backend may (the README lets backends write rows directly).
    func backendSQL(_ sql: String) throws {
        let database = try SQLiteDatabase(path: world.ledgerPath, mode: .readWrite)
        defer { try? database.close() }
        try database.execute(sql)
    }

    func testRetryOfAnUnknownOrder_withoutALedger_createsNone_andSaysSo() throws {
        XCTAssertFalse(FileManager.default.fileExists(atPath: world.ledgerPath))
        for arguments in [["retry", "UNKNOWN"], ["resolve", "UNKNOWN", "--as", "wont_grant", "--note", "x"], ["assign", "UNKNOWN", "--user", "u"]] {
            let result = try settle(arguments)
            XCTAssertEqual(result.status, 74, "\(arguments): \(result.stderr)")
            XCTAssertTrue(result.stderr.contains("no ledger at \(world.ledgerPath)"), result.stderr)
        }
        XCTAssertFalse(FileManager.default.fileExists(atPath: world.ledgerPath), "no empty ledger left behind")
    }

    func testABackendRowWithAnEmptyUser_isNeverDelivered_retryPointsToAssign_andAssignDeliversIt() throws {
        let receipt = world.scriptReceipt("o-1", [purchase("2000000000000071")])
        try enqueue("seed", transaction: "2000000000000070", receipt: world.scriptReceipt("seed", [purchase("2000000000000070")]))
        try backendSQL("""
            INSERT INTO receipts(sha256, data) VALUES ('\(SHA256.hex(Data(receipt.utf8)))', '\(receipt)');
            INSERT INTO orders(order_id, user_id, product_id, transaction_id, receipt_sha256)
            VALUES ('o-1', '', '\(world.coins)', '2000000000000071', '\(SHA256.hex(Data(receipt.utf8)))');
            """)
        try settle(expecting: 0, ["reconcile"])
        XCTAssertEqual(world.deliveries, ["2000000000000070 seed"], "nothing delivered to an empty user")
        let stuck = try order("o-1")
        XCTAssertEqual(stuck["state"], .string("needs_attention"))
        XCTAssertEqual(stuck["reason"], .string("unclaimed_purchase"))
        XCTAssertTrue(try settle(expecting: 0, ["status", "o-1"]).stdout.contains("find the buyer, then settle assign o-1 --user USER_ID"))

        let retry = try settle(["retry", "o-1", "--note", "please"])
        XCTAssertEqual(retry.status, 65, retry.stderr)
        XCTAssertTrue(retry.stderr.contains("settle assign o-1 --user USER_ID"), retry.stderr)
        XCTAssertEqual(try state("o-1"), "needs_attention")

        try settle(expecting: 0, ["assign", "o-1", "--user", "u-42", "--note", "ticket 9"])
        try settle(expecting: 0, ["reconcile"])
        XCTAssertEqual(try state("o-1"), "finished")
        let payload = try JSONValue.parse(try Data(contentsOf: URL(fileURLWithPath: world.folder + "/payload-o-1.json")))
        XCTAssertEqual(payload["user_id"], .string("u-42"))
    }

    func testResolveGrantedByHand_thenTheSamePurchaseUploadedAgain_isNeverDelivered() throws {
        // The first upload is unreadable to Apple; support believes the customer and grants by hand.
        world.simulator.script(world.receipt("o-1"), .forged)
        try enqueue("o-1", transaction: "2000000000000081", receipt: world.receipt("o-1"))
        try settle(expecting: 0, ["reconcile"])
        XCTAssertEqual(try state("o-1"), "rejected")
        let resolved = try settle(expecting: 0, ["resolve", "o-1", "--as", "granted_by_hand", "--note", "coins by hand, ticket 5"])
        XCTAssertTrue(resolved.stdout.contains("resolved o-1: rejected (granted_by_hand)"), resolved.stdout)
        // The app uploads the same purchase again, now readable.
        try enqueueValid("o-2", transaction: "2000000000000081")
        try settle(expecting: 0, ["reconcile"])
        XCTAssertEqual(try state("o-2"), "finished")
        XCTAssertEqual(try order("o-2")["reason"], .string("already_delivered"))
        XCTAssertEqual(world.deliveries, [], "granted once, by hand")
    }

    func testTextOrderIdsWithANulOrInvalidUTF8_areQuarantinedByRowid_andEveryLaterPassSucceeds() throws {
        try enqueueValid("good", transaction: "2000000000000091")
        // Text values the way the README lets a backend write them, read back as other strings.
        try backendSQL("""
            INSERT INTO orders(order_id, user_id, product_id, transaction_id) VALUES ('a' || char(0) || 'hidden', 'u-1', '\(world.coins)', '2000000000000092');
            INSERT INTO orders(order_id, user_id, product_id, transaction_id) VALUES (CAST(X'62ff6164' AS TEXT), 'u-1', '\(world.coins)', '2000000000000093');
            INSERT INTO orders(order_id, user_id, product_id, transaction_id) VALUES ('victim' || char(0) || 'x', 'u' || char(0) || 'other', '\(world.coins)', '2000000000000094');
            """)
        for _ in 0..<3 {
            let pass = try settle(["reconcile"])
            XCTAssertEqual(pass.status, 0, pass.stderr)
            world.time.advance(by: 3600)
        }
        XCTAssertEqual(try state("good"), "finished")
        let database = try SQLiteDatabase(path: world.ledgerPath, mode: .readOnly)
        defer { try? database.close() }
        let rows = try database.query("""
            SELECT rowid, state, reason, last_error FROM orders WHERE order_id != 'good' ORDER BY rowid
            """)
        XCTAssertEqual(rows.count, 3)
        for row in rows {
            XCTAssertEqual(row.string("state"), "needs_attention")
            XCTAssertEqual(row.string("reason"), "row_invalid")
            XCTAssertTrue(row.string("last_error")?.contains("text with a NUL or bytes that are not UTF-8") == true, row.string("last_error") ?? "")
        }
        XCTAssertEqual(world.deliveries, ["2000000000000091 good"])
    }

    func testCheckConfig_printsNoPasswordOfAPostgreSQLURL_norAWebhooksCredentials() throws {
        let urls = ["postgresql://settle@db1.internal:5432,db2.internal:5433/settle?password=s3cr3t-query&sslmode=verify-full",
                    "postgresql://settle:s3cr3t-userinfo@db1.internal,db2.internal/settle",
                    "postgres://settle:s3cr3t-%2Fencoded@[::1]:5432/settle?application_name=x"]
        try world.write("hook-secret", "hmac-key-0123456789", mode: 0o600)
        for url in urls {
            try world.writeConfig(overrides: [
                ("ledger", .string(url)),
                ("delivery", .object([("webhook", .object([("url", .string("https://grant:s3cr3t-webhook@hooks.example.com/grant?token=s3cr3t-token")),
                                                           ("secret_file", .string("hook-secret"))]))])),
            ])
            let result = try settle(expecting: 0, ["check-config"])
            let output = result.stdout + result.stderr
            XCTAssertFalse(output.contains("s3cr3t"), output)
            XCTAssertTrue(output.contains("postgresql://settle@"), output)
            XCTAssertTrue(output.contains("delivery.webhook: https://<redacted>@hooks.example.com/grant?<redacted>"), output)
        }
    }
}
