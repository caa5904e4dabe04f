import Foundation
import SettleApp
import SettleTesting
import XCTest
import SettleBase
import SettleGooglePlay
import SettleLedger

/// Every Google Play purchase settle has evidence was granted is acknowledged or consumed:
/// Google refunds one left unacknowledged for three days while the customer keeps the goods.
class PlayStoreFinishTests: GooglePlayTestCase {
    /// The configuration's ledger: SQLite here, PostgreSQL in the subclass.
    var ledgerConfig: [(String, JSONValue)] = []
    var postgresURL: String?

    /// Writes to the ledger the daemon uses, whichever engine (to move a backoff's end).
    func executeInLedger(_ sql: String) throws {
        let ledger: any SettleLedger = try postgresURL.map { try PostgresLedger(url: $0, time: world.time) } ?? world.ledger()
        try ledger.writing { db in try db.query(sql) }
    }

    func testHookAnsweringAlreadyGranted_forAPlayPurchase_isToldToGoogle_consumedAndFinished() throws {
        let token = scriptProduct("dup", orderId: "GPA.DUP-1")
        try enqueuePlay("o-dup", token: token)
        let hook = try world.hook("granted-before.sh", exit: 80)
        try writePlayConfig(hook: hook, extra: ledgerConfig)
        try settle(expecting: 0, ["reconcile"])
        XCTAssertEqual(try state("o-dup"), "finished")
        XCTAssertEqual(fake.product(token)?.consumptionState, .consumed, "the backend holds the grant: Google must hear so")
        XCTAssertEqual(finishes.map { $0.path.hasSuffix(":consume") }, [true])
        let history = try XCTUnwrap(try order("o-dup")["history"]?.arrayValue)
        XCTAssertEqual(history.map { $0["outcome"]?.looseString }.suffix(2), ["already_granted", "consumed"])
    }

    func testKill9MidHook_thenTheIdempotentHookAnswersAlreadyGranted_stillAcknowledges() throws {
        // The README's idempotent hook: exit 80 for a key it has seen. settle dies while the
        // hook runs; the next pass delivers again under the same key and hears "already granted".
        let seen = world.folder + "/seen-keys"
        let hook = try world.write("idempotent.sh", """
            #!/bin/sh
            cat > /dev/null
            if grep -qx "$SETTLE_IDEMPOTENCY_KEY" "\(seen)" 2>/dev/null; then exit 80; fi
            echo "$SETTLE_IDEMPOTENCY_KEY" >> "\(seen)"
            echo "$SETTLE_IDEMPOTENCY_KEY $SETTLE_ORDER_ID" >> "\(world.deliveriesPath)"
            if [ ! -e "\(world.folder)/killed" ]; then touch "\(world.folder)/killed"; kill -9 $PPID; fi
            exit 0
            """, mode: 0o755)
        try writePlayConfig(hook: hook, extra: ledgerConfig)
        let token = scriptProduct("k", product: unlock, orderId: "GPA.K-1")
        try enqueuePlay("o-k", token: token, product: unlock)
        XCTAssertNotEqual(try settle(["reconcile"]).status, 0, "settle was killed mid-hook")
        XCTAssertEqual(fake.product(token)?.acknowledgementState, .yetToBeAcknowledged)

        try settle(expecting: 0, ["reconcile"])
        XCTAssertEqual(try state("o-k"), "finished")
        XCTAssertEqual(fake.product(token)?.acknowledgementState, .acknowledged)
        XCTAssertEqual(world.deliveries, ["GPA.K-1 o-k"], "granted once")
        XCTAssertEqual(finishes.count, 1, "acknowledged once, after the grant")
    }

    func testGoogleRefusingTheAcknowledge_backsOff_countsAttempts_thenNeedsAPerson_withTheRefundClockShown() throws {
        let token = scriptProduct("r", product: unlock, orderId: "GPA.R-1")
        try enqueuePlay("o-r", token: token, product: unlock)
        tap.refuseFinishes.withLock { $0 = 100 }
        try settle(["reconcile"])
        var order = try order("o-r")
        XCTAssertEqual(order["state"], .string("delivering"))
        XCTAssertEqual(order["attempts"], .number(1))
        XCTAssertEqual(finishes.count, 1)
        // Inside the backoff a pass leaves Google alone (it used to ask every pass, with no limit).
        try settle(["reconcile"])
        try settle(["reconcile"])
        XCTAssertEqual(finishes.count, 1, "not asked again before the backoff ends")
        // The backoff ended (moved back in the ledger, as if the time had passed): asked again, until the attempts run out.
        for _ in 0..<2 {
            try executeInLedger("UPDATE orders SET next_attempt_at = 0 WHERE order_id = 'o-r'")
            try settle(["reconcile"])
        }
        order = try self.order("o-r")
        XCTAssertEqual(order["state"], .string("needs_attention"))
        XCTAssertEqual(order["reason"], .string("store_finish_refused"))
        XCTAssertEqual(finishes.count, 3)
        XCTAssertEqual(world.deliveries, ["GPA.R-1 o-r"], "delivered once, never again")
        XCTAssertNotEqual(order["google_refunds_at"], .null, "the refund clock is shown while a person decides")
        let status = try statusJSON()
        XCTAssertEqual(status["google_play"]?["unacknowledged"]?.arrayValue?.compactMap { $0["order_id"]?.looseString }, ["o-r"])
        let text = try settle(expecting: 0, ["status", "o-r"]).stdout
        XCTAssertTrue(text.contains("store_finish_refused") || text.contains("refused every attempt"), text)
        XCTAssertEqual(fake.product(token)?.acknowledgementState, .yetToBeAcknowledged)
    }

