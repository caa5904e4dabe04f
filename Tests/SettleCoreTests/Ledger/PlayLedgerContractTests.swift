import Foundation
import SettleTesting
import XCTest
@testable import SettleApp
@testable import SettleModel
@testable import SettleLedger
@testable import SettleGooglePlayModule

/// Google Play's part of the ledger contract, on SQLite and on PostgreSQL: the store and the
/// purchase token of an order, "delivered, store finish pending", the refund deadline.
extension LedgerContractTests {
    static let playToken = PurchaseToken("tok-contract-AO-J1OxYz.SECRETPLAYTOKEN_abcdefghijklmnopqrstuvwxyz")!

    func enqueuePlay(_ store: any LedgerStore, _ id: String, token: PurchaseToken = LedgerContractTests.playToken) throws {
        _ = try store.enqueue(NewOrder(orderId: id, userId: "u-1", productId: "gems_100", appAccountToken: "u-1",
                                       store: .googlePlay, purchaseToken: token))
    }

    func playPurchase(_ orderId: String) -> VerifiedPurchase {
        VerifiedPurchase(transactionId: orderId, originalTransactionId: orderId, productId: "gems_100", environment: "Production",
                         quantity: 1, purchaseDateMs: world.time.unixSeconds * 1000, expiresDateMs: nil, grantKey: orderId)
    }

    func testPlayOrder_keepsItsStoreAndToken_sameTokenIsANoOp_anotherIsRefused_andStatusFindsItByToken() throws {
        try onEachBackEnd { b in
            try enqueuePlay(b.store, "p-1")
            XCTAssertEqual(try b.store.enqueue(NewOrder(orderId: "p-1", userId: "u-1", productId: "gems_100", appAccountToken: "u-1",
                                                        store: .googlePlay, purchaseToken: Self.playToken)), .unchanged, b.name)
            XCTAssertThrowsError(try enqueuePlay(b.store, "p-1", token: PurchaseToken("another-token")!), b.name)
            try enqueue(b.store, "a-1")
            let order = try XCTUnwrap(try b.store.orderRecord("p-1")?.order, b.name)
            XCTAssertEqual(order.store, .googlePlay, b.name)
            XCTAssertEqual(order.purchaseToken, Self.playToken, b.name)
            XCTAssertEqual(try b.store.orderRecord("a-1")?.order.store, .appStore, b.name)
            var filter = OrderFilter()
            filter.purchaseToken = Self.playToken
            let found = try b.store.summary(filter)
            XCTAssertEqual(found.orders.map(\.orderId), ["p-1"], b.name)
            XCTAssertEqual(try b.store.summary(OrderFilter()).storeCounts[.googlePlay]?[.pending], 1, b.name)
            XCTAssertEqual(try b.store.summary(OrderFilter()).counts[.pending], 2, b.name)
        }
    }

    func testPlayRowFromABackend_needsItsToken_andCannotArriveDelivered() throws {
        try onEachBackEnd { b in
            XCTAssertThrowsError(try b.execute("""
                INSERT INTO orders(order_id, user_id, product_id, store) VALUES ('p-none', 'u-1', 'gems_100', 'google_play')
                """), "\(b.name): a Play order without its purchase token")
            XCTAssertThrowsError(try b.execute("""
                INSERT INTO orders(order_id, user_id, product_id, store, purchase_token) VALUES ('p-x', 'u-1', 'gems_100', 'amazon', 't')
                """), "\(b.name): an unknown store")
            try b.execute("""
                INSERT INTO orders(order_id, user_id, product_id, store, purchase_token) VALUES ('p-b', 'u-1', 'gems_100', 'google_play', 'tok-b')
                """)
            let order = try XCTUnwrap(try b.store.orderRecord("p-b")?.order, b.name)
            XCTAssertEqual(order.state, .pending, b.name)
            XCTAssertEqual(order.purchaseToken?.value, "tok-b", b.name)
            XCTAssertNil(order.deliveredAt, b.name)
        }
    }

