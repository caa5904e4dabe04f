import Foundation
import SettleApp
import XCTest
import SettleLedger

/// `settle enqueue` records a paid order and its proof; it is idempotent for the same content
/// and refuses to change an order (SPEC section 1).
final class EnqueueTests: EndToEndTestCase {
    func testEnqueue_recordsAPendingOrderDueNow() throws {
        try enqueueValid("o-1", transaction: "2000000000000001", user: "u-7")
        let order = try order("o-1")
        XCTAssertEqual(order["state"], .string("pending"))
        XCTAssertEqual(order["user_id"], .string("u-7"))
        XCTAssertEqual(order["product_id"], .string(world.coins))
        XCTAssertEqual(order["transaction_id"], .string("2000000000000001"))
        XCTAssertEqual(order["attempts"], .number(0))
    }

    func testEnqueue_receiptFileThatIsNotBase64_exits65AndRecordsNothing() throws {
        try enqueueValid("o-1", transaction: "2000000000000001")
        let before = try ledgerRows()
        let path = try world.write("not-base64.txt", "this is %%% not base64 at all!\n")
        let result = try settle(["enqueue", "--order", "o-2", "--user", "u-1", "--product", world.coins, "--receipt-file", path])
        XCTAssertEqual(result.status, 65, result.stderr)
        XCTAssertTrue(result.stderr.contains("base64"), result.stderr)
        XCTAssertEqual(try ledgerRows(), before, "a refused enqueue must not write")
        XCTAssertEqual(try settle(["status", "o-2"]).status, 65, "o-2 must not be in the ledger")
    }

    func testEnqueue_sameOrderTwiceWithTheSameContent_exits0AndChangesNothing() throws {
        let receipt = world.scriptReceipt("o-1", [purchase("2000000000000001")])
        try enqueue("o-1", transaction: "2000000000000001", receipt: receipt)
        let before = try ledgerRows()
        let statusBefore = try order("o-1")
        let again = try enqueue("o-1", transaction: "2000000000000001", receipt: receipt)
        XCTAssertTrue(again.stdout.contains("nothing changed"), again.stdout)
        XCTAssertEqual(try ledgerRows(), before, "the second enqueue must be a no-op")
        XCTAssertEqual(try order("o-1"), statusBefore)
        XCTAssertEqual(try history("o-1").count, 1, "one enqueue entry only")
    }

    func testEnqueue_sameOrderIdWithADifferentProduct_exits65AndKeepsTheOriginal() throws {
        let receipt = world.scriptReceipt("o-1", [purchase("2000000000000001")])
        try enqueue("o-1", transaction: "2000000000000001", receipt: receipt)
        let before = try ledgerRows()
        let result = try settle(["enqueue", "--order", "o-1", "--user", "u-1", "--product", world.premium,
                                 "--transaction", "2000000000000001", "--receipt-file", try receiptFile("o-1", receipt)])
        XCTAssertEqual(result.status, 65, result.stderr)
        XCTAssertTrue(result.stderr.contains("o-1"), result.stderr)
        XCTAssertEqual(try ledgerRows(), before)
        XCTAssertEqual(try order("o-1")["product_id"], .string(world.coins))
    }

    func testEnqueue_sameOrderIdWithADifferentReceipt_exits65AndKeepsTheOriginal() throws {
        let receipt = world.scriptReceipt("o-1", [purchase("2000000000000001")])
        try enqueue("o-1", transaction: "2000000000000001", receipt: receipt)
        let before = try ledgerRows()
        let other = world.scriptReceipt("other", [purchase("2000000000000001")])
        let result = try settle(["enqueue", "--order", "o-1", "--user", "u-1", "--product", world.coins,
                                 "--transaction", "2000000000000001", "--receipt-file", try receiptFile("other", other)])
        XCTAssertEqual(result.status, 65, result.stderr)
        XCTAssertEqual(try ledgerRows(), before)
    }

    func testEnqueue_sameOrderIdWithADifferentUser_exits65() throws {
        let receipt = world.scriptReceipt("o-1", [purchase("2000000000000001")])
        try enqueue("o-1", user: "u-1", receipt: receipt)
        let result = try settle(["enqueue", "--order", "o-1", "--user", "u-2", "--product", world.coins,
                                 "--receipt-file", try receiptFile("o-1", receipt)])
        XCTAssertEqual(result.status, 65, result.stderr)
        XCTAssertEqual(try order("o-1")["user_id"], .string("u-1"))
    }

