import Foundation
import XCTest
import SettleBase
import SettleModel
import SettleLedger
import SettleHuawei
@testable import SettleHuaweiModule
import SettleTesting

/// What a store module reports of its own accord, on both engines (issue 34): a refund taken back
/// once from the order holding the purchase and never delivered to one waiting for it, an order
/// for a purchase nobody enqueued, and Huawei's stored notifications and history cursor.
extension LedgerContractTests {
    func huaweiOrder(_ store: any LedgerStore, _ id: String, purchaseOrderId: String) throws {
        var order = NewOrder(orderId: id, userId: "u-1", productId: "hw_coins", store: .huawei)
        order.storeProof = HuaweiProof(purchaseOrderId: purchaseOrderId, purchaseToken: "tok-" + purchaseOrderId).storeProof
        _ = try store.enqueue(order)
    }

    func delivered(_ b: LedgerBackEnd, _ id: String, grantKey: String) throws {
        let claimed = try XCTUnwrap(try b.store.claim(orderId: id, owner: me, leaseSeconds: 60)?.order, b.name)
        let purchase = VerifiedPurchase(transactionId: grantKey, originalTransactionId: grantKey, productId: "hw_coins",
                                        environment: "production", quantity: 1, purchaseDateMs: 1, expiresDateMs: nil)
        guard case .delivering = try b.store.recordVerified(orderId: id, owner: me, fence: claimed.fencingToken, match: .only(purchase),
                                                            deliveryLeaseSeconds: 60, history: entry) else { return XCTFail(b.name) }
        XCTAssertTrue(try b.store.markFinished(orderId: id, owner: me, fence: claimed.fencingToken,
                                               history: HistoryEntry(at: 0, kind: .delivery, outcome: "delivered")), b.name)
    }

    func revocations(_ b: LedgerBackEnd) throws -> [String] {
        try b.store.reading { db in try db.query("SELECT transaction_id, order_id FROM revocations ORDER BY transaction_id") }
            .map { "\($0.string("transaction_id") ?? "") \($0.string("order_id") ?? "")" }
    }

    func testStoreRefund_revokesTheHolderOnce_rejectsTheWaiting_andTheVerifyingNeverDelivers_onEveryBackEnd() throws {
        try onEachBackEnd { b in
            try huaweiOrder(b.store, "o-held", purchaseOrderId: "po-held")
            try delivered(b, "o-held", grantKey: "po-held")
            func refund(_ key: String) throws -> [String: String] {
                try b.store.applyStoreRefund(store: .huawei, grantKey: key, kind: "REVOKE", reason: "REFUND_TRANSACTION",
                                             why: "Huawei revoked \(key)", source: "test")
            }
            XCTAssertEqual(try refund("po-held"), ["o-held": "revoke_queued"], b.name)
            XCTAssertEqual(try refund("po-held"), ["o-held": "revoke_already_queued"], b.name)
            XCTAssertEqual(try revocations(b), ["po-held o-held"], "\(b.name): one revoke, however often it is reported")
            XCTAssertEqual(try b.store.orderRecord("o-held")?.order.refund?.kind, "REVOKE", b.name)

            try huaweiOrder(b.store, "o-wait", purchaseOrderId: "po-wait")
            XCTAssertEqual(try refund("po-wait"), ["o-wait": "never_delivered"], b.name)
            XCTAssertEqual(try state(b.store, "o-wait"), .rejected, b.name)
            XCTAssertEqual(try b.store.orderRecord("o-wait")?.order.reason, "refunded", b.name)

            try huaweiOrder(b.store, "o-busy", purchaseOrderId: "po-busy")
            let claimed = try XCTUnwrap(try b.store.claim(orderId: "o-busy", owner: me, leaseSeconds: 60)?.order, b.name)
            XCTAssertEqual(try refund("po-busy"), ["o-busy": "refund_recorded"], b.name)
            let purchase = VerifiedPurchase(transactionId: "po-busy", originalTransactionId: "po-busy", productId: "hw_coins",
                                            environment: "production", quantity: 1, purchaseDateMs: 1, expiresDateMs: nil)
            guard case .rejected(.refunded, _) = try b.store.recordVerified(orderId: "o-busy", owner: me, fence: claimed.fencingToken,
                                                                           match: .only(purchase), deliveryLeaseSeconds: 60, history: entry) else {
                return XCTFail("\(b.name): a purchase refunded while it was verified was not rejected")
            }
            XCTAssertEqual(try refund("po-nobody"), [:], b.name)
            XCTAssertEqual(try revocations(b), ["po-held o-held"], b.name)

            // Set aside while holding its grant (the store refused to hear of the delivery): the goods
            // may be out, so the refund owes a revoke, and the order is never delivered again.
            try huaweiOrder(b.store, "o-aside", purchaseOrderId: "po-aside")
            try delivered(b, "o-aside", grantKey: "po-aside")
            try b.store.writing { db in try db.query("UPDATE orders SET state = 'needs_attention', reason = 'store_finish_refused', finished_at = NULL WHERE order_id = 'o-aside'") }
            XCTAssertEqual(try refund("po-aside"), ["o-aside": "revoke_queued"], b.name)
            XCTAssertEqual(try state(b.store, "o-aside"), .rejected, b.name)
            XCTAssertEqual(try revocations(b), ["po-aside o-aside", "po-held o-held"], b.name)
        }
    }

