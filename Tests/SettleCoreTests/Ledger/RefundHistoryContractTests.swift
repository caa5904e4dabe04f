import Foundation
import SettleTesting
import XCTest
@testable import SettleApp
@testable import SettleBase
@testable import SettleModel
@testable import SettleLedger
@testable import SettleEngine
@testable import SettleAppStore
@testable import SettleAppStoreModule
@testable import SettleGooglePlayModule
import SettleHuawei
import SettleOneStore

/// Refund history per customer (issue 37) on both engines: each store's own refund path ends in
/// the order's refund, and the buyer's count, the overview's flagged customers and the metric's
/// last hour all read it; a Family Sharing revoke, another user's refund, a replay and a transfer
/// are each counted as the docs say.
extension LedgerContractTests {
    /// Claims `id`, reserves `purchase` for it and finishes it: delivered, holding its grant.
    private func deliver(_ b: LedgerBackEnd, _ id: String, _ purchase: VerifiedPurchase) throws {
        let claimed = try XCTUnwrap(try b.store.claim(orderId: id, owner: me, leaseSeconds: 60)?.order, b.name)
        guard case .delivering = try b.store.recordVerified(orderId: id, owner: me, fence: claimed.fencingToken,
                                                            match: Match(candidates: [purchase], named: true),
                                                            deliveryLeaseSeconds: 60, history: entry) else {
            return XCTFail("\(b.name): \(id) was not reserved")
        }
        XCTAssertTrue(try b.store.markFinished(orderId: id, owner: me, fence: claimed.fencingToken, history: entry),
                      b.name)
    }

    private func key(_ id: String, product: String) -> VerifiedPurchase {
        VerifiedPurchase(transactionId: id, originalTransactionId: id, productId: product, environment: "Production",
                         quantity: 1, purchaseDateMs: 1, expiresDateMs: nil, grantKey: id)
    }

    private func appleOrder(_ b: LedgerBackEnd, _ id: String, user: String, transaction: String) throws {
        _ = try b.store.enqueue(NewOrder(orderId: id, userId: user, productId: world.coins, transactionId: transaction,
                                         receipt: world.receipt(id)))
        try deliver(b, id, purchase(transaction))
    }

    private func storeOrder(_ b: LedgerBackEnd, _ id: String, user: String, store: Store, proof: StoreProof) throws {
        var order = NewOrder(orderId: id, userId: user, productId: world.coins, store: store)
        order.storeProof = proof
        _ = try b.store.enqueue(order)
        try deliver(b, id, key(proof.key ?? id, product: world.coins))
    }

    private func playOrder(_ b: LedgerBackEnd, _ id: String, user: String, token: PurchaseToken,
                           googleOrderId: String) throws {
        _ = try b.store.enqueue(NewOrder(orderId: id, userId: user, productId: "gems_100", appAccountToken: user,
                                         store: .googlePlay, purchaseToken: token))
        try deliver(b, id, key(googleOrderId, product: "gems_100"))
    }

    /// The order handed to the hook carries its buyer's refunds as counted in the transaction
    /// that reserved its grant: a refund recorded before it counts, another user's does not.
    func testRecordVerified_countsTheBuyersRefunds_asTheGrantIsReserved() throws {
        try onEachBackEnd { b in
            try appleOrder(b, "a-1", user: "u-r", transaction: "9200")
            XCTAssertEqual(try b.store.ingest(try appleNotification("REFUND", transaction: "9200"), source: "endpoint",
                                              rules: rules).outcome, "revoke_queued", b.name)
            try appleOrder(b, "a-other", user: "u-other", transaction: "9201")
            _ = try b.store.ingest(try appleNotification("REFUND", transaction: "9201"), source: "endpoint", rules: rules)
            for (id, user, transaction, expected) in [("a-2", "u-r", "9202", 1), ("a-3", "u-new", "9203", 0)] {
                _ = try b.store.enqueue(NewOrder(orderId: id, userId: user, productId: world.coins, transactionId: transaction,
                                                 receipt: world.receipt(id)))
                let claimed = try XCTUnwrap(try b.store.claim(orderId: id, owner: me, leaseSeconds: 60)?.order, b.name)
                guard case let .delivering(order) = try b.store.recordVerified(
                    orderId: id, owner: me, fence: claimed.fencingToken, match: Match(candidates: [purchase(transaction)], named: true),
                    deliveryLeaseSeconds: 60, history: entry) else { return XCTFail("\(b.name): \(id) was not reserved") }
                XCTAssertEqual(order.refunds90d, expected, "\(b.name): \(id)")
                XCTAssertEqual(order.refunds90d, try b.store.refundHistory(of: user, now: world.time.unixSeconds).count, b.name)
            }
        }
    }

