import Foundation
import SettleTesting
import XCTest
@testable import SettleBase
@testable import SettleConfig
@testable import SettleModel
@testable import SettleLedger
@testable import SettleDelivery
@testable import SettleEngine
@testable import SettleAppStoreModule
@testable import SettleGooglePlayModule

/// Transfers and redeliveries on every back end (issue 26): what the ledger records and refuses,
/// and what the pass's runner sends through real command hooks, step by step.
extension LedgerContractTests {
    var alice: Operator { Operator(name: "alice", channel: .web) }

    /// An order the hook granted: enqueued, verified, delivered, finished.
    func grantedOrder(_ store: any SettleLedger, _ id: String, transaction: String) throws {
        try enqueue(store, id, transaction: transaction)
        let claim = try XCTUnwrap(try store.claim(orderId: id, owner: me, leaseSeconds: 60)?.order)
        _ = try store.recordVerified(orderId: id, owner: me, fence: claim.fencingToken, match: .only(purchase(transaction)),
                                     deliveryLeaseSeconds: 60, history: entry)
        XCTAssertTrue(try store.markFinished(orderId: id, owner: me, fence: claim.fencingToken,
                                             history: HistoryEntry(at: 0, kind: .delivery, outcome: "delivered")))
    }

    /// A runner whose grant and revoke routes are scripts logging "<route> <key> <order>" to calls.log.
    func runner(_ store: any SettleLedger, grantExit: Int32 = 0, revokeExit: Int32 = 0, maxAttempts: Int = 3) throws -> SupportActionRunner {
        for (route, code) in [("grant", grantExit), ("revoke", revokeExit)] {
            try world.write("\(route)-route.sh", """
                #!/bin/sh
                payload=$(cat)
                echo "\(route) $SETTLE_IDEMPOTENCY_KEY $SETTLE_ORDER_ID" >> "\(world.folder)/calls.log"
                printf '%s' "$payload" > "\(world.folder)/doc-$SETTLE_IDEMPOTENCY_KEY.json"
                exit \(code)
                """, mode: 0o755)
        }
        func hook(_ route: String) -> CommandHook {
            CommandHook(arguments: [world.folder + "/\(route)-route.sh"], timeoutSeconds: 10, products: [:], baseEnvironment: [:])
        }
        return SupportActionRunner(ledger: store, grants: hook("grant"), revokes: .command(hook("revoke")), products: [:],
                                   policy: RetryPolicy(baseSeconds: 30, maxSeconds: 3600, maxAttempts: maxAttempts, random: { 0.5 }),
                                   log: Log(environment: [:], time: world.time, sink: { _ in }))
    }

    var calls: [String] {
        let path = world.folder + "/calls.log"
        defer { try? FileManager.default.removeItem(atPath: path) }
        return ((try? String(contentsOfFile: path, encoding: .utf8)) ?? "").split(separator: "\n").map(String.init)
    }

    func document(_ key: String) throws -> JSONValue {
        try JSONValue.parse(Data(contentsOf: URL(fileURLWithPath: world.folder + "/doc-\(key).json")))
    }

