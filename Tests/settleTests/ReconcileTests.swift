import Foundation
import SettleApp
import XCTest
import SettleBase

/// `settle reconcile` end to end: enqueue through the binary, verify with the Apple simulator,
/// grant through the hook, and report one summary line (SPEC sections 1, 4, 5, 7).
final class ReconcileTests: EndToEndTestCase {
    func testReconcile_grantsEveryValidOrderOnceAndPrintsTheSummaryLine() throws {
        try enqueueValid("o-1", transaction: "2000000000000001", user: "u-1")
        try enqueueValid("o-2", transaction: "2000000000000002", user: "u-2", product: world.premium)
        // No transaction id: matched by product, and the key is still Apple's transaction id.
        try enqueueValid("o-3", transaction: "2000000000000003", user: "u-3", withTransactionId: false)

        let result = try settle(expecting: 0, ["reconcile"])
        XCTAssertEqual(result.stdout, "reconciled 3: 3 finished, 0 rejected, 0 retrying, 0 needs attention\n")

        XCTAssertEqual(world.deliveries.sorted(), ["2000000000000001 o-1", "2000000000000002 o-2", "2000000000000003 o-3"],
                       "the hook runs once per order with SETTLE_IDEMPOTENCY_KEY = Apple's transaction id")
        let status = try statusJSON()
        XCTAssertEqual(status["counts"]?["finished"], .number(3))
        for (id, txn) in [("o-1", "2000000000000001"), ("o-2", "2000000000000002"), ("o-3", "2000000000000003")] {
            let order = try XCTUnwrap(status["orders"]?.arrayValue?.first { $0["order_id"] == .string(id) }, "\(id) not listed")
            XCTAssertEqual(order["state"], .string("finished"), id)
            XCTAssertEqual(order["transaction_id"], .string(txn), id)
            XCTAssertEqual(order["environment"], .string("Production"), id)
            XCTAssertEqual(order["attempts"], .number(0), id)
            assertTime(order["finished_at"], nullable: false, "\(id).finished_at")
        }
    }

    func testReconcile_hookReceivesTheSpecifiedPayload() throws {
        try enqueueValid("o-1", transaction: "2000000000000001", user: "u-42")
        try settle(expecting: 0, ["reconcile"])
        let payload = try JSONValue.parse(XCTUnwrap(bytes(world.folder + "/payload-o-1.json")))
        XCTAssertEqual(payload["order_id"], .string("o-1"))
        XCTAssertEqual(payload["user_id"], .string("u-42"))
        XCTAssertEqual(payload["product_id"], .string(world.coins))
        XCTAssertEqual(payload["product_type"], .string("consumable"))
        XCTAssertEqual(payload["quantity"], .number(1))
        XCTAssertEqual(payload["grant"]?["coins"], .number(100))
        XCTAssertEqual(payload["transaction_id"], .string("2000000000000001"))
        XCTAssertEqual(payload["original_transaction_id"], .string("2000000000000001"))
        XCTAssertEqual(payload["environment"], .string("Production"))
        XCTAssertEqual(payload["idempotency_key"], .string("2000000000000001"))
        XCTAssertEqual(payload["expires_date"], .null)
        if case let .string(date)? = payload["purchase_date"] { XCTAssertTrue(isRFC3339UTC(date), date) } else { XCTFail("purchase_date") }
    }

    func testReconcile_countsEveryKindOfOutcomeInTheSummaryLine() throws {
        // The hook asks to try again later for o-4 and refuses o-5 for good.
        try world.hook("grant.sh", exit: 0, extra: """
            [ "$SETTLE_ORDER_ID" = o-4 ] && exit 75
            [ "$SETTLE_ORDER_ID" = o-5 ] && exit 65
            """)
        try enqueueValid("o-1", transaction: "2000000000000001")
        try enqueueValid("o-2", transaction: "2000000000000002")
        try enqueueForged("o-3")
        try enqueueValid("o-4", transaction: "2000000000000004")
        try enqueueValid("o-5", transaction: "2000000000000005")

        let result = try settle(expecting: 0, ["reconcile"])
        XCTAssertEqual(result.stdout, "reconciled 5: 2 finished, 1 rejected, 1 retrying, 1 needs attention\n")

        XCTAssertEqual(try state("o-1"), "finished")
        XCTAssertEqual(try state("o-2"), "finished")
        let forged = try order("o-3")
        XCTAssertEqual(forged["state"], .string("rejected"))
        XCTAssertEqual(forged["reason"], .string("receipt_invalid"))
        let retrying = try order("o-4")
        XCTAssertEqual(retrying["state"], .string("pending"))
        XCTAssertEqual(retrying["attempts"], .number(1))
        let refused = try order("o-5")
        XCTAssertEqual(refused["state"], .string("needs_attention"))
        XCTAssertEqual(refused["reason"], .string("hook_refused"))
        XCTAssertEqual(world.deliveries.sorted(), ["2000000000000001 o-1", "2000000000000002 o-2",
                                                   "2000000000000004 o-4", "2000000000000005 o-5"])
    }