    func testEnqueue_receiptFromStandardInput_isRecordedAndReconciles() throws {
        let receipt = world.scriptReceipt("o-1", [purchase("2000000000000001")])
        let result = try settle(["enqueue", "--order", "o-1", "--user", "u-1", "--product", world.coins, "--receipt-file", "-"],
                                stdin: Data((receipt + "\n").utf8))
        XCTAssertEqual(result.status, 0, result.stderr)
        XCTAssertEqual(try order("o-1")["proof"], .string("receipt"))
        // The stored receipt is exactly what came in: the same content from a file is a no-op,
        XCTAssertTrue(try enqueue("o-1", receipt: receipt).stdout.contains("nothing changed"))
        // and Apple accepts it.
        let pass = try settle(expecting: 0, ["reconcile"])
        XCTAssertEqual(pass.stdout.trimmingCharacters(in: .whitespacesAndNewlines),
                       "reconciled 1: 1 finished, 0 rejected, 0 retrying, 0 needs attention")
        XCTAssertEqual(world.simulator.requests(for: receipt).count, 1)
    }

    func testEnqueue_withoutAnyProofOfPurchase_exits64() throws {
        let result = try settle(["enqueue", "--order", "o-1", "--user", "u-1", "--product", world.coins])
        XCTAssertEqual(result.status, 64, result.stderr)
        XCTAssertTrue(result.stderr.contains("--help"), result.stderr)
        XCTAssertFalse(FileManager.default.fileExists(atPath: world.ledgerPath), "nothing may be written")
    }

    func testEnqueue_withoutARequiredOption_exits64() throws {
        let receipt = try receiptFile("o-1", world.receipt("o-1"))
        for missing in ["--order", "--user", "--product"] {
            var arguments = ["enqueue"]
            for (name, value) in [("--order", "o-1"), ("--user", "u-1"), ("--product", world.coins)] where name != missing {
                arguments += [name, value]
            }
            let result = try settle(arguments + ["--receipt-file", receipt])
            XCTAssertEqual(result.status, 64, "without \(missing): \(result.stderr)")
            XCTAssertTrue(result.stderr.contains(missing), result.stderr)
        }
    }

    func testEnqueue_onlyATransactionId_isAValidProof_whenServerAPIIsConfigured() throws {
        try world.writeConfig(serverAPI: true)
        try enqueue("o-1", transaction: "2000000000000001", receipt: nil)
        XCTAssertEqual(try order("o-1")["proof"], .string("transaction_id"))
    }

    func testEnqueue_onlyATransactionId_withoutServerAPI_isRefused_65() throws {
        let result = try settle(["enqueue", "--order", "o-1", "--user", "u-1", "--product", world.coins,
                                 "--transaction", "2000000000000001"])
        XCTAssertEqual(result.status, 65, result.stderr)
        XCTAssertTrue(result.stderr.contains("server_api"), result.stderr)
        XCTAssertFalse(FileManager.default.fileExists(atPath: world.ledgerPath), "nothing was recorded")
    }

    func testEnqueue_appAccountToken_mustBeAUUID_andIsStoredLowercased() throws {
        try world.writeConfig(serverAPI: true)
        var result = try settle(["enqueue", "--order", "o-1", "--user", "u-1", "--product", world.coins,
                                 "--transaction", "2000000000000001", "--app-account-token", "not-a-uuid"])
        XCTAssertEqual(result.status, 65, result.stderr)
        result = try settle(["enqueue", "--order", "o-1", "--user", "u-1", "--product", world.coins,
                             "--transaction", "2000000000000001", "--app-account-token", "6F1E4C2A-5B3D-4E8F-9A0B-1C2D3E4F5A6B"])
        XCTAssertEqual(result.status, 0, result.stderr)
        let ledger = try SQLiteLedger(readOnlyPath: world.ledgerPath)
        XCTAssertEqual(try ledger.orderRecord("o-1")?.order.appAccountToken, "6f1e4c2a-5b3d-4e8f-9a0b-1c2d3e4f5a6b")
    }

    func testEnqueue_whileAnotherProcessHoldsTheLedgersWriteLockPastTheBusyTimeout_exits75SayingTheLedgerIsBusy() throws {
        try world.writeConfig(serverAPI: true)
        try enqueue("o-1", transaction: "2000000000000001", receipt: nil)
        let holder = try SQLiteDatabase(path: world.ledgerPath, mode: .readWrite)
        try holder.execute("BEGIN IMMEDIATE")
        defer {
            try? holder.execute("ROLLBACK")
            try? holder.close()
        }
        let result = try settle(["enqueue", "--order", "o-2", "--user", "u-1", "--product", world.coins,
                                 "--transaction", "2000000000000002"])
        XCTAssertEqual(result.status, 75, "stdout: \(result.stdout)\nstderr: \(result.stderr)")
        XCTAssertTrue(result.stderr.contains("the ledger is busy"), result.stderr)
    }
}