    func testDeliveredStoreFinishPending_staysDeliveringUnderItsClaim_andIsRescuedOnlyToBeFinished() throws {
        try onEachBackEnd { b in
            try enqueuePlay(b.store, "p-1")
            let claimed = try XCTUnwrap(try b.store.claimNextDue(owner: remote, leaseSeconds: 60), b.name)
            _ = try b.store.recordVerified(orderId: "p-1", owner: remote, fence: claimed.fencingToken, match: .only(playPurchase("GPA.1")),
                                           deliveryLeaseSeconds: 0, history: entry)
            XCTAssertFalse(try b.store.recordDelivered(orderId: "p-1", owner: me, fence: nil, error: nil,
                                                       history: HistoryEntry(at: 0, kind: .delivery, outcome: "delivered")),
                           "\(b.name): a stranger's claim")
            XCTAssertTrue(try b.store.recordDelivered(orderId: "p-1", owner: remote, fence: claimed.fencingToken, error: nil,
                                                      history: HistoryEntry(at: 0, kind: .delivery, outcome: "delivered")), b.name)
            let delivered = try XCTUnwrap(try b.store.orderRecord("p-1")?.order, b.name)
            XCTAssertEqual(delivered.state, .delivering, b.name)
            XCTAssertNotNil(delivered.deliveredAt, b.name)
            // The worker died before Google heard: the order comes back, still marked delivered.
            XCTAssertEqual(try b.store.rescue(owner: me).redeliver, ["p-1"], b.name)
            let again = try XCTUnwrap(try b.store.claimRedelivery(orderId: "p-1", owner: me, leaseSeconds: 60), b.name)
            XCTAssertEqual(again.deliveredAt, delivered.deliveredAt, b.name)
            world.time.advance(by: 10)
            XCTAssertTrue(try b.store.recordDelivered(orderId: "p-1", owner: me, fence: again.fencingToken, error: "Google said 503",
                                                      history: HistoryEntry(at: 0, kind: .delivery, outcome: "store_finish_failed")), b.name)
            let failed = try XCTUnwrap(try b.store.orderRecord("p-1")?.order, b.name)
            XCTAssertEqual(failed.deliveredAt, delivered.deliveredAt, "\(b.name): the first delivery time is kept")
            XCTAssertEqual(failed.lastError, "Google said 503", b.name)
            XCTAssertTrue(try b.store.markFinished(orderId: "p-1", owner: me, fence: again.fencingToken,
                                                   history: HistoryEntry(at: 0, kind: .delivery, outcome: "acknowledged")), b.name)
            let finished = try XCTUnwrap(try b.store.orderRecord("p-1"), b.name)
            XCTAssertEqual(finished.order.state, .finished, b.name)
            XCTAssertEqual(finished.history.map(\.outcome), ["enqueued", "verified", "delivered", "redeliver", "store_finish_failed", "acknowledged"], b.name)
        }
    }

    func testStoreFinishRefused_backsOffCountingAttempts_thenNeedsAPerson_keepingItsGrantAndItsRefundClock() throws {
        try onEachBackEnd { b in
            try enqueuePlay(b.store, "p-1")
            var claim = try XCTUnwrap(try b.store.claimNextDue(owner: me, leaseSeconds: 60), b.name)
            _ = try b.store.recordVerified(orderId: "p-1", owner: me, fence: claim.fencingToken, match: .only(playPurchase("GPA.1")),
                                           deliveryLeaseSeconds: 60, history: entry)
            claim = try XCTUnwrap(try b.store.orderRecord("p-1")?.order, b.name)
            XCTAssertTrue(try b.store.recordDelivered(orderId: "p-1", owner: me, fence: claim.fencingToken, error: nil,
                                                      history: HistoryEntry(at: 0, kind: .delivery, outcome: "delivered")), b.name)
            let now = world.time.unixSeconds
            let refused = HistoryEntry(at: now, kind: .delivery, outcome: "store_finish_refused")
            XCTAssertEqual(try b.store.recordStoreFinishRefused(orderId: "p-1", owner: me, fence: claim.fencingToken, error: "400",
                                                                 nextAttemptAt: now + 30, maxAttempts: 2, history: refused), .delivering, b.name)
            // Backed off: the next pass's rescue leaves it alone, so Google is not asked again yet.
            XCTAssertEqual(try b.store.rescue(owner: me).redeliver, [], "\(b.name): not asked again before its backoff ends")
            world.time.advance(by: 31)
            XCTAssertEqual(try b.store.rescue(owner: me).redeliver, ["p-1"], b.name)
            claim = try XCTUnwrap(try b.store.claimRedelivery(orderId: "p-1", owner: me, leaseSeconds: 60), b.name)
            XCTAssertNotNil(claim.deliveredAt, "\(b.name): still delivered, never delivered again")
            XCTAssertEqual(try b.store.recordStoreFinishRefused(orderId: "p-1", owner: me, fence: claim.fencingToken, error: "400 again",
                                                                 nextAttemptAt: now + 90, maxAttempts: 2, history: refused),
                           .needsAttention, b.name)
            let order = try XCTUnwrap(try b.store.orderRecord("p-1")?.order, b.name)
            XCTAssertEqual(order.state, .needsAttention, b.name)
            XCTAssertEqual(order.reason, AttentionReason.storeFinishRefused.rawValue, b.name)
            XCTAssertEqual(order.attempts, 2, b.name)
            XCTAssertEqual(try b.store.grantHolder(transactionId: "GPA.1"), "p-1", "\(b.name): the grant stays, so a revoke can run")
            XCTAssertEqual(try b.store.summary(OrderFilter(limit: 0)).refundDeadlines.map(\.orderId), ["p-1"],
                           "\(b.name): the refund clock is still shown while a person decides")
        }
    }