    func testTransfer_isRecorded_carriedOutStepByStep_andTheOrderBecomesTheNewUsers_onEveryBackEnd() throws {
        try onEachBackEnd { b in
            _ = calls
            try grantedOrder(b.store, "o-1", transaction: "700")
            let request = try b.store.requestTransfer(orderId: "o-1", toUser: "u-2", note: "ticket 1", by: alice)
            XCTAssertEqual(request, TransferRequest(orderId: "o-1", number: 1, fromUser: "u-1", toUser: "u-2", resumed: false), b.name)
            XCTAssertEqual(try b.store.orderRecord("o-1")?.history.last?.detail,
                           "transfer 1 to u-2 (from u-1) requested by alice via web: ticket 1", b.name)
            XCTAssertEqual(try runner(b.store).run(), 1, b.name)
            XCTAssertEqual(calls, ["revoke transfer:o-1:1:revoke o-1", "grant transfer:o-1:1:grant o-1"], b.name)
            XCTAssertEqual(try document("transfer:o-1:1:revoke")["user_id"], .string("u-1"), b.name)
            XCTAssertEqual(try document("transfer:o-1:1:grant")["user_id"], .string("u-2"), b.name)
            let record = try XCTUnwrap(try b.store.orderRecord("o-1"), b.name)
            XCTAssertEqual(record.order.userId, "u-2", b.name)
            XCTAssertEqual(record.history.suffix(2).map(\.outcome), ["transfer_revoked", "transfer_granted"], b.name)
            let action = try XCTUnwrap(try b.store.supportActions(orderId: "o-1").first, b.name)
            XCTAssertEqual(action.state, .done, b.name)
            XCTAssertEqual(action.requestedBy, "alice via web", b.name)
            XCTAssertNotNil(action.revokedAt, b.name)
            XCTAssertNotNil(action.grantedAt, b.name)
            XCTAssertEqual(try b.store.grantHolder(transactionId: "700"), "o-1", "the order keeps its grant (\(b.name))")
            XCTAssertEqual(try b.store.reading { try $0.query("SELECT note FROM grants WHERE order_id = 'o-1'").first?.string("note") },
                           "held by u-2 since transfer 1 from u-1", b.name)
            XCTAssertEqual(try runner(b.store).run(), 0, b.name)
            XCTAssertEqual(calls, [], "\(b.name): nothing twice")
        }
    }

    func testTransfer_isRefused_unlessGrantedByTheHook_notRefunded_anotherUser_andNoneOpen_onEveryBackEnd() throws {
        try onEachBackEnd { b in
            try enqueue(b.store, "pending", transaction: "710")
            try grantedOrder(b.store, "o-1", transaction: "711")
            try grantedOrder(b.store, "refunded", transaction: "712")
            try b.execute("UPDATE orders SET refunded_at = 5, refund_kind = 'REFUND' WHERE order_id = 'refunded'")
            func refused(_ id: String, to user: String = "u-2", _ expected: String) {
                XCTAssertThrowsError(try b.store.requestTransfer(orderId: id, toUser: user, note: "n", by: alice), b.name) { error in
                    guard case let .invalid(message)? = error as? LedgerError else { return XCTFail("\(b.name): \(error)") }
                    XCTAssertTrue(message.contains(expected), "\(b.name): \(message)")
                }
            }
            refused("pending", "order pending was never granted (pending); nothing to transfer")
            refused("refunded", "refunded or revoked")
            refused("o-1", to: "u-1", "already belongs to user u-1")
            refused("missing", "no order missing in the ledger")
            try b.store.requestTransfer(orderId: "o-1", toUser: "u-2", note: "n", by: alice)
            refused("o-1", to: "u-3", "has transfer 1 to u-2")
            XCTAssertThrowsError(try b.store.requestRedelivery(orderId: "o-1", note: "n", by: alice), b.name)
            XCTAssertThrowsError(try b.store.requestRedelivery(orderId: "pending", note: "n", by: alice), b.name) { error in
                XCTAssertTrue("\(error)".contains("was never granted through the hook"), "\(b.name): \(error)")
            }
            XCTAssertEqual(try b.store.supportActions(orderId: "o-1").count, 1, b.name)
        }
    }

