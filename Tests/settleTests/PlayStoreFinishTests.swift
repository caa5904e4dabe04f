import Foundation
import SettleApp
import SettleTesting
import XCTest
import SettleBase

/// Every Google Play purchase settle has evidence was granted is acknowledged or consumed:
/// Google refunds one left unacknowledged for three days while the customer keeps the goods.
final class PlayStoreFinishTests: GooglePlayTestCase {
    func testHookAnsweringAlreadyGranted_forAPlayPurchase_isToldToGoogle_consumedAndFinished() throws {
        let token = scriptProduct("dup", orderId: "GPA.DUP-1")
        try enqueuePlay("o-dup", token: token)
        let hook = try world.hook("granted-before.sh", exit: 80)
        try writePlayConfig(hook: hook)
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
        try writePlayConfig(hook: hook)
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
}
