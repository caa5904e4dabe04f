import Foundation
import SettleApp
import XCTest
#if canImport(Glibc)
import Glibc
#endif

/// Nothing secret is ever printed, logged, stored or handed to the hook (SPEC sections 2, 6).
final class SecretTests: EndToEndTestCase {
    func testTheSharedSecret_neverAppearsInAnyOutputTheLedgerOrTheHooksInput() throws {
        // The hook dumps its environment and standard input where the test can search them.
        try world.hook("grant.sh", exit: 0, extra: #"env > "\#(world.folder)/hook-env-$SETTLE_ORDER_ID.txt""#)
        try enqueueValid("valid", transaction: "2000000000000001", user: "u-1")
        let sandbox = world.scriptReceipt("valid-sandbox", environment: "Sandbox", [purchase("2000000000000002")])
        try enqueue("valid-sandbox", user: "u-2", receipt: sandbox)
        try enqueueForged("forged", user: "u-3")
        let refunded = world.scriptReceipt("refunded", [purchase("2000000000000003", cancelled: true)])
        try enqueue("refunded", user: "u-4", transaction: "2000000000000003", receipt: refunded)
        try enqueueValid("outage", transaction: "2000000000000004", user: "u-5", answers: [.http(503)])
        let stdinReceipt = world.scriptReceipt("stdin", [purchase("2000000000000005")])
        XCTAssertEqual(try settle(["enqueue", "--order", "stdin", "--user", "u-6", "--product", world.coins,
                                   "--receipt-file", "-"], stdin: Data(stdinReceipt.utf8)).status, 0)

        try settle(expecting: 0, ["check-config"])
        try settle(expecting: 0, ["reconcile"])
        XCTAssertEqual(try state("outage"), "pending", "Apple was unavailable for this one")
        try settle(expecting: 0, ["reconcile", "--dry-run", "--order", "outage"])
        try settle(expecting: 0, ["reconcile", "--order", "outage"])
        try settle(expecting: 0, ["retry", "forged", "--note", "second look"])
        try settle(expecting: 0, ["reconcile", "--order", "forged"])
        try settle(expecting: 0, ["status"])
        try settle(expecting: 0, ["status", "--json"])
        for id in ["valid", "valid-sandbox", "forged", "refunded", "outage", "stdin"] {
            try settle(expecting: 0, ["status", id])
            try settle(expecting: 0, ["status", id, "--json"])
        }
        _ = try settle(["check-config"], environment: ["JOURNAL_STREAM": "8:1234"])
        // Failures print too: a wrong call, an unknown order, a finished order retried, a readable secret file.
        XCTAssertEqual(try settle(["status", "--bogus"]).status, 64)
        XCTAssertEqual(try settle(["retry", "valid"]).status, 65)
        XCTAssertEqual(try settle(["reconcile", "--order", "o-404"]).status, 65)
        let secretPath = world.folder + "/shared-secret"
        XCTAssertEqual(chmod(secretPath, 0o644), 0)
        XCTAssertEqual(try settle(["reconcile"]).status, 78)
        XCTAssertEqual(try settle(["check-config"]).status, 78)
        XCTAssertEqual(chmod(secretPath, 0o600), 0)

        // The scenario really covered every kind of order.
        let counts = try statusJSON()["counts"]
        XCTAssertEqual(counts?["finished"], .number(4))
        XCTAssertEqual(counts?["rejected"], .number(2))
        XCTAssertFalse(world.simulator.requests.isEmpty)
        XCTAssertTrue(world.simulator.requests.allSatisfy(\.passwordMatched), "settle did send the secret to Apple")

        // 1. Everything any command printed.
        XCTAssertGreaterThan(transcript.count, 40)
        for (index, text) in transcript.enumerated() {
            XCTAssertFalse(text.contains(world.sharedSecret), "command output #\(index) contains the shared secret:\n\(text)")
        }

        // 2. Every text column of every table of the ledger.
        let rows = try ledgerRows()
        XCTAssertEqual(Set(rows.keys).isSuperset(of: ["orders", "history", "grants", "receipts"]), true)
        for (table, tableRows) in rows {
            for row in tableRows {
                XCTAssertFalse(row.contains(world.sharedSecret), "table \(table) holds the shared secret: \(row)")
            }
        }

        // 3. The raw bytes of the ledger files, free pages and WAL included.
        let secret = Data(world.sharedSecret.utf8)
        for suffix in ["", "-wal", "-shm", "-journal"] {
            guard let data = bytes(world.ledgerPath + suffix) else { continue }
            XCTAssertNil(data.range(of: secret), "ledger\(suffix) contains the shared secret")
        }

        // 4. What the hook was given: its environment and its standard input.
        let files = try FileManager.default.contentsOfDirectory(atPath: world.folder)
            .filter { $0.hasPrefix("hook-env-") || $0.hasPrefix("payload-") }
        XCTAssertGreaterThanOrEqual(files.filter { $0.hasPrefix("hook-env-") }.count, 4, "the hook ran for every granted order")
        for name in files {
            let data = try XCTUnwrap(bytes(world.folder + "/" + name))
            XCTAssertNil(data.range(of: secret), "\(name) contains the shared secret")
        }
    }
}