    func testTransfer_whoseGrantFails_resumesAtTheGrant_andARefusalWaitsUntilAskedAgain_onEveryBackEnd() throws {
        try onEachBackEnd { b in
            _ = calls
            try grantedOrder(b.store, "o-1", transaction: "720")
            try b.store.requestTransfer(orderId: "o-1", toUser: "u-2", note: "n", by: alice)
            XCTAssertEqual(try runner(b.store, grantExit: 75).run(), 0, b.name)
            XCTAssertEqual(calls, ["revoke transfer:o-1:1:revoke o-1", "grant transfer:o-1:1:grant o-1"], b.name)
            var action = try XCTUnwrap(try b.store.supportActions(orderId: "o-1").first, b.name)
            XCTAssertEqual([action.state.rawValue, action.step.rawValue], ["pending", "grant"], b.name)
            XCTAssertEqual(action.attempts, 1, b.name)
            XCTAssertEqual(try b.store.orderRecord("o-1")?.order.userId, "u-1", b.name)
            // Refused for good: it waits, its reason kept.
            try b.execute("UPDATE support_actions SET next_attempt_at = 0")
            XCTAssertEqual(try runner(b.store, grantExit: 65).run(), 0, b.name)
            XCTAssertEqual(calls, ["grant transfer:o-1:1:grant o-1"], "\(b.name): never revoked again")
            action = try XCTUnwrap(try b.store.supportActions(orderId: "o-1").first, b.name)
            XCTAssertEqual(action.state, .waiting, b.name)
            XCTAssertTrue(action.lastError?.contains("exit 65") == true, "\(b.name): \(action)")
            XCTAssertEqual(try runner(b.store).run(), 0, "\(b.name): a waiting transfer is not due")
            let summary = try b.store.summary(OrderFilter(limit: 0))
            XCTAssertEqual([summary.supportActionsWaitingCount], [1], b.name)
            XCTAssertEqual(summary.supportActionsWaiting, ["o-1"], b.name)
            // Asked again: due now, at the grant, under the same key.
            XCTAssertTrue(try b.store.requestTransfer(orderId: "o-1", toUser: "u-2", note: "fixed", by: alice).resumed, b.name)
            XCTAssertEqual(try runner(b.store).run(), 1, b.name)
            XCTAssertEqual(calls, ["grant transfer:o-1:1:grant o-1"], b.name)
            XCTAssertEqual(try b.store.orderRecord("o-1")?.order.userId, "u-2", b.name)
        }
    }

    func testARefundDuringATransfer_isRevokedOnce_fromWhoeverHoldsThePurchase_onEveryBackEnd() throws {
        try onEachBackEnd { b in
            _ = calls
            func refund(_ id: String, _ txn: String) throws {
                try b.execute("UPDATE orders SET refunded_at = 5, refund_kind = 'REFUND' WHERE order_id = '\(id)'")
                try b.execute("""
                    INSERT INTO revocations(transaction_id, order_id, kind, next_attempt_at, created_at, updated_at)
                    VALUES ('\(txn)', '\(id)', 'REFUND', 0, 0, 0)
                    """)
            }
            // Refunded before the transfer ran: the transfer is cancelled, the refund's revoke goes to the holder.
            try grantedOrder(b.store, "o-1", transaction: "730")
            try b.store.requestTransfer(orderId: "o-1", toUser: "u-2", note: "n", by: alice)
            try refund("o-1", "730")
            XCTAssertTrue(try b.store.claimDueRevocations(limit: 10, leaseSeconds: 60).isEmpty, "\(b.name): waits for the transfer")
            try runner(b.store).run()
            XCTAssertEqual(try b.store.supportActions(orderId: "o-1").first?.state, .cancelled, b.name)
            XCTAssertEqual(try b.store.claimDueRevocations(limit: 10, leaseSeconds: 60).map { $0.1.userId }, ["u-1"], b.name)

            // Refunded between the revoke and the grant: nothing granted, and the refund's revoke is not sent again.
            try grantedOrder(b.store, "o-2", transaction: "731")
            try b.store.requestTransfer(orderId: "o-2", toUser: "u-2", note: "n", by: alice)
            try runner(b.store, grantExit: 75).run()
            _ = calls
            try refund("o-2", "731")
            try b.execute("UPDATE support_actions SET next_attempt_at = 0 WHERE order_id = 'o-2'")
            try runner(b.store).run()
            XCTAssertEqual(calls, [], "\(b.name): no grant to the new user")
            XCTAssertEqual(try b.store.supportActions(orderId: "o-2").first?.state, .cancelled, b.name)
            XCTAssertEqual(try b.store.revocation(orderId: "o-2")?.state, "cancelled", b.name)
            XCTAssertEqual(try b.store.orderRecord("o-2")?.order.userId, "u-1", b.name)
        }
    }