    func testClaimOrder_aPlayOrderUnderADayFromGooglesRefund_goesFirst_andStatusListsItsDeadline() throws {
        try onEachBackEnd { b in
            try enqueue(b.store, "a-1")
            try enqueuePlay(b.store, "p-fresh", token: PurchaseToken("tok-fresh")!)
            world.time.advance(by: -Double(RefundDeadline.urgentAfterSeconds(.googlePlay)! + 3600))
            try enqueuePlay(b.store, "p-late", token: PurchaseToken("tok-late")!)
            world.time.advance(by: Double(RefundDeadline.urgentAfterSeconds(.googlePlay)! + 3600))
            // Due last of all by next_attempt_at and id; first by Google's deadline.
            try b.execute("UPDATE orders SET next_attempt_at = next_attempt_at + 1 WHERE order_id = 'p-late'")
            world.time.advance(by: 5)
            let deadlines = try b.store.summary(OrderFilter()).refundDeadlines
            XCTAssertEqual(deadlines.map(\.orderId), ["p-late", "p-fresh"], b.name)
            XCTAssertTrue(deadlines[0].isUrgent(now: world.time.unixSeconds), b.name)
            XCTAssertFalse(deadlines[1].isUrgent(now: world.time.unixSeconds), b.name)
            XCTAssertEqual(try b.store.claimNextDue(owner: me, leaseSeconds: 60)?.orderId, "p-late", b.name)
            XCTAssertEqual(try b.store.claimNextDue(owner: me, leaseSeconds: 60)?.orderId, "a-1", b.name)
            XCTAssertEqual(try b.store.claimNextDue(owner: me, leaseSeconds: 60)?.orderId, "p-fresh", b.name)
        }
    }
}

/// Google Play's voided purchases and real-time notifications, on SQLite and on PostgreSQL.
extension LedgerContractTests {
    func testPlayVoided_beforeDelivery_isNeverDelivered_afterDelivery_isRevokedOnce_andSeeingItAgainChangesNothing() throws {
        try onEachBackEnd { b in
            // Not verified yet: nothing says which of Google's orders it is, so it is left alone,
            // and the voiding is kept for the moment its grant is reserved.
            try enqueuePlay(b.store, "p-early", token: PurchaseToken("tok-early-voided")!)
            XCTAssertEqual(try b.store.applyPlayVoided(token: PurchaseToken("tok-early-voided")!, googleOrderId: "GPA.1",
                                                       reason: "1", source: "voided_poll"), [:], b.name)
            let early = try XCTUnwrap(try b.store.claim(orderId: "p-early", owner: me, leaseSeconds: 60), b.name)
            XCTAssertEqual(try b.store.recordVerified(orderId: "p-early", owner: me, fence: early.order.fencingToken,
                                                      match: .only(playPurchase("GPA.1")), deliveryLeaseSeconds: 60, history: entry),
                           .rejected(.refunded, "Google Play voided this purchase (refunded, charged back or revoked) before delivery"),
                           b.name)
            XCTAssertEqual(try b.store.orderRecord("p-early")?.order.state, .rejected, b.name)
            XCTAssertEqual(try b.store.orderRecord("p-early")?.order.reason, RejectionReason.refunded.rawValue, b.name)
            XCTAssertNil(try b.store.grantHolder(transactionId: "GPA.1"), "\(b.name): a voided purchase was reserved")
            // The order made for that very purchase (from a notification) is never delivered at once.
            _ = try b.store.createPlayOrder(orderId: "play-GPA.7", userId: "u-1", productId: "gems_100",
                                            token: PurchaseToken("tok-made")!, accountId: nil, detail: "test")
            XCTAssertEqual(try b.store.applyPlayVoided(token: PurchaseToken("tok-made")!, googleOrderId: "GPA.7", reason: nil,
                                                       source: "voided_poll"), ["play-GPA.7": "never_delivered"], b.name)

            try enqueuePlay(b.store, "p-late")
            let claimed = try XCTUnwrap(try b.store.claim(orderId: "p-late", owner: me, leaseSeconds: 60), b.name)
            _ = try b.store.recordVerified(orderId: "p-late", owner: me, fence: claimed.order.fencingToken,
                                           match: Match(candidates: [playPurchase("GPA.2")], named: true), deliveryLeaseSeconds: 60,
                                           history: entry)
            XCTAssertTrue(try b.store.markFinished(orderId: "p-late", owner: me, fence: claimed.order.fencingToken, history: entry), b.name)
            XCTAssertEqual(try b.store.applyPlayVoided(token: Self.playToken, googleOrderId: "GPA.2", reason: nil, source: "voided_poll"),
                           ["p-late": "revoke_queued"], b.name)
            XCTAssertEqual(try b.store.applyPlayVoided(token: Self.playToken, googleOrderId: "GPA.2", reason: nil, source: "rtdn"),
                           ["p-late": "already_recorded"], "\(b.name): the same voided purchase again")
            XCTAssertEqual(try b.store.claimDueRevocations(limit: 10, leaseSeconds: 300).map(\.0.transactionId), ["GPA.2"], b.name)
        }
    }

