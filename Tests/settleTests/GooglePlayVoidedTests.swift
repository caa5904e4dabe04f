import Foundation
import SettleApp
import SettleTesting
import XCTest
import SettleBase
import SettleModel
import SettleGooglePlay
import SettleLedger

/// Google Play's voided purchases, polled by passes: a purchase voided before delivery is never
/// delivered; one voided after delivery is revoked through the revoke hook, once.
final class GooglePlayVoidedTests: GooglePlayTestCase {
    var revokesPath: String { world.folder + "/revokes.log" }
    var revokes: [String] {
        ((try? String(contentsOfFile: revokesPath, encoding: .utf8)) ?? "").split(separator: "\n").map(String.init)
    }

    override func setUpWithError() throws {
        try super.setUpWithError()
        try world.write("revoke.sh", """
            #!/bin/sh
            payload=$(cat)
            echo "$SETTLE_IDEMPOTENCY_KEY $SETTLE_ORDER_ID" >> "\(revokesPath)"
            printf '%s\\n' "$payload" > "\(world.folder)/revoke-$SETTLE_ORDER_ID.json"
            exit 0
            """, mode: 0o755)
        try writePlayConfig(extra: [("delivery", .object([("command", .array([.string(world.folder + "/grant.sh")])),
                                                          ("revoke_command", .array([.string(world.folder + "/revoke.sh")])),
                                                          ("timeout_seconds", .number(10))]))])
    }

    func voided(_ token: String, orderId: String) -> VoidedPurchase {
        VoidedPurchase(purchaseToken: PurchaseToken(token)!, orderId: orderId, purchaseTimeMillis: (world.time.unixSeconds - 600) * 1000,
                       voidedTimeMillis: world.time.unixSeconds * 1000, rawVoidedSource: 0, rawVoidedReason: 1)
    }

    func testPurchaseVoidedAfterDelivery_isRevokedThroughTheRevokeHook_once_acrossPages() throws {
        let token = scriptProduct("v", product: unlock, orderId: "GPA.V")
        try enqueuePlay("o-v", token: token, product: unlock)
        try settle(expecting: 0, ["reconcile"])
        XCTAssertEqual(try state("o-v"), "finished")
        // Three voided purchases on two pages (the fake's page size is 2); the order's is on the second.
        fake.script(voided: [voided(self.token("other-1"), orderId: "GPA.O1"), voided(self.token("other-2"), orderId: "GPA.O2"),
                             voided(token, orderId: "GPA.V")], pageSize: 2)
        try forgetLastPoll()
        try settle(expecting: 0, ["reconcile"])
        XCTAssertEqual(revokes, ["revoke:GPA.V o-v"])
        let revoke = try JSONValue.parse(Data(contentsOf: URL(fileURLWithPath: world.folder + "/revoke-o-v.json")))
        XCTAssertEqual(revoke["event"], .string("revoke"))
        XCTAssertEqual(revoke["store"], .string("google_play"))
        XCTAssertEqual(try order("o-v")["refund"]?["kind"], .string("VOIDED"))

        // The next poll reads the same window again: nothing is revoked twice.
        try forgetLastPoll()
        try settle(expecting: 0, ["reconcile"])
        XCTAssertEqual(revokes, ["revoke:GPA.V o-v"])
        XCTAssertEqual(world.deliveries, ["GPA.V o-v"])
    }

    /// Refunds of 1 and then 2 of 5 gems: two voidings of one Google order, each revoked once
    /// with its own quantity (before: the second was "already recorded" and never revoked).
    func testTwoPartialRefundsOfOneOrder_areEachRevokedOnce_withTheirQuantities() throws {
        let token = token("q")
        fake.script(product: token, ProductPurchase(
            rawPurchaseState: 0, rawConsumptionState: 0, rawAcknowledgementState: 0, orderId: "GPA.Q-0001", productId: gems,
            purchaseTimeMillis: (world.time.unixSeconds - 60) * 1000, quantity: 5, obfuscatedExternalAccountId: "u-1"))
        try enqueuePlay("o-q", token: token)
        try settle(expecting: 0, ["reconcile"])
        XCTAssertEqual(try state("o-q"), "finished")
        var one = voided(token, orderId: "GPA.Q-0001")
        one.voidedQuantity = 1
        one.voidedTimeMillis = (world.time.unixSeconds - 20) * 1000
        fake.script(voided: [one], pageSize: 10)
        try forgetLastPoll()
        try settle(expecting: 0, ["reconcile"])
        XCTAssertEqual(revokes, ["revoke:GPA.Q-0001 o-q"])
        var two = voided(token, orderId: "GPA.Q-0001")
        two.voidedQuantity = 2
        two.voidedTimeMillis = (world.time.unixSeconds - 10) * 1000
        fake.script(voided: [one, two], pageSize: 10)
        try forgetLastPoll()
        try settle(expecting: 0, ["reconcile"])
        XCTAssertEqual(revokes, ["revoke:GPA.Q-0001 o-q", "revoke:GPA.Q-0001@\(two.voidedTimeMillis ?? 0) o-q"])
        let second = try JSONValue.parse(Data(contentsOf: URL(fileURLWithPath: world.folder + "/revoke-o-q.json")))
        XCTAssertEqual(second["revoke_quantity"], .number(2))
        try forgetLastPoll()
        try settle(expecting: 0, ["reconcile"])
        XCTAssertEqual(revokes.count, 2, "each voiding once")
    }

    func testPurchaseVoidedBeforeDelivery_isRejectedAsRefunded_andNeverDelivered() throws {
        let token = scriptProduct("b", orderId: "GPA.B", state: 2)
        try enqueuePlay("o-b", token: token)
        try settle(expecting: 0, ["reconcile"])
        XCTAssertEqual(try state("o-b"), "pending")
        fake.script(voided: [voided(token, orderId: "GPA.B")])
        try forgetLastPoll()
        try settle(expecting: 0, ["reconcile"])
        // Kept by Google's order id: the order's next verification sees it, whatever Google says then.
        scriptProduct("b", orderId: "GPA.B", state: 0)
        try settle(["reconcile", "--order", "o-b"])
        XCTAssertEqual(try state("o-b"), "rejected")
        XCTAssertEqual(try order("o-b")["reason"], .string("refunded"))
        XCTAssertTrue(world.deliveries.isEmpty)
        XCTAssertTrue(revokes.isEmpty)
    }

    /// The pass polls when `voided_poll_interval_seconds` have passed since the last poll: the
    /// test moves the last poll back instead of waiting.
    func forgetLastPoll() throws {
        let database = try SQLiteDatabase(path: world.ledgerPath, mode: .readWrite)
        _ = try database.query("UPDATE play_cursor SET polled_at = 0")
        try database.close()
    }
}