    func testRedelivery_resendsTheLastThingFinished_underItsOriginalKey_onEveryBackEnd() throws {
        try onEachBackEnd { b in
            _ = calls
            try grantedOrder(b.store, "o-1", transaction: "740")
            let grant = try b.store.requestRedelivery(orderId: "o-1", note: "lost", by: alice)
            XCTAssertEqual([grant.target.rawValue, grant.idempotencyKey, grant.userId], ["grant", "740", "u-1"], b.name)
            XCTAssertEqual(try runner(b.store).run(), 1, b.name)
            XCTAssertEqual(calls, ["grant 740 o-1"], b.name)
            XCTAssertEqual(try document("740")["event"], .string("grant"), b.name)
            XCTAssertEqual(try b.store.orderRecord("o-1")?.history.last?.outcome, "redelivered", b.name)

            try b.store.requestTransfer(orderId: "o-1", toUser: "u-2", note: "n", by: alice)
            try runner(b.store).run()
            _ = calls
            let transferred = try b.store.requestRedelivery(orderId: "o-1", note: "lost again", by: alice)
            XCTAssertEqual([transferred.target.rawValue, transferred.idempotencyKey, transferred.userId],
                           ["transfer_grant", "transfer:o-1:1:grant", "u-2"], b.name)
            try runner(b.store).run()
            XCTAssertEqual(calls, ["grant transfer:o-1:1:grant o-1"], b.name)

            try b.execute("UPDATE orders SET refunded_at = 5, refund_kind = 'REFUND' WHERE order_id = 'o-1'")
            try b.execute("""
                INSERT INTO revocations(transaction_id, order_id, kind, state, next_attempt_at, created_at, updated_at)
                VALUES ('740', 'o-1', 'REFUND', 'pending', 0, 0, 0)
                """)
            XCTAssertThrowsError(try b.store.requestRedelivery(orderId: "o-1", note: "n", by: alice), b.name) { error in
                XCTAssertTrue("\(error)".contains("its revoke is still owed (pending)"), "\(b.name): \(error)")
            }
            try b.execute("UPDATE revocations SET state = 'revoked' WHERE order_id = 'o-1'")
            let revoke = try b.store.requestRedelivery(orderId: "o-1", note: "lost the refund", by: alice)
            XCTAssertEqual([revoke.target.rawValue, revoke.idempotencyKey], ["revoke", "revoke:740"], b.name)
            try runner(b.store).run()
            XCTAssertEqual(calls, ["revoke revoke:740 o-1"], b.name)
            XCTAssertEqual(try document("revoke:740")["user_id"], .string("u-2"), "\(b.name): from the holder")
        }
    }

    /// A refund cancels a redelivery of the grant it took back, pending or waiting for a person,
    /// in the refund's own transaction; a claim read before the refund sends nothing; asking for a
    /// redelivery of a refunded grant is refused naming the refund.
    func testARefund_cancelsRedeliveriesOfTheGrant_andARefundedGrantIsNeverReSent_onEveryBackEnd() throws {
        try onEachBackEnd { b in
            _ = calls
            // Pending (its hook failed once), then Google voids the purchase through the ledger's own path.
            try grantedOrder(b.store, "o-1", transaction: "760")
            try b.store.requestRedelivery(orderId: "o-1", note: "lost", by: alice)
            try runner(b.store, grantExit: 75).run()
            XCTAssertEqual(calls, ["grant 760 o-1"], b.name)
            try b.execute("UPDATE orders SET store = 'google_play', purchase_token = 'tok-760' WHERE order_id = 'o-1'")
            let voided = try b.store.applyPlayVoided(token: XCTUnwrap(PurchaseToken("tok-760")), googleOrderId: "760", reason: "1",
                                                     source: "voided purchases")
            XCTAssertEqual(voided["o-1"], "revoke_queued", b.name)
            let cancelled = try XCTUnwrap(try b.store.supportActions(orderId: "o-1").first)
            XCTAssertEqual(cancelled.state, .cancelled, b.name)
            XCTAssertTrue(cancelled.lastError?.hasPrefix("cancelled by the refund: Google Play voided purchase 760") == true, b.name)
            XCTAssertTrue(try b.store.orderRecord("o-1")?.history.contains { $0.outcome == "redeliver_cancelled" } == true, b.name)
            try b.execute("UPDATE support_actions SET next_attempt_at = 0")
            try runner(b.store).run()
            XCTAssertEqual(calls, [], "\(b.name): the refunded grant is not re-sent")
            XCTAssertThrowsError(try b.store.requestRedelivery(orderId: "o-1", note: "n", by: alice), b.name) { error in
                XCTAssertTrue("\(error)".contains("(refunded: VOIDED at"), "\(b.name): \(error)")
            }

            // Waiting for a person, then refunded (written as a backend's SQL would, past the ledger's
            // own cancellation): asking again is refused, naming the refund.
            try grantedOrder(b.store, "o-2", transaction: "761")
            try b.store.requestRedelivery(orderId: "o-2", note: "lost", by: alice)
            try runner(b.store, grantExit: 65).run()
            XCTAssertEqual(try b.store.supportActions(orderId: "o-2").first?.state, .waiting, b.name)
            try b.execute("UPDATE orders SET refunded_at = 5, refund_kind = 'REFUND' WHERE order_id = 'o-2'")
            XCTAssertThrowsError(try b.store.requestRedelivery(orderId: "o-2", note: "again", by: alice), b.name) { error in
                XCTAssertTrue("\(error)".contains("was refunded (REFUND"), "\(b.name): \(error)")
                XCTAssertTrue("\(error)".contains("its grant is not re-sent"), "\(b.name): \(error)")
            }
            // A claim that read the order before the refund: the runner cancels it and sends nothing.
            try b.execute("UPDATE support_actions SET state = 'pending', next_attempt_at = 0 WHERE order_id = 'o-2'")
            _ = calls
            try runner(b.store).run()
            XCTAssertEqual(calls, [], "\(b.name): nothing re-sent")
            XCTAssertEqual(try b.store.supportActions(orderId: "o-2").first?.state, .cancelled, b.name)

            // Refunded, its revoke cancelled (nothing owed), the last thing finished a grant: refused.
            try grantedOrder(b.store, "o-3", transaction: "762")
            try b.execute("UPDATE orders SET refunded_at = 5, refund_kind = 'REVOKE' WHERE order_id = 'o-3'")
            XCTAssertThrowsError(try b.store.requestRedelivery(orderId: "o-3", note: "n", by: alice), b.name) { error in
                XCTAssertTrue("\(error)".contains("was refunded (REVOKE"), "\(b.name): \(error)")
            }
        }
    }
}