    /// Issue 32, item 20: a 5xx, a 403 and a subscription's 409 on the acknowledge each back off
    /// per order and count attempts like a refusal (they used to be asked every pass), and end
    /// needs_attention at max_attempts with Google's refund clock shown.
    func testEveryFailedAcknowledge_5xx_403_andASubscriptions409_backsOff_countsAttempts_thenNeedsAPerson() throws {
        let subscription = token("f-sub")
        fake.script(subscription: subscription, SubscriptionPurchaseV2(
            rawSubscriptionState: "SUBSCRIPTION_STATE_ACTIVE", lineItems: [.init(productId: pro, expiryTime: "2099-01-01T00:00:00Z",
                                                                  latestSuccessfulOrderId: "GPA.FS..0")],
            latestOrderId: "GPA.FS..0", obfuscatedExternalAccountId: "u-1", startTime: "2026-12-01T10:00:00Z"))
        let cases: [(order: String, token: String, product: String, status: Int)] = [
            ("o-fs", subscription, pro, 409),
            ("o-f5", scriptProduct("f5", product: unlock, orderId: "GPA.F5"), unlock, 503),
            ("o-f3", scriptProduct("f3", product: unlock, orderId: "GPA.F3"), unlock, 403),
        ]
        for (order, token, product, status) in cases {
            tap.finishCalls.withLock { $0 = [] }
            tap.refuseStatus.withLock { $0 = status }
            tap.refuseFinishes.withLock { $0 = 100 }
            try enqueuePlay(order, token: token, product: product)
            try settle(["reconcile"])
            XCTAssertEqual(try self.order(order)["attempts"], .number(1), "\(status)")
            XCTAssertEqual(finishes.count, 1, "\(status)")
            for _ in 0..<3 { try settle(["reconcile"]) }
            XCTAssertEqual(finishes.count, 1, "\(status): not asked again before the backoff ends")
            for _ in 0..<2 {
                try executeInLedger("UPDATE orders SET next_attempt_at = 0 WHERE order_id = '\(order)'")
                try settle(["reconcile"])
            }
            let ended = try self.order(order)
            XCTAssertEqual(ended["state"], .string("needs_attention"), "\(status)")
            XCTAssertEqual(ended["reason"], .string("store_finish_refused"), "\(status)")
            XCTAssertEqual(ended["attempts"], .number(3), "\(status)")
            XCTAssertNotEqual(ended["google_refunds_at"], .null, "\(status): the refund clock is shown while a person decides")
            XCTAssertEqual(finishes.count, 3, "\(status)")
            tap.refuseFinishes.withLock { $0 = 0 }
        }
        XCTAssertEqual(Set(world.deliveries), ["GPA.F5 o-f5", "GPA.F3 o-f3", "GPA.FS..0 o-fs"], "each delivered once, never again")
    }

    func testResolvedGrantedByHand_aPlayOrderThatHoldsItsPurchase_isAcknowledgedAtTheNextPass_neverDelivered() throws {
        let token = scriptProduct("h", product: unlock, orderId: "GPA.H-1")
        try enqueuePlay("o-h", token: token, product: unlock)
        try writePlayConfig(hook: try world.hook("refuse.sh", exit: 65), extra: ledgerConfig)
        try settle(["reconcile"])
        XCTAssertEqual(try state("o-h"), "needs_attention")
        let resolved = try settle(expecting: 0, ["resolve", "o-h", "--as", "granted_by_hand", "--note", "TICKET-1"])
        XCTAssertTrue(resolved.stdout.contains("resolved o-h: delivering"), resolved.stdout)
        XCTAssertEqual(fake.product(token)?.acknowledgementState, .yetToBeAcknowledged)
        try writePlayConfig(extra: ledgerConfig)
        try settle(expecting: 0, ["reconcile"])
        XCTAssertEqual(try state("o-h"), "finished")
        XCTAssertEqual(fake.product(token)?.acknowledgementState, .acknowledged, "granted by hand: Google must hear it before it refunds")
        XCTAssertEqual(world.deliveries, ["GPA.H-1 o-h"], "the refusing hook's call only; nothing delivered after the resolution")
    }

