import Foundation
import SettleApp
import XCTest

/// `settle status`: the support view of the ledger, as JSON with a fixed shape or as text;
/// read-only (SPEC sections 1, 6).
final class StatusTests: EndToEndTestCase {
    static let states = ["pending", "verifying", "delivering", "finished", "rejected", "needs_attention"]
    static let orderKeys = ["order_id", "user_id", "product_id", "state", "transaction_id", "environment", "attempts",
                            "next_attempt_at", "reason", "last_error", "created_at", "updated_at", "finished_at"]
    static let historyKeys = ["at", "kind", "outcome", "apple_status", "hook_exit", "environment", "duration_ms"]

    /// o-1, o-2 finished (u-1, u-2), o-3 rejected (u-1), o-4 needs attention (u-3), o-5 pending (u-2).
    func makeLedgerWithEveryFinalState() throws {
        try world.hook("grant.sh", exit: 0, extra: #"[ "$SETTLE_ORDER_ID" = o-4 ] && exit 65"#)
        try enqueueValid("o-1", transaction: "2000000000000001", user: "u-1")
        try enqueueValid("o-2", transaction: "2000000000000002", user: "u-2", product: world.premium, withTransactionId: false)
        try enqueueForged("o-3", user: "u-1")
        try enqueueValid("o-4", transaction: "2000000000000004", user: "u-3")
        try settle(expecting: 0, ["reconcile"])
        try enqueueValid("o-5", transaction: "2000000000000005", user: "u-2")
    }

    func testStatusJSON_topLevelHasCountsOldestUndeliveredAppleDaemonAndOrders() throws {
        try makeLedgerWithEveryFinalState()
        let status = try statusJSON()
        XCTAssertEqual(status.objectMembers?.map(\.0), ["counts", "oldest_undelivered_seconds", "apple", "health", "daemon", "matching", "orders",
                                                         "stores", "google_play", "one_store", "support_actions_waiting", "apple_finishes_refused", "pacer",
                                                         "hook", "revenue", "refunders"])
        XCTAssertEqual(status["apple_finishes_refused"], .number(0))
        XCTAssertEqual(status["stores"]?["app_store"]?["finished"], status["counts"]?["finished"])
        XCTAssertEqual(status["stores"]?["google_play"]?["finished"], .number(0))
        XCTAssertEqual(status["apple"], .object([("breaker", .string("closed")), ("retry_at", .null), ("last_error", .null),
                                                 ("last_error_at", .null)]))
        XCTAssertEqual(status["matching"], .number(5))
        XCTAssertEqual(status["daemon"], .null, "no daemon runs")
    }

    func testStatusJSON_countsAndOrderObjectsHaveTheSpecifiedShape() throws {
        try makeLedgerWithEveryFinalState()
        let status = try statusJSON()
        for key in ["counts", "oldest_undelivered_seconds", "orders"] {
            XCTAssertNotNil(status[key], "status --json has no \(key)")
        }

        let counts = try XCTUnwrap(status["counts"])
        XCTAssertEqual(counts.objectMembers?.map(\.0).sorted(), Self.states.sorted())
        XCTAssertEqual(counts["pending"], .number(1))
        XCTAssertEqual(counts["verifying"], .number(0))
        XCTAssertEqual(counts["delivering"], .number(0))
        XCTAssertEqual(counts["finished"], .number(2))
        XCTAssertEqual(counts["rejected"], .number(1))
        XCTAssertEqual(counts["needs_attention"], .number(1))

        guard case let .number(oldest)? = status["oldest_undelivered_seconds"], let seconds = Int(oldest) else {
            return XCTFail("oldest_undelivered_seconds is \(String(describing: status["oldest_undelivered_seconds"]))")
        }
        XCTAssertGreaterThanOrEqual(seconds, 0)
        XCTAssertLessThan(seconds, 3600)

        let orders = try XCTUnwrap(status["orders"]?.arrayValue)
        XCTAssertEqual(orders.compactMap { $0["order_id"]?.looseString }.sorted(), ["o-1", "o-2", "o-3", "o-4", "o-5"])
        for order in orders {
            let id = order["order_id"]?.looseString ?? "?"
            let keys = Set(order.objectMembers?.map(\.0) ?? [])
            for key in Self.orderKeys {
                XCTAssertTrue(keys.contains(key), "\(id) has no \(key)")
            }
            XCTAssertNil(order["history"], "the list does not carry histories")
            assertTime(order["created_at"], nullable: false, "\(id).created_at")
            assertTime(order["updated_at"], nullable: false, "\(id).updated_at")
            let state = order["state"]?.looseString
            assertTime(order["finished_at"], nullable: state != "finished", "\(id).finished_at")
            if state != "finished" { XCTAssertEqual(order["finished_at"], .null, "\(id) is not finished") }
            assertTime(order["next_attempt_at"], nullable: state != "pending", "\(id).next_attempt_at")
            guard case .number? = order["attempts"] else { return XCTFail("\(id).attempts is not a number") }
        }
        let byId = Dictionary(uniqueKeysWithValues: orders.map { ($0["order_id"]?.looseString ?? "", $0) })
        XCTAssertEqual(byId["o-2"]?["transaction_id"], .string("2000000000000002"), "Apple's transaction, once verified")
        XCTAssertEqual(byId["o-3"]?["reason"], .string("receipt_invalid"))
        XCTAssertEqual(byId["o-4"]?["reason"], .string("hook_refused"))
        XCTAssertNotEqual(byId["o-4"]?["last_error"], .null)
        XCTAssertEqual(byId["o-5"]?["transaction_id"], .string("2000000000000005"))
        XCTAssertEqual(byId["o-5"]?["environment"], .null, "not verified yet")
        XCTAssertEqual(byId["o-1"]?["environment"], .string("Production"))
    }

    func testStatusOfOneOrderJSON_addsItsHistory() throws {
        try makeLedgerWithEveryFinalState()
        let order = try order("o-1")
        for key in Self.orderKeys + ["history"] {
            XCTAssertNotNil(order[key], "o-1 has no \(key)")
        }
        XCTAssertEqual(order["state"], .string("finished"))
        let entries = try XCTUnwrap(order["history"]?.arrayValue)
        XCTAssertGreaterThanOrEqual(entries.count, 3, "enqueue, verification, delivery")
        for (index, entry) in entries.enumerated() {
            let keys = Set(entry.objectMembers?.map(\.0) ?? [])
            for key in Self.historyKeys {
                XCTAssertTrue(keys.contains(key), "history[\(index)] has no \(key)")
            }
            assertTime(entry["at"], nullable: false, "history[\(index)].at")
        }
        XCTAssertEqual(entries.compactMap { $0["kind"]?.looseString }, ["enqueue", "verification", "delivery"])
        guard entries.count >= 3 else { return }
        let verification = entries[1], delivery = entries[2]
        XCTAssertEqual(verification["apple_status"], .number(0))
        XCTAssertEqual(verification["environment"], .string("Production"))
        XCTAssertEqual(verification["hook_exit"], .null)
        guard case .number? = verification["duration_ms"] else { return XCTFail("verification has no duration") }
        XCTAssertEqual(delivery["hook_exit"], .number(0))
        XCTAssertEqual(delivery["apple_status"], .null)
        guard case .number? = delivery["duration_ms"] else { return XCTFail("delivery has no duration") }

        let refused = try history("o-4")
        XCTAssertEqual(refused.last?["kind"], .string("delivery"))
        XCTAssertEqual(refused.last?["hook_exit"], .number(65))
        let rejected = try history("o-3")
        XCTAssertEqual(rejected.last?["kind"], .string("verification"))
        XCTAssertEqual(rejected.last?["apple_status"], .number(21003))
    }

    func testStatusFilters_selectTheRightOrders() throws {
        try makeLedgerWithEveryFinalState()
        XCTAssertEqual(try listedOrderIds(["--state", "finished"]), ["o-1", "o-2"])
        XCTAssertEqual(try listedOrderIds(["--state", "rejected"]), ["o-3"])
        XCTAssertEqual(try listedOrderIds(["--state", "needs_attention"]), ["o-4"])
        XCTAssertEqual(try listedOrderIds(["--state", "pending"]), ["o-5"])
        XCTAssertEqual(try listedOrderIds(["--state", "verifying"]), [])
        XCTAssertEqual(try listedOrderIds(["--user", "u-1"]), ["o-1", "o-3"])
        XCTAssertEqual(try listedOrderIds(["--user", "u-2"]), ["o-2", "o-5"])
        XCTAssertEqual(try listedOrderIds(["--user", "nobody"]), [])
        XCTAssertEqual(try listedOrderIds(["--transaction", "2000000000000001"]), ["o-1"])
        // o-2 was enqueued without a transaction id: found by the one Apple confirmed.
        XCTAssertEqual(try listedOrderIds(["--transaction", "2000000000000002"]), ["o-2"])
        XCTAssertEqual(try listedOrderIds(["--user", "u-2", "--state", "finished"]), ["o-2"])
        XCTAssertEqual(try listedOrderIds(["--limit", "2"]).count, 2)
        XCTAssertEqual(try listedOrderIds(["--limit", "0"]), [])
        // Counts describe the orders asked about: u-1 has one finished and one rejected order.
        XCTAssertEqual(try statusJSON(["--user", "u-1"])["counts"]?["finished"], .number(1))
        XCTAssertEqual(try statusJSON(["--user", "u-1"])["counts"]?["rejected"], .number(1))
        XCTAssertEqual(try statusJSON([])["counts"]?["finished"], .number(2))

        let wrongState = try settle(["status", "--state", "done"])
        XCTAssertEqual(wrongState.status, 64, wrongState.stderr)
        let wrongLimit = try settle(["status", "--limit", "many"])
        XCTAssertEqual(wrongLimit.status, 64, wrongLimit.stderr)
    }

    func testStatusOfAnUnknownOrder_exits65() throws {
        try makeLedgerWithEveryFinalState()
        for arguments in [["status", "o-404"], ["status", "o-404", "--json"]] {
            let result = try settle(arguments)
            XCTAssertEqual(result.status, 65, result.stderr)
            XCTAssertTrue(result.stderr.contains("o-404"), result.stderr)
            XCTAssertEqual(result.stdout, "")
        }
    }

    func testStatusText_listsTheOrdersForAPerson() throws {
        try makeLedgerWithEveryFinalState()
        let result = try settle(expecting: 0, ["status"])
        for needle in ["finished 2", "rejected 1", "needs_attention 1", "pending 1", "oldest undelivered"] {
            XCTAssertTrue(result.stdout.contains(needle), "no '\(needle)' in:\n\(result.stdout)")
        }
        let row = try XCTUnwrap(lines(result.stdout).first { $0.hasPrefix("o-3 ") }, "o-3 is not listed:\n\(result.stdout)")
        XCTAssertTrue(row.contains("rejected") && row.contains("receipt_invalid") && row.contains("u-1"), row)

        let one = try settle(expecting: 0, ["status", "o-1"])
        for needle in ["o-1", "finished", "2000000000000001", "history", "verification", "delivery"] {
            XCTAssertTrue(one.stdout.contains(needle), "no '\(needle)' in:\n\(one.stdout)")
        }
    }

    func testStatus_whenTheLedgerDoesNotExist_exits74AndDoesNotCreateIt() throws {
        let result = try settle(["status"])
        XCTAssertEqual(result.status, 74, "stdout: \(result.stdout)\nstderr: \(result.stderr)")
        XCTAssertTrue(result.stderr.contains(world.ledgerPath), result.stderr)
        for suffix in ["", "-wal", "-shm", "-journal"] {
            XCTAssertFalse(FileManager.default.fileExists(atPath: world.ledgerPath + suffix), "status created ledger\(suffix)")
        }
        XCTAssertEqual(try settle(["status", "o-1", "--json"]).status, 74)
        XCTAssertFalse(FileManager.default.fileExists(atPath: world.ledgerPath))
    }

    /// Every way of calling status, against the world's ledger.
    func runEveryKindOfStatus() throws {
        for arguments in [["status"], ["status", "--json"], ["status", "o-1"], ["status", "o-4", "--json"],
                          ["status", "--state", "pending", "--json"], ["status", "--user", "u-1"], ["status", "o-404"]] {
            _ = try settle(arguments)
        }
    }

    func testStatus_neverChangesTheLedgersContent() throws {
        try makeLedgerWithEveryFinalState()
        func modificationDate(_ path: String) -> Date? {
            (try? FileManager.default.attributesOfItem(atPath: path))?[.modificationDate] as? Date
        }
        let ledgerBefore = try XCTUnwrap(bytes(world.ledgerPath))
        let walBefore = bytes(world.ledgerPath + "-wal")
        let mtimeBefore = modificationDate(world.ledgerPath)
        let rowsBefore = try ledgerRows()

        try runEveryKindOfStatus()

        XCTAssertEqual(bytes(world.ledgerPath), ledgerBefore, "status changed the ledger file")
        XCTAssertEqual(modificationDate(world.ledgerPath), mtimeBefore)
        // Whether or not a -wal file exists afterwards (see the next test), it holds nothing new.
        XCTAssertEqual(bytes(world.ledgerPath + "-wal") ?? Data(), walBefore ?? Data(), "status wrote into the WAL")
        XCTAssertEqual(try ledgerRows(), rowsBefore)
    }

    /// SPEC 1: status "never writes". Creating -wal/-shm files (owned by whoever ran status,
    /// perhaps root) next to an idle daemon's ledger is a write, and can lock the daemon out.
    func testStatus_onAnIdleLedger_createsNoFilesBesideIt() throws {
        try makeLedgerWithEveryFinalState()
        let before = try FileManager.default.contentsOfDirectory(atPath: world.folder).filter { $0.hasPrefix("ledger") }.sorted()

        try runEveryKindOfStatus()

        let after = try FileManager.default.contentsOfDirectory(atPath: world.folder).filter { $0.hasPrefix("ledger") }.sorted()
        XCTAssertEqual(after, before, "settle status created files next to the ledger")
    }
}