    func testReportedOrder_isCreatedOnce_withItsOrigin_andItsProofFindsIt_onEveryBackEnd() throws {
        try onEachBackEnd { b in
            let proof = HuaweiProof(purchaseOrderId: "po-r", purchaseToken: "tok-r").storeProof
            XCTAssertTrue(try b.store.createReportedOrder(orderId: "huawei-po-r", userId: "", productId: "hw_coins", store: .huawei,
                                                          proof: proof, accountId: "payload-1", origin: "huawei_notification",
                                                          detail: "reported"), b.name)
            XCTAssertFalse(try b.store.createReportedOrder(orderId: "huawei-po-r", userId: "u-2", productId: "hw_coins", store: .huawei,
                                                           proof: proof, accountId: nil, origin: "huawei_notification", detail: "again"), b.name)
            let order = try XCTUnwrap(try b.store.orderRecord("huawei-po-r")?.order, b.name)
            XCTAssertEqual(order.origin, "huawei_notification", b.name)
            XCTAssertEqual(order.userId, "", b.name)
            XCTAssertEqual(order.storeProof, proof, b.name)
            XCTAssertEqual(try b.store.orders(store: .huawei, proofKey: "po-r").map(\.orderId), ["huawei-po-r"], b.name)
        }
    }

    func testHuaweiNotifications_areStoredOnce_claimedByOneHost_andTheCursorNeverGoesBack_onEveryBackEnd() throws {
        try onEachBackEnd { b in
            let parts = HuaweiNotificationParts(requestId: "req-1", type: "REVOKE", subtype: nil, purchaseOrderId: "po-1", payload: "{}")
            XCTAssertTrue(try b.store.storeHuaweiNotification(parts, source: "endpoint"), b.name)
            XCTAssertFalse(try b.store.storeHuaweiNotification(parts, source: "history"), "\(b.name): a repeat is not stored again")
            let other = try b.another()
            let mine = try b.store.claimHuaweiNotifications(limit: 10, leaseSeconds: 60)
            XCTAssertEqual(mine.map(\.requestId), ["req-1"], b.name)
            XCTAssertEqual(try other.claimHuaweiNotifications(limit: 10, leaseSeconds: 60, owner: remote), [], "\(b.name): claimed once")
            XCTAssertTrue(try b.store.finishHuaweiNotification(mine[0], outcome: "revoked", detail: nil, orderId: nil), b.name)
            XCTAssertEqual(try b.store.huaweiNotification(requestId: "req-1")?.outcome, "revoked", b.name)
            XCTAssertNil(try b.store.huaweiHistoryCursor(), b.name)
            try b.store.advanceHuaweiHistoryCursor(to: 2_000)
            try other.advanceHuaweiHistoryCursor(to: 1_000)
            XCTAssertEqual(try b.store.huaweiHistoryCursor(), 2_000, "\(b.name): never moved back")
        }
    }
}