    func testResolveTransaction_takesAGoogleOrderId_forAPlayOrderThatWasNeverVerified() throws {
        let token = scriptProduct("n", orderId: "GPA.N-1", account: "someone-else")
        try enqueuePlay("o-n", token: token)
        try settle(["reconcile"])
        XCTAssertEqual(try state("o-n"), "rejected", "another account's purchase")
        try settle(expecting: 0, ["resolve", "o-n", "--as", "granted_by_hand", "--transaction", "GPA.N-1", "--note", "TICKET-2"])
        try settle(expecting: 0, ["reconcile"])
        XCTAssertEqual(try state("o-n"), "finished")
        XCTAssertEqual(fake.product(token)?.consumptionState, .consumed)
        XCTAssertTrue(world.deliveries.isEmpty)
        let bad = try settle(["resolve", "o-n", "--as", "granted_by_hand", "--transaction", "GPA;rm -rf", "--note", "x"])
        XCTAssertEqual(bad.status, 65)
    }

    func testGrantRecordedByTheBackend_forAPlayPurchase_isConsumedWithGoogle_withoutDelivering() throws {
        let token = scriptProduct("g", orderId: "GPA.G-1")
        try settle(expecting: 0, ["grant-recorded", "--transaction", "GPA.G-1", "--note", "granted by the app's own flow"])
        try enqueuePlay("o-g", token: token)
        try settle(expecting: 0, ["reconcile"])
        XCTAssertEqual(try state("o-g"), "finished")
        XCTAssertTrue(world.deliveries.isEmpty, "granted outside settle: never delivered")
        XCTAssertEqual(fake.product(token)?.consumptionState, .consumed, "but Google hears it, or it refunds the purchase")
    }
}

/// The same on a PostgreSQL ledger.
final class PlayStoreFinishPostgresTests: PlayStoreFinishTests {
    var schema = ""

    override func setUpWithError() throws {
        try super.setUpWithError()
        let fresh = try TestPostgres.freshSchema()
        schema = fresh.schema
        postgresURL = fresh.url
        ledgerConfig = [("ledger", .string(fresh.url))]
        try writePlayConfig(extra: ledgerConfig)
        try settle(expecting: 0, ["migrate"])
    }

    override func tearDownWithError() throws {
        TestPostgres.drop(schema: schema)
        try super.tearDownWithError()
    }

    // Linux test discovery lists only the methods a class declares: each inherited test is named here.
    override func testHookAnsweringAlreadyGranted_forAPlayPurchase_isToldToGoogle_consumedAndFinished() throws { try super.testHookAnsweringAlreadyGranted_forAPlayPurchase_isToldToGoogle_consumedAndFinished() }
    override func testKill9MidHook_thenTheIdempotentHookAnswersAlreadyGranted_stillAcknowledges() throws { try super.testKill9MidHook_thenTheIdempotentHookAnswersAlreadyGranted_stillAcknowledges() }
    override func testGoogleRefusingTheAcknowledge_backsOff_countsAttempts_thenNeedsAPerson_withTheRefundClockShown() throws { try super.testGoogleRefusingTheAcknowledge_backsOff_countsAttempts_thenNeedsAPerson_withTheRefundClockShown() }
    override func testEveryFailedAcknowledge_5xx_403_andASubscriptions409_backsOff_countsAttempts_thenNeedsAPerson() throws { try super.testEveryFailedAcknowledge_5xx_403_andASubscriptions409_backsOff_countsAttempts_thenNeedsAPerson() }
    override func testResolvedGrantedByHand_aPlayOrderThatHoldsItsPurchase_isAcknowledgedAtTheNextPass_neverDelivered() throws { try super.testResolvedGrantedByHand_aPlayOrderThatHoldsItsPurchase_isAcknowledgedAtTheNextPass_neverDelivered() }
    override func testResolveTransaction_takesAGoogleOrderId_forAPlayOrderThatWasNeverVerified() throws { try super.testResolveTransaction_takesAGoogleOrderId_forAPlayOrderThatWasNeverVerified() }
    override func testGrantRecordedByTheBackend_forAPlayPurchase_isConsumedWithGoogle_withoutDelivering() throws { try super.testGrantRecordedByTheBackend_forAPlayPurchase_isConsumedWithGoogle_withoutDelivering() }
}