/// Who bought a purchase is not who holds its grant (issue 32): a transfer moves the holder, never
/// the buyer binding, and only orders whose binding was verified (settle granted them) vouch for
/// whose account token or account id a store-only purchase carries.
extension LedgerContractTests {
    func tokenRules() -> NotificationRules {
        NotificationRules(eligibility: PurchaseEligibility(products: [world.coins: .consumable], binding: UserBinding(tokenSource: .order)),
                          answerConsumptionRequests: true)
    }

    /// An order of `user` carrying account token `token`, granted by settle (or only enqueued).
    func tokenOrder(_ store: any SettleLedger, _ id: String, user: String, token: String, transaction: String, granted: Bool = true,
                    play: Bool = false) throws {
        _ = try store.enqueue(NewOrder(orderId: id, userId: user, productId: play ? "gems_100" : world.coins,
                                       transactionId: play ? nil : transaction, receipt: play ? nil : world.receipt(id),
                                       appAccountToken: token, store: play ? .googlePlay : .appStore,
                                       purchaseToken: play ? PurchaseToken("tok-\(id)") : nil))
        guard granted else { return }
        let claim = try XCTUnwrap(try store.claim(orderId: id, owner: me, leaseSeconds: 60)?.order)
        _ = try store.recordVerified(orderId: id, owner: me, fence: claim.fencingToken, match: .only(purchase(transaction)),
                                     deliveryLeaseSeconds: 60, history: entry)
        XCTAssertTrue(try store.markFinished(orderId: id, owner: me, fence: claim.fencingToken,
                                             history: HistoryEntry(at: 0, kind: .delivery, outcome: "delivered")))
    }

