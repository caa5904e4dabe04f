import Foundation
import SettleApp
import XCTest
import SettleBase

/// A support agent with a ticket ("I paid for 100 coins and got nothing, order o-123"): the
/// status says what happened in plain words, and every outcome can be closed.
final class SupportTests: EndToEndTestCase {
    /// o-123: Apple confirms the purchase, the hook refuses it with a message on stderr.
    func makeRefusedOrder(_ id: String = "o-123") throws {
        try world.hook("grant.sh", exit: 0, extra: #"echo "player p-9 is banned" >&2; exit 65"#)
        try enqueueValid(id, transaction: "2000000000000123")
        try settle(expecting: 0, ["reconcile"])
        XCTAssertEqual(try state(id), "needs_attention")
    }

    func testStatusOfOneOrder_startsWithAVerdict_chargedDeliveredWhyAndTheNextCommand() throws {
        try makeRefusedOrder()
        let text = try settle(expecting: 0, ["status", "o-123"]).stdout
        let top = lines(text).prefix(4)
        XCTAssertTrue(top[0].hasPrefix("charged:") && top[0].contains("yes: Apple confirmed transaction 2000000000000123"), text)
        XCTAssertTrue(top[1].hasPrefix("delivered:") && top[1].hasSuffix("no"), text)
        XCTAssertTrue(top[2].hasPrefix("why:") && top[2].contains("your delivery hook refused"), text)
        XCTAssertTrue(top[3].hasPrefix("next:") && top[3].contains("settle retry o-123") && top[3].contains("settle resolve o-123"), text)
    }

    func testStatusOfOneOrder_showsTheFailedHooksStderrEscaped_andTheLogLineCarriesIt() throws {
        try world.hook("grant.sh", exit: 0, extra: #"printf 'player p-9 is banned\033[31m\n' >&2; exit 65"#)
        try enqueueValid("o-123", transaction: "2000000000000123")
        let pass = try settle(expecting: 0, ["reconcile"])
        let text = try settle(expecting: 0, ["status", "o-123"]).stdout
        XCTAssertTrue(text.contains("hook said: player p-9 is banned\\u{1B}[31m"), text)
        XCTAssertFalse(text.contains("\u{1B}"), "control characters are shown, never obeyed")
        let logLine = try XCTUnwrap(lines(pass.stderr).first { $0.contains("order.needs_attention") }, pass.stderr)
        XCTAssertTrue(logLine.contains(" error order.needs_attention ") && logLine.contains("reason=hook_refused"), logLine)
        XCTAssertTrue(logLine.contains("player p-9 is banned"), logLine)
    }

    func testStatusTimes_carryTheirAgeNextToTheUTCTime() throws {
        try enqueueValid("o-1", transaction: "2000000000000001")
        let text = try settle(expecting: 0, ["status", "o-1"]).stdout
        let created = try XCTUnwrap(lines(text).first { $0.hasPrefix("created:") })
        XCTAssertNotNil(created.range(of: #"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ \((now|\d+s ago)\)$"#, options: .regularExpression), created)
    }

    func testStatusList_saysShowingNOfMWhenTheLimitCutsIt() throws {
        for n in 1...4 { try enqueueValid("o-\(n)", transaction: "200000000000000\(n)") }
        let cut = try settle(expecting: 0, ["status", "--limit", "3"]).stdout
        XCTAssertTrue(cut.contains("showing 3 of 4"), cut)
        XCTAssertFalse(try settle(expecting: 0, ["status"]).stdout.contains("showing"))
        XCTAssertEqual(try statusJSON(["--limit", "3"])["matching"], .number(4))
    }

    func testStatusFilteredByAnUnknownUser_countsNothing() throws {
        try enqueueValid("o-1", transaction: "2000000000000001")
        let text = try settle(expecting: 0, ["status", "--user", "nobody"]).stdout
        XCTAssertTrue(text.hasPrefix("matching orders by state: pending 0"), text)
        XCTAssertTrue(text.contains("no matching orders"), text)
        XCTAssertEqual(try statusJSON(["--user", "nobody"])["counts"]?["pending"], .number(0))
    }

    func testStatusByAppAccountToken_findsTheOrdersStoredWithIt_caseInsensitively() throws {
        let token = "7E3FB20B-4CDB-47CC-936D-99D65F608138"
        let receipt = world.scriptReceipt("o-1", [purchase("2000000000000001")])
        try settle(expecting: 0, ["enqueue", "--order", "o-1", "--user", "u-1", "--product", world.coins,
                                  "--receipt-file", try receiptFile("o-1", receipt), "--app-account-token", token.lowercased()])
        try enqueueValid("o-2", transaction: "2000000000000002")
        XCTAssertEqual(try listedOrderIds(["--app-account-token", token]), ["o-1"])
    }

    // MARK: - resolve

    func testResolveGrantedByHand_finishesAnOrderHoldingItsGrant_andTakesItOutOfNeedsAttention() throws {
        try makeRefusedOrder()
        let result = try settle(expecting: 0, ["resolve", "o-123", "--as", "granted_by_hand", "--note", "coins given in admin tool, ticket 4411"])
        XCTAssertEqual(result.stdout, "resolved o-123: finished (granted_by_hand)\n")
        let order = try order("o-123")
        XCTAssertEqual(order["state"], .string("finished"))
        XCTAssertEqual(order["reason"], .string("granted_by_hand"))
        XCTAssertEqual(order["history"]?.arrayValue?.last?["outcome"], .string("resolved_granted_by_hand"))
        XCTAssertTrue(order["history"]?.arrayValue?.last?["detail"]?.looseString?.contains("ticket 4411") ?? false)
        XCTAssertEqual(try statusJSON()["counts"]?["needs_attention"], .number(0))
        XCTAssertEqual(try statusJSON()["oldest_undelivered_seconds"], .null)
        let text = try settle(expecting: 0, ["status", "o-123"]).stdout
        XCTAssertTrue(lines(text)[1].hasPrefix("delivered:") && lines(text)[1].contains("by hand"), text)
        // Never delivered again, not even by a reconcile naming it.
        try settle(expecting: 0, ["reconcile", "--order", "o-123"])
        XCTAssertEqual(world.deliveries.count, 1)
    }

    func testResolveWontGrant_rejectsARejectedOrder_andARetryOfItIsNoLongerNeeded() throws {
        try enqueueForged("o-1")
        try settle(expecting: 0, ["reconcile"])
        try settle(expecting: 0, ["resolve", "o-1", "--as", "wont_grant", "--note", "forged, ticket 9"])
        let order = try order("o-1")
        XCTAssertEqual(order["state"], .string("rejected"))
        XCTAssertEqual(order["reason"], .string("wont_grant"))
        XCTAssertFalse(try settle(expecting: 0, ["status", "o-1"]).stdout.contains("next:"))
    }

    func testResolve_isAllOrNothing_andRefusesOrdersInOtherStates() throws {
        try makeRefusedOrder()
        try enqueueValid("o-2", transaction: "2000000000000002")
        let before = try ledgerRows()
        let result = try settle(["resolve", "o-123", "o-2", "--as", "wont_grant", "--note", "x"])
        XCTAssertEqual(result.status, 65, result.stderr)
        XCTAssertTrue(result.stderr.contains("order o-2 is pending"), result.stderr)
        XCTAssertEqual(try ledgerRows(), before)
    }

    func testResolve_withoutANoteOrWithAnUnknownOutcome_isAUsageError() throws {
        try makeRefusedOrder()
        XCTAssertEqual(try settle(["resolve", "o-123", "--as", "granted_by_hand"]).status, 64)
        XCTAssertEqual(try settle(["resolve", "o-123", "--as", "gift", "--note", "x"]).status, 64)
        XCTAssertEqual(try state("o-123"), "needs_attention")
    }

    // MARK: - retry with a fresh proof

    func testRetryWithAFreshReceipt_attachesIt_keepsTheOldOne_andTheOrderIsDelivered() throws {
        // The first receipt is another app's; the customer sends the right one.
        let wrong = world.scriptReceipt("wrong", bundleId: "com.other.app", [purchase("2000000000000001")])
        try enqueue("o-1", transaction: "2000000000000001", receipt: wrong)
        try settle(expecting: 0, ["reconcile"])
        XCTAssertEqual(try order("o-1")["reason"], .string("bundle_mismatch"))
        let fresh = world.scriptReceipt("fresh", [purchase("2000000000000001")])
        let result = try settle(expecting: 0, ["retry", "o-1", "--receipt-file", try receiptFile("fresh", fresh), "--note", "ticket 12"])
        XCTAssertEqual(result.stderr, "", "a fresh proof needs no warning")
        try settle(expecting: 0, ["reconcile"])
        XCTAssertEqual(try state("o-1"), "finished")
        XCTAssertEqual(world.simulator.requests(for: fresh).count, 1)
        let retry = try XCTUnwrap(try history("o-1").first { $0["kind"] == .string("retry") })
        let detail = try XCTUnwrap(retry["detail"]?.looseString)
        XCTAssertTrue(detail.contains("new proof: receipt sha256 \(SHA256.hex(Data(fresh.utf8)))"), detail)
        XCTAssertTrue(detail.contains("previous receipt sha256 \(SHA256.hex(Data(wrong.utf8)))"), detail)
        XCTAssertEqual(try ledgerRows(["receipts"])["receipts"]?.count, 2, "the old receipt stays in the ledger")
    }

    func testRetryOfARefundedOrder_warnsThatItWillFailTheSameWay_butDoesIt() throws {
        let receipt = world.scriptReceipt("o-1", [purchase("2000000000000001", cancelled: true)])
        try enqueue("o-1", transaction: "2000000000000001", receipt: receipt)
        try settle(expecting: 0, ["reconcile"])
        XCTAssertEqual(try order("o-1")["reason"], .string("refunded"))
        let result = try settle(expecting: 0, ["retry", "o-1"])
        XCTAssertTrue(result.stderr.hasPrefix("settle retry: warning: o-1 was rejected as refunded"), result.stderr)
        XCTAssertEqual(try state("o-1"), "pending")
    }

    func testRetryWithTheSameReceiptAgain_warnsThatTheProofIsUnchanged() throws {
        let wrong = world.scriptReceipt("wrong", bundleId: "com.other.app", [purchase("2000000000000001")])
        try enqueue("o-1", transaction: "2000000000000001", receipt: wrong)
        try settle(expecting: 0, ["reconcile"])
        let result = try settle(expecting: 0, ["retry", "o-1", "--receipt-file", try receiptFile("again", wrong)])
        XCTAssertTrue(result.stderr.contains("the new proof is the same as the old one"), result.stderr)
    }

    func testRetryWithAProof_forTwoOrders_isAUsageError() throws {
        let result = try settle(["retry", "o-1", "o-2", "--receipt-file", try receiptFile("x", world.receipt("x"))])
        XCTAssertEqual(result.status, 64, result.stderr)
    }
}