    func testReconcile_aSecondPassWithNothingDue_reconcilesNothingAndCallsNoHook() throws {
        try enqueueValid("o-1", transaction: "2000000000000001")
        try settle(expecting: 0, ["reconcile"])
        let second = try settle(expecting: 0, ["reconcile"])
        XCTAssertEqual(second.stdout, "reconciled 0: 0 finished, 0 rejected, 0 retrying, 0 needs attention\n")
        XCTAssertEqual(world.deliveries, ["2000000000000001 o-1"])
    }

    func testReconcile_theSameAppleTransactionOnTwoOrders_isGrantedOnlyOnce() throws {
        let receipt = world.scriptReceipt("shared", [purchase("2000000000000001")])
        try enqueue("o-1", transaction: "2000000000000001", receipt: receipt)
        try enqueue("o-2", transaction: "2000000000000001", receipt: receipt)
        let result = try settle(expecting: 0, ["reconcile"])
        XCTAssertEqual(result.stdout, "reconciled 2: 1 finished, 1 rejected, 0 retrying, 0 needs attention\n")
        XCTAssertEqual(world.deliveries.count, 1)
        let states = [try order("o-1"), try order("o-2")].map { ($0["state"]?.looseString ?? "", $0["reason"]?.looseString) }
        XCTAssertEqual(states.map(\.0).sorted(), ["finished", "rejected"])
        XCTAssertTrue(states.contains { $0.0 == "rejected" && $0.1 == "already_granted" })
    }

    func testReconcile_refundedAndSandboxReceipts() throws {
        let refunded = world.scriptReceipt("o-1", [purchase("2000000000000001", cancelled: true)])
        try enqueue("o-1", transaction: "2000000000000001", receipt: refunded)
        let sandbox = world.scriptReceipt("o-2", environment: "Sandbox", [purchase("2000000000000002")])
        try enqueue("o-2", transaction: "2000000000000002", receipt: sandbox)
        let result = try settle(expecting: 0, ["reconcile"])
        XCTAssertEqual(result.stdout, "reconciled 2: 1 finished, 1 rejected, 0 retrying, 0 needs attention\n")
        let o1 = try order("o-1")
        XCTAssertEqual(o1["state"], .string("rejected"))
        XCTAssertEqual(o1["reason"], .string("refunded"))
        let o2 = try order("o-2")
        XCTAssertEqual(o2["state"], .string("finished"))
        XCTAssertEqual(o2["environment"], .string("Sandbox"))
        XCTAssertEqual(world.deliveries, ["2000000000000002 o-2"])
    }

    func testReconcile_namedOrders_reconcilesOnlyThoseAndExits65ForAnUnknownOne() throws {
        try enqueueValid("o-1", transaction: "2000000000000001")
        try enqueueValid("o-2", transaction: "2000000000000002")
        let result = try settle(expecting: 0, ["reconcile", "--order", "o-2"])
        XCTAssertEqual(result.stdout, "reconciled 1: 1 finished, 0 rejected, 0 retrying, 0 needs attention\n")
        XCTAssertEqual(try state("o-1"), "pending")
        XCTAssertEqual(try state("o-2"), "finished")
        let unknown = try settle(["reconcile", "--order", "o-404"])
        XCTAssertEqual(unknown.status, 65, unknown.stderr)
        XCTAssertTrue(unknown.stderr.contains("o-404"), unknown.stderr)
        XCTAssertEqual(try state("o-1"), "pending")
    }
}