    func testATransfer_movesTheHolder_neverTheBuyer_forTheStoresLaterPurchases_onEveryBackEnd() throws {
        try onEachBackEnd { b in
            _ = calls
            let alice = "0a1b2c3d-0000-4000-8000-00000000a11c"
            try tokenOrder(b.store, "o-alice", user: "u-alice", token: alice, transaction: "780")
            try b.store.requestTransfer(orderId: "o-alice", toUser: "u-carol", note: "wrong account", by: self.alice)
            try runner(b.store).run()
            XCTAssertEqual(try b.store.orderRecord("o-alice")?.order.userId, "u-carol", "\(b.name): the holder moved")
            // Apple: a purchase the backend never saw, carrying alice's token, is alice's.
            let bought = try appleNotification("ONE_TIME_CHARGE", transaction: "781", user: alice)
            XCTAssertEqual(try b.store.ingest(bought, source: "endpoint", rules: tokenRules()).outcome, "order_created", b.name)
            XCTAssertEqual(try b.store.orderRecord("apple-781")?.order.userId, "u-alice", "\(b.name): the buyer, not the holder")

            // Google: the one account id of bob's transferred Play order is still bob's.
            try tokenOrder(b.store, "p-bob", user: "u-bob", token: "acct-bob", transaction: "GPA.782", play: true)
            try b.store.requestTransfer(orderId: "p-bob", toUser: "u-carol", note: "n", by: self.alice)
            try runner(b.store).run()
            XCTAssertEqual(try b.store.orderRecord("p-bob")?.order.userId, "u-carol", b.name)
            XCTAssertEqual(try b.store.playUser(accountId: "acct-bob"), "u-bob", "\(b.name): the buyer, not the holder")
        }
    }

    func testOnlyAnOrderWhoseBindingWasVerified_vouchesForAToken_onEveryBackEnd() throws {
        try onEachBackEnd { b in
            // A backend's order naming someone else's token, never verified (or refused): it vouches for nobody.
            let victim = "0a1b2c3d-0000-4000-8000-0000000000b0"
            try tokenOrder(b.store, "o-mallory", user: "u-mallory", token: victim, transaction: "790", granted: false)
            try b.execute("UPDATE orders SET state = 'needs_attention', reason = 'token_unverifiable' WHERE order_id = 'o-mallory'")
            let bought = try appleNotification("ONE_TIME_CHARGE", transaction: "791", user: victim)
            XCTAssertEqual(try b.store.ingest(bought, source: "endpoint", rules: tokenRules()).outcome, "unclaimed", b.name)
            XCTAssertEqual(try b.store.orderRecord("apple-791")?.order.userId, "", "\(b.name): a person decides")

            try tokenOrder(b.store, "p-mallory", user: "u-mallory", token: "acct-victim", transaction: "GPA.792", granted: false, play: true)
            XCTAssertNil(try b.store.playUser(accountId: "acct-victim"), b.name)
            // Once settle granted an order of the token's own user, that order vouches.
            try tokenOrder(b.store, "p-victim", user: "u-victim", token: "acct-victim", transaction: "GPA.793", play: true)
            XCTAssertEqual(try b.store.playUser(accountId: "acct-victim"), "u-victim", b.name)
        }
    }
}

extension LedgerContractTests {
    /// Apple's consumption answer and Google's refund review say "delivered" only from this
    /// evidence: while a transfer is past its revoke and before its grant, the goods are with
    /// nobody, so neither store is told delivered (asked again later while it runs, no answer
    /// once it waits for a person).
    func testDeliveryEvidence_duringATransferBetweenItsRevokeAndItsGrant_isNotDelivered_onEveryBackEnd() throws {
        try onEachBackEnd { b in
            _ = calls
            try grantedOrder(b.store, "o-1", transaction: "850")
            guard case .delivered = try b.store.deliveryEvidence(transactionId: "850") else { return XCTFail(b.name) }
            try b.store.requestTransfer(orderId: "o-1", toUser: "u-2", note: "n", by: alice)
            try runner(b.store, grantExit: 75).run()
            XCTAssertEqual(calls, ["revoke transfer:o-1:1:revoke o-1", "grant transfer:o-1:1:grant o-1"], b.name)
            guard case let .inFlight(why) = try b.store.deliveryEvidence(transactionId: "850") else { return XCTFail(b.name) }
            XCTAssertTrue(why.contains("has not granted them to u-2 yet"), "\(b.name): \(why)")
            try b.execute("UPDATE support_actions SET state = 'waiting' WHERE order_id = 'o-1'")
            guard case let .unknown(waiting) = try b.store.deliveryEvidence(transactionId: "850") else { return XCTFail(b.name) }
            XCTAssertTrue(waiting.contains("the goods are with nobody"), "\(b.name): \(waiting)")
            try b.execute("UPDATE support_actions SET state = 'pending', next_attempt_at = 0 WHERE order_id = 'o-1'")
            try runner(b.store).run()
            guard case .delivered = try b.store.deliveryEvidence(transactionId: "850") else { return XCTFail(b.name) }
        }
    }
}
