import Foundation
import SettleApp
import XCTest

/// `settle retry` hands rejected and needs_attention orders back to the machine, and nothing
/// else (SPEC section 1).
final class RetryTests: EndToEndTestCase {
    func testRetry_aRejectedOrder_goesBackToPendingDueNowWithAttemptsResetAndTheNoteInItsHistory() throws {
        try enqueueForged("o-1")
        try settle(expecting: 0, ["reconcile"])
        let rejected = try order("o-1")
        XCTAssertEqual(rejected["state"], .string("rejected"))
        XCTAssertEqual(rejected["reason"], .string("receipt_invalid"))

        let note = "customer sent a new receipt, ticket 4711"
        // Run as `sudo settle retry`: the history names the person behind sudo.
        let result = try settle(["retry", "o-1", "--note", note], environment: ["SUDO_USER": "alice", "USER": "root"])
        XCTAssertEqual(result.status, 0, result.stderr)
        XCTAssertTrue(result.stdout.contains("o-1"), result.stdout)

        let retried = try order("o-1")
        XCTAssertEqual(retried["state"], .string("pending"))
        XCTAssertEqual(retried["attempts"], .number(0))
        XCTAssertEqual(retried["reason"], .null)
        XCTAssertEqual(retried["finished_at"], .null)
        assertTime(retried["next_attempt_at"], nullable: false, "next_attempt_at")
        let last = try XCTUnwrap(retried["history"]?.arrayValue?.last)
        XCTAssertEqual(last["kind"], .string("retry"))
        XCTAssertEqual(last["outcome"], .string("retried"))
        XCTAssertEqual(last["detail"], .string("by alice via cli: " + note))
        let text = try settle(expecting: 0, ["status", "o-1"]).stdout
        XCTAssertTrue(text.contains("retried") && text.contains("by alice via cli: \(note)"), text)

        // Due now: the next pass takes it (and Apple still says it is forged).
        let pass = try settle(expecting: 0, ["reconcile"])
        XCTAssertEqual(pass.stdout, "reconciled 1: 0 finished, 1 rejected, 0 retrying, 0 needs attention\n")
        XCTAssertEqual(world.simulator.requests(for: world.receipt("o-1")).count, 2)
    }

    func testRetry_aNeedsAttentionOrder_resetsItsAttemptsAndIsDeliveredNextPass() throws {
        // The hook fails once for good (exit 65), then works.
        try world.hook("grant.sh", exit: 0, extra: """
            if [ ! -e "\(world.folder)/refused-once" ]; then : > "\(world.folder)/refused-once"; exit 65; fi
            """)
        try enqueueValid("o-1", transaction: "2000000000000001")
        try settle(expecting: 0, ["reconcile"])
        let stuck = try order("o-1")
        XCTAssertEqual(stuck["state"], .string("needs_attention"))
        XCTAssertEqual(stuck["attempts"], .number(1))

        try settle(expecting: 0, ["retry", "o-1", "--note", "hook fixed"])
        XCTAssertEqual(try attempts("o-1"), 0)
        XCTAssertEqual(try state("o-1"), "pending")
        let pass = try settle(expecting: 0, ["reconcile"])
        XCTAssertEqual(pass.stdout, "reconciled 1: 1 finished, 0 rejected, 0 retrying, 0 needs attention\n")
        XCTAssertEqual(world.deliveries, ["2000000000000001 o-1", "2000000000000001 o-1"])
    }

    func testRetry_aFinishedOrder_exits65AndChangesNothing() throws {
        try enqueueValid("o-1", transaction: "2000000000000001")
        try settle(expecting: 0, ["reconcile"])
        let before = try ledgerRows()
        let orderBefore = try order("o-1")

        let result = try settle(["retry", "o-1", "--note", "please"])
        XCTAssertEqual(result.status, 65, result.stderr)
        XCTAssertTrue(result.stderr.contains("o-1"), result.stderr)

        XCTAssertEqual(try order("o-1"), orderBefore)
        XCTAssertEqual(try ledgerRows(), before)
        XCTAssertEqual(try settle(expecting: 0, ["reconcile"]).stdout,
                       "reconciled 0: 0 finished, 0 rejected, 0 retrying, 0 needs attention\n")
        XCTAssertEqual(world.deliveries.count, 1)
    }

    func testRetry_isAllOrNothing_whenOneNamedOrderCannotBeRetried() throws {
        try enqueueForged("o-1")
        try enqueueValid("o-2", transaction: "2000000000000002")
        try settle(expecting: 0, ["reconcile"])
        let before = try ledgerRows()
        for arguments in [["retry", "o-1", "o-2"], ["retry", "o-1", "o-404"]] {
            let result = try settle(arguments)
            XCTAssertEqual(result.status, 65, "\(arguments): \(result.stderr)")
            XCTAssertEqual(try ledgerRows(), before, "\(arguments) changed the ledger")
        }
        XCTAssertEqual(try state("o-1"), "rejected")
    }

    func testRetry_withoutAnOrderId_exits64() throws {
        let result = try settle(["retry"])
        XCTAssertEqual(result.status, 64, result.stderr)
        XCTAssertTrue(result.stderr.contains("--help"), result.stderr)
    }
}