    /// Google voids one order of 5 gems twice (1, then 2), then all of it: each voiding is revoked
    /// once, of its own quantity and under a key of its own, whichever of the push and the poll
    /// sees it (they read the same entry of Google's list: the same voided time).
    func testEveryVoidingOfAPlayOrder_isRevokedOnce_ofItsOwnQuantity_underItsOwnKey() throws {
        try onEachBackEnd { b in
            try enqueuePlay(b.store, "p-gems")
            let claimed = try XCTUnwrap(try b.store.claim(orderId: "p-gems", owner: me, leaseSeconds: 60), b.name)
            var five = playPurchase("GPA.5")
            five.quantity = 5
            _ = try b.store.recordVerified(orderId: "p-gems", owner: me, fence: claimed.order.fencingToken,
                                           match: Match(candidates: [five], named: true), deliveryLeaseSeconds: 60, history: entry)
            XCTAssertTrue(try b.store.markFinished(orderId: "p-gems", owner: me, fence: claimed.order.fencingToken, history: entry), b.name)
            func void(_ quantity: Int?, at ms: Int64, _ source: String) throws -> String? {
                try b.store.applyPlayVoided(token: Self.playToken, googleOrderId: "GPA.5", quantity: quantity, voidedTimeMs: ms,
                                            reason: "0", source: source)["p-gems"]
            }
            func revokes() throws -> [String] {
                try b.store.claimDueRevocations(limit: 10, leaseSeconds: 300).map { "\($0.0.transactionId) \($0.0.quantity.map(String.init) ?? "all")" }
            }
            XCTAssertEqual(try void(1, at: 1_700_000_000_000, "rtdn"), "revoke_queued", b.name)
            XCTAssertEqual(try void(1, at: 1_700_000_000_000, "voided_poll"), "already_recorded", "\(b.name): the same voiding")
            XCTAssertEqual(try revokes(), ["GPA.5 1"], b.name)
            XCTAssertEqual(try void(2, at: 1_700_000_500_000, "voided_poll"), "revoke_queued", "\(b.name): a second refund")
            XCTAssertEqual(try void(2, at: 1_700_000_500_000, "rtdn"), "already_recorded", b.name)
            XCTAssertEqual(try revokes(), ["GPA.5@1700000500000 2"], b.name)
            var ten = five
            ten.quantity = 10
            let partly = try XCTUnwrap(b.store as? any TransactionalLedger, b.name)
            let rest = try partly.reading { db in try db.removingPlayVoided(Match(candidates: [ten], named: true)) }
            XCTAssertEqual(rest.candidates.map(\.quantity), [7], "\(b.name): 10 less the 1 and 2 voided")
            XCTAssertEqual(try void(nil, at: 1_700_000_900_000, "voided_poll"), "revoke_queued", "\(b.name): the rest")
            XCTAssertEqual(try revokes(), ["GPA.5@1700000900000 2"], "\(b.name): 5 less the 3 voided before")
            XCTAssertEqual(try void(nil, at: 1_700_000_990_000, "voided_poll"), "already_recorded", "\(b.name): nothing is left")
            XCTAssertEqual(try revokes(), [], b.name)
            // A purchase verified later is never granted what any of the voidings took.
            let ledger = try XCTUnwrap(b.store as? any TransactionalLedger, b.name)
            let match = try ledger.reading { db in try db.removingPlayVoided(Match(candidates: [five], named: true)) }
            XCTAssertEqual(match.candidates.count, 0, b.name)

        }
    }