    func testRefundHistory_countsEachStoresOwnRefundPath_forTheBuyerOnly_onceEach_notAFamilyRevoke() throws {
        try onEachBackEnd { b in
            let user = "u-refunds"
            let sale = "\(b.name)-R1"
            // App Store: Apple's REFUND notification, then the same refund told again (a replay
            // of the notification, and another notification of it).
            try appleOrder(b, "a-1", user: user, transaction: "9100")
            let refund = try appleNotification("REFUND", transaction: "9100")
            XCTAssertEqual(try b.store.ingest(refund, source: "endpoint", rules: rules).outcome, "revoke_queued",
                           b.name)
            _ = try b.store.ingest(refund, source: "history", rules: rules)
            _ = try b.store.ingest(try appleNotification("REFUND", transaction: "9100"), source: "history",
                                   rules: rules)
            // Family Sharing took a shared purchase back: not this customer's refund.
            try appleOrder(b, "a-family", user: user, transaction: "9101")
            let family = try appleNotification("REVOKE", transaction: "9101")
            XCTAssertEqual(try b.store.ingest(family, source: "endpoint", rules: rules).outcome, "revoke_queued",
                           b.name)
            XCTAssertEqual(try b.store.orderRecord("a-family")?.order.refund?.kind, "REVOKE", b.name)
            // Google Play: a voided purchase (the poll, then the notification of the same one).
            let token = PurchaseToken("tok-refunds-\(b.name)-AO-J1OxYz.abcdefghijklmnopqrstuvwxyz")!
            try playOrder(b, "g-1", user: user, token: token, googleOrderId: "GPA.9100")
            func void(_ source: String) throws -> [String: String] {
                try b.store.applyPlayVoided(token: token, googleOrderId: "GPA.9100", reason: "1", source: source)
            }
            XCTAssertEqual(try void("voided_poll"), ["g-1": "revoke_queued"], b.name)
            XCTAssertEqual(try void("rtdn"), ["g-1": "already_recorded"], b.name)
            // Huawei: a revoke notification (REFUND_TRANSACTION), as its inbox records it.
            try storeOrder(b, "h-1", user: user, store: .huawei,
                           proof: HuaweiProof(purchaseOrderId: "po-9100", purchaseToken: "tok-po-9100").storeProof)
            XCTAssertEqual(try b.store.applyStoreRefund(store: .huawei, grantKey: "po-9100", kind: "REVOKE",
                                                        reason: "REFUND_TRANSACTION", why: "Huawei revoked po-9100",
                                                        source: "huawei notification"),
                           ["h-1": "revoke_queued"], b.name)
            // ONE store: a cancelled purchase, as its PNS inbox records it; told twice.
            let oneProof = OneStoreProof(productId: world.coins, purchaseToken: "tok-one", purchaseId: "one-9100")
            try storeOrder(b, "one-1", user: user, store: .oneStore, proof: oneProof.storeProof)
            for _ in 0..<2 {
                _ = try b.store.applyStoreRefund(store: .oneStore, grantKey: "one-9100", kind: "CANCELED", reason: nil,
                                                 why: "ONE store cancelled one-9100", source: "one store PNS")
            }
            // The fake third store: its own refund notice.
            try storeOrder(b, "bog-1", user: user, store: .bogus, proof: BogusStoreAdapter.proof(sale: sale))
            XCTAssertEqual(try BogusStoreModule.reportRefund(sale, ledger: b.store), ["bog-1": "revoke_queued"], b.name)
            // Another customer's refund counts for that customer only.
            try storeOrder(b, "bog-other", user: "u-other", store: .bogus,
                           proof: BogusStoreAdapter.proof(sale: sale + "-other"))
            _ = try BogusStoreModule.reportRefund(sale + "-other", ledger: b.store)

            let now = world.time.unixSeconds
            let history = try b.store.refundHistory(of: user, now: now)
            XCTAssertEqual(history.count, 5,
                           "\(b.name): one a store, each once; the family revoke is not theirs: \(history.entries)")
            XCTAssertEqual(Set(history.entries.map(\.store)), [.appStore, .googlePlay, .huawei, .oneStore, .bogus],
                           b.name)
            XCTAssertEqual(Set(history.entries.map(\.orderId)), ["a-1", "g-1", "h-1", "one-1", "bog-1"], b.name)
            XCTAssertEqual(try b.store.refundHistory(of: "u-other", now: now).entries.map(\.orderId), ["bog-other"],
                           b.name)
            XCTAssertEqual(try b.store.refundHistory(of: "u-nobody", now: now).count, 0, b.name)

            let flagged = try b.store.frequentRefunders(atLeast: 3, now: now)
            XCTAssertEqual(flagged.customers, [FrequentRefunders.Customer(userId: user, refunds: 5)], b.name)
            XCTAssertEqual(flagged.total, 1, b.name)
            XCTAssertEqual(try b.store.frequentRefunders(atLeast: 1, now: now).customers.map(\.userId),
                           [user, "u-other"], b.name)

            let lastHour = try b.store.summary(OrderFilter(limit: 0)).customerRefundsLastHour
            XCTAssertEqual(lastHour[.appStore], 1, "\(b.name): the family revoke is not counted")
            XCTAssertEqual(lastHour[.googlePlay], 1, b.name)
            XCTAssertEqual(lastHour[.huawei], 1, b.name)
            XCTAssertEqual(lastHour[.oneStore], 1, b.name)
            XCTAssertEqual(lastHour[.bogus], 2, b.name)
            XCTAssertEqual(try b.store.summary(OrderFilter(userId: user, limit: 0)).customerRefundsLastHour, [:],
                           "\(b.name): a customer's status carries no ledger-wide rate")

            // Apple reversed its refund: it no longer counts against the customer.
            let reversed = try appleNotification("REFUND_REVERSED", transaction: "9100")
            XCTAssertEqual(try b.store.ingest(reversed, source: "endpoint", rules: rules).outcome, "revoke_cancelled",
                           b.name)
            XCTAssertEqual(try b.store.refundHistory(of: user, now: now).count, 4,
                           "\(b.name): a reversed refund is none")

            world.time.advance(by: 3601)
            let lastHourLater = try b.store.customerRefundsByStore(since: world.time.unixSeconds - 3600)
            XCTAssertEqual(lastHourLater.values.reduce(0, +), 0, b.name)
            world.time.advance(by: Double(RefundHistory.windowSeconds))
            XCTAssertEqual(try b.store.refundHistory(of: user, now: world.time.unixSeconds).count, 0,
                           "\(b.name): refunds older than 90 days are not counted")
            XCTAssertEqual(try b.store.frequentRefunders(atLeast: 1, now: world.time.unixSeconds).total, 0, b.name)
        }
    }

