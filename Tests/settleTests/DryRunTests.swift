import Foundation
import SettleApp
import XCTest

/// `settle reconcile --dry-run` asks Apple and reports what it would grant, but calls no hook
/// and changes no order (SPEC section 1).
final class DryRunTests: EndToEndTestCase {
    func testDryRun_reportsWhatWouldBeGrantedButChangesNothingAndCallsNoHook() throws {
        try enqueueValid("o-1", transaction: "2000000000000001", user: "u-1")
        try enqueueValid("o-2", transaction: "2000000000000002", user: "u-2", product: world.premium, withTransactionId: false)
        try enqueueForged("o-3")
        let rowsBefore = try ledgerRows()
        let ordersBefore = try ["o-1", "o-2", "o-3"].map { try order($0) }
        let historyRowsBefore = try XCTUnwrap(rowsBefore["history"]).count

        let result = try settle(expecting: 0, ["reconcile", "--dry-run"])

        XCTAssertTrue(result.stdout.contains("o-1: would grant transaction 2000000000000001"), result.stdout)
        XCTAssertTrue(result.stdout.contains("o-2: would grant transaction 2000000000000002"), result.stdout)
        XCTAssertTrue(result.stdout.contains("o-3: would reject"), result.stdout)
        XCTAssertTrue(result.stdout.contains("2 would be granted"), result.stdout)
        XCTAssertFalse(result.stdout.contains("reconciled "), "a dry run must not claim it reconciled anything")
        XCTAssertEqual(world.simulator.requests.count, 3, "the dry run verifies every due order with Apple")

        XCTAssertTrue(world.deliveries.isEmpty, "a dry run calls no hook")
        XCTAssertEqual(try ["o-1", "o-2", "o-3"].map { try order($0) }, ordersBefore)
        let rowsAfter = try ledgerRows()
        XCTAssertEqual(rowsAfter["history"]?.count, historyRowsBefore)
        for table in ["orders", "history", "grants", "receipts"] {
            XCTAssertEqual(rowsAfter[table], rowsBefore[table], "table \(table) changed during a dry run")
        }
        XCTAssertEqual(rowsAfter, rowsBefore)

        // Nothing was used up: a real pass afterwards grants exactly what the dry run announced.
        let real = try settle(expecting: 0, ["reconcile"])
        XCTAssertEqual(real.stdout, "reconciled 3: 2 finished, 1 rejected, 0 retrying, 0 needs attention\n")
        XCTAssertEqual(world.deliveries.sorted(), ["2000000000000001 o-1", "2000000000000002 o-2"])
    }

    func testDryRun_namedOrder_touchesOnlyThatOrder() throws {
        try enqueueValid("o-1", transaction: "2000000000000001")
        try enqueueValid("o-2", transaction: "2000000000000002")
        let before = try ledgerRows()
        let result = try settle(expecting: 0, ["reconcile", "--dry-run", "--order", "o-2"])
        XCTAssertTrue(result.stdout.contains("o-2: would grant transaction 2000000000000002"), result.stdout)
        XCTAssertFalse(result.stdout.contains("o-1"), result.stdout)
        XCTAssertEqual(try ledgerRows(), before)
        XCTAssertTrue(world.deliveries.isEmpty)
    }

    /// Issue 36, bug 1: during a hook outage the runbook's first command must not call an order
    /// that holds its own grant "already granted, would reject": a real pass delivers it again.
    func testDryRun_anOrderHoldingItsOwnGrantWaitingForItsHook_wouldBeDeliveredAgain_notRejected() throws {
        try world.hook("grant.sh", exit: 75)
        try enqueueValid("o-1", transaction: "2000000000000001")
        XCTAssertEqual(try settle(expecting: 0, ["reconcile"]).stdout,
                       "reconciled 1: 0 finished, 0 rejected, 1 retrying, 0 needs attention\n")
        XCTAssertEqual(try state("o-1"), "pending")
        let before = try ledgerRows()

        let result = try settle(expecting: 0, ["reconcile", "--dry-run", "--order", "o-1"])
        XCTAssertTrue(result.stdout.contains("o-1: would deliver transaction 2000000000000001 again"), result.stdout)
        XCTAssertFalse(result.stdout.contains("would not grant"), result.stdout)
        XCTAssertTrue(result.stdout.contains("1 would be granted, 0 rejected"), result.stdout)
        XCTAssertEqual(try ledgerRows(), before, "a dry run changes nothing")
    }
}