    func testPlayPush_isStoredOncePerMessageId_whicheverHostGetsIt_andTheCursorIsShared() throws {
        try onEachBackEnd { b in
            let other = try b.another()
            XCTAssertTrue(try b.store.storePlayNotification(messageId: "m-1", kind: "oneTimeProductNotification",
                                                            token: Self.playToken, payload: "{}"), b.name)
            XCTAssertFalse(try other.storePlayNotification(messageId: "m-1", kind: "oneTimeProductNotification",
                                                           token: Self.playToken, payload: "{}"), "\(b.name): a redelivery to another host")
            let claimed = try other.claimPlayNotifications(limit: 10, leaseSeconds: 60)
            XCTAssertEqual(claimed.map(\.messageId), ["m-1"], b.name)
            XCTAssertTrue(try other.finishPlayNotification(claimed[0], outcome: "order_created", detail: nil, orderId: "play-GPA.3"), b.name)
            XCTAssertEqual(try b.store.pendingPlayNotifications(limit: 10).count, 0, b.name)
            XCTAssertEqual(try b.store.playNotification(messageId: "m-1")?.outcome, "order_created", b.name)

            try b.store.savePlayVoidedCursor(PlayVoidedCursor(sinceMs: 1_700_000_000_000, pageToken: "page-2", polledAt: 5))
            XCTAssertEqual(try other.playVoidedCursor(), PlayVoidedCursor(sinceMs: 1_700_000_000_000, pageToken: "page-2", polledAt: 5),
                           b.name)
        }
    }

    func testPlayPush_isClaimedByOneHost_untilItsClaimEndsOrIsGivenBack_andALapsedClaimChangesNothing() throws {
        try onEachBackEnd { b in
            let other = try b.another()
            for id in ["m-1", "m-2", "m-3"] {
                XCTAssertTrue(try b.store.storePlayNotification(messageId: id, kind: "one_time_product", token: Self.playToken, payload: "{}"))
            }
            let mine = try b.store.claimPlayNotifications(limit: 2, leaseSeconds: 60)
            XCTAssertEqual(mine.map(\.messageId), ["m-1", "m-2"], b.name)
            XCTAssertEqual(try other.claimPlayNotifications(limit: 10, leaseSeconds: 60).map(\.messageId), ["m-3"],
                           "\(b.name): another host works only the push nobody holds")
            XCTAssertEqual(try other.claimPlayNotifications(limit: 10, leaseSeconds: 60), [], b.name)
            // Given back: due for any host at once.
            try b.store.releasePlayNotifications([mine[1]])
            XCTAssertEqual(try other.claimPlayNotifications(limit: 10, leaseSeconds: 60).map(\.messageId), ["m-2"], b.name)
            // A host that died: its claim ends with its lease, and its late outcome changes nothing.
            world.time.advance(by: 61)
            let taken = try other.claimPlayNotifications(limit: 10, leaseSeconds: 60)
            XCTAssertEqual(taken.map(\.messageId), ["m-1", "m-2", "m-3"], b.name)
            XCTAssertFalse(try b.store.finishPlayNotification(mine[0], outcome: "order_created", detail: nil, orderId: nil), b.name)
            XCTAssertTrue(try other.finishPlayNotification(taken[0], outcome: "noted", detail: nil, orderId: nil), b.name)
            XCTAssertEqual(try b.store.playNotification(messageId: "m-1")?.outcome, "noted", b.name)
            XCTAssertEqual(try b.store.pendingPlayNotifications(limit: 10).map(\.messageId), ["m-2", "m-3"], b.name)
        }
    }

    /// Issue 36, bug 2: a customer's status shows their refund clocks only, never another's.
    func testSummaryOfOneUser_listsOnlyThatUsersRefundClocks() throws {
        try onEachBackEnd { b in
            try enqueuePlay(b.store, "p-mine", token: PurchaseToken("tok-mine")!)
            try enqueuePlay(b.store, "p-theirs", token: PurchaseToken("tok-theirs")!)
            try b.execute("UPDATE orders SET user_id = 'u-other' WHERE order_id = 'p-theirs'")
            let mine = try XCTUnwrap(try b.store.orderRecord("p-mine")?.order.userId)
            XCTAssertEqual(try b.store.summary(OrderFilter(userId: mine)).refundDeadlines.map(\.orderId), ["p-mine"], b.name)
            XCTAssertEqual(try b.store.summary(OrderFilter(userId: "u-other")).refundDeadlines.map(\.orderId), ["p-theirs"], b.name)
            XCTAssertEqual(try b.store.summary(OrderFilter()).refundDeadlines.map(\.orderId).sorted(), ["p-mine", "p-theirs"], b.name)
        }
    }
}