    /// Support moved a purchase to another user (`settle transfer`): its refund stays the buyer's.
    func testRefundHistory_ofATransferredOrder_isTheBuyers_notTheNewHolders_onEveryBackEnd() throws {
        try onEachBackEnd { b in
            let sale = "\(b.name)-T1"
            try storeOrder(b, "bog-t", user: "u-buyer", store: .bogus, proof: BogusStoreAdapter.proof(sale: sale))
            let now = world.time.unixSeconds
            try b.execute("""
                INSERT INTO support_actions(order_id, kind, number, state, step, from_user, to_user, note, requested_by,
                                            requested_at, done_at, next_attempt_at, updated_at)
                VALUES ('bog-t', 'transfer', 1, 'done', 'done', 'u-buyer', 'u-holder', 'T-1', 'alice via cli',
                        \(now), \(now), \(now), \(now));
                UPDATE orders SET user_id = 'u-holder' WHERE order_id = 'bog-t';
                """)
            _ = try BogusStoreModule.reportRefund(sale, ledger: b.store)
            XCTAssertEqual(try b.store.refundHistory(of: "u-buyer", now: now).entries.map(\.orderId), ["bog-t"], b.name)
            XCTAssertEqual(try b.store.refundHistory(of: "u-holder", now: now).count, 0,
                           "\(b.name): the holder asked for nothing")
            XCTAssertEqual(try b.store.frequentRefunders(atLeast: 1, now: now).customers.map(\.userId), ["u-buyer"],
                           b.name)
        }
    }

    /// `refunds.hold_after 2`: a customer with two refunds waits for a person on their next grant,
    /// before the hook (no purchase reserved, no call); a person's retry grants it, with the count,
    /// and it is never held again; another customer's order goes on in the same pass.
    func testHoldAfter_holdsAFlaggedCustomersNextGrant_beforeTheHook_andARetryGrantsItOnce_onEveryBackEnd() throws {
        try onEachBackEnd { b in
            let shop = BogusStoreModule.shop
            shop.reset()
            try world.writeConfig(hook: try world.hook("refunds-\(b.name).sh", exit: 0),
                                  overrides: [("refunds", .object([("hold_after", .number(2))]))])
            let reconciler = try Reconciler.configured(try world.configuration(), ledger: b.store, environment: [:],
                                                       log: .silent, modules: TestStores.modules)
            func order(_ id: String, user: String) throws {
                shop.sell("\(b.name)-\(id)", productId: world.coins, to: user)
                var new = NewOrder(orderId: id, userId: user, productId: world.coins, store: .bogus)
                new.storeProof = BogusStoreAdapter.proof(sale: "\(b.name)-\(id)")
                _ = try b.store.enqueue(new)
            }
            func payload(_ id: String) throws -> JSONValue {
                try JSONValue.parse(try Data(contentsOf: URL(fileURLWithPath: world.folder + "/payload-\(id).json")))
            }
            try order("h-1", user: "u-h")
            try order("h-2", user: "u-h")
            XCTAssertEqual(try reconciler.runPass().finished, 2, b.name)
            XCTAssertEqual(try payload("h-1")["refunds_90d"], .number(0), "\(b.name): a count of none is a count")
            for id in ["h-1", "h-2"] { try BogusStoreModule.reportRefund("\(b.name)-\(id)", ledger: b.store) }

            try order("h-3", user: "u-h")
            try order("x-1", user: "u-x")
            let before = world.deliveries.count
            _ = try reconciler.runPass()
            let held = try XCTUnwrap(try b.store.orderRecord("h-3"), b.name)
            XCTAssertEqual(held.order.state, .needsAttention, b.name)
            XCTAssertEqual(held.order.reason, AttentionReason.repeatRefunder.rawValue, b.name)
            XCTAssertNil(try b.store.grantHolder(transactionId: "\(b.name)-h-3"),
                         "\(b.name): no purchase reserved for a held order")
            let hold = try XCTUnwrap(held.history.last?.detail, b.name)
            XCTAssertTrue(hold.hasPrefix("repeat_refunder: user u-h: 2 (bogus 2) refunds"), "\(b.name): \(hold)")
            XCTAssertTrue(hold.contains("h-1") && hold.contains("h-2"), "\(b.name): \(hold)")
            XCTAssertEqual(world.deliveries.count, before + 1,
                           "\(b.name): only the other customer's order reached the hook")
            XCTAssertEqual(try b.store.orderRecord("x-1")?.order.state, .finished, b.name)
            XCTAssertEqual(try payload("x-1")["refunds_90d"], .number(0), b.name)
            let next = Verdict(held.order, now: world.time.unixSeconds).next
            XCTAssertEqual(next?.contains("settle retry h-3"), true, "\(b.name): \(next ?? "no advice")")

            // A second pass leaves it to the person.
            _ = try reconciler.runPass()
            XCTAssertEqual(try b.store.orderRecord("h-3")?.order.state, .needsAttention, b.name)
            XCTAssertFalse(try b.store.releasedFromRefundHold(orderId: "h-3"), b.name)

            try b.store.retry(orderIds: ["h-3"], note: "T-9 checked with the customer",
                              by: Operator(name: "alice", channel: .cli))
            XCTAssertTrue(try b.store.releasedFromRefundHold(orderId: "h-3"), b.name)
            _ = try reconciler.runPass()
            XCTAssertEqual(try b.store.orderRecord("h-3")?.order.state, .finished, "\(b.name): released, it is granted")
            XCTAssertEqual(try payload("h-3")["refunds_90d"], .number(2), "\(b.name): the backend is told the count")
            XCTAssertEqual(world.deliveries.filter { $0 == "\(b.name)-h-3 h-3" }.count, 1, b.name)
        }
    }
}
