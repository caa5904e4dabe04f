import Foundation
import SettleApp
import SettleTesting
import XCTest
import SettleBase
import SettleAppStoreSimulator

/// What notifications do to orders, through a running `settle run`: purchases found and granted
/// once whichever side tells first, refunds, refund requests, and history catching up.
class NotificationOrderTests: NotificationTestCase {
    /// Enqueues an order for StoreKit transaction `id` of the buyer (the app's side).
    func enqueueFromApp(_ orderId: String, transaction id: String) throws {
        try settle(expecting: 0, ["enqueue", "--order", orderId, "--user", buyer, "--product", world.coins, "--transaction", id])
    }

    func passes(_ daemon: SettleBinary.Running) -> Int { log(daemon).components(separatedBy: "pass.finished").count - 1 }

    func testPurchaseFromTheAppThenFromApple_isGrantedOnce() throws {
        try writeNotificationConfig()
        let (daemon, url) = try startDaemon()
        let notification = applePurchase("400", token: buyer)
        try enqueueFromApp("o-1", transaction: "400")
        daemon.send(SIGUSR1)
        XCTAssertTrue(eventually(within: 10) { stateInLedger("o-1") == "finished" }, log(daemon))
        XCTAssertEqual(try world.simulator.send(notification, to: url), 200)
        XCTAssertEqual(try statusJSON(["--notification", notification.uuid])["outcome"]?.looseString, "attached")
        XCTAssertNil(stateInLedger("apple-400"), "no second order")
        XCTAssertEqual(world.deliveries, ["400 o-1"])
    }

    func testPurchaseFromAppleThenFromTheApp_isGrantedOnce() throws {
        try writeNotificationConfig()
        let (daemon, url) = try startDaemon()
        XCTAssertEqual(try world.simulator.send(applePurchase("401", token: buyer), to: url), 200)
        XCTAssertTrue(eventually(within: 10) { stateInLedger("apple-401") == "finished" }, log(daemon))
        try enqueueFromApp("o-2", transaction: "401")
        daemon.send(SIGUSR1)
        XCTAssertTrue(eventually(within: 10) { stateInLedger("o-2") == "rejected" }, log(daemon))
        XCTAssertEqual(try order("o-2")["reason"]?.looseString, "already_granted")
        XCTAssertEqual(world.deliveries, ["401 apple-401"])
    }

    func testPurchaseWithoutAUser_waitsAsUnclaimed_untilSupportAssignsIt() throws {
        try writeNotificationConfig()
        let (daemon, url) = try startDaemon()
        XCTAssertEqual(try world.simulator.send(applePurchase("402", token: nil), to: url), 200)
        XCTAssertTrue(eventually(within: 10) { stateInLedger("apple-402") == "needs_attention" }, log(daemon))
        let unclaimed = try order("apple-402")
        XCTAssertEqual(unclaimed["reason"]?.looseString, "unclaimed_purchase")
        XCTAssertTrue(unclaimed["last_error"]?.looseString?.contains("settle assign apple-402 --user") == true)
        XCTAssertEqual(world.deliveries, [])
        try settle(expecting: 65, ["assign", "apple-999", "--user", buyer])
        try settle(expecting: 0, ["assign", "apple-402", "--user", buyer])
        daemon.send(SIGUSR1)
        XCTAssertTrue(eventually(within: 10) { stateInLedger("apple-402") == "finished" }, log(daemon))
        XCTAssertEqual(world.deliveries, ["402 apple-402"])
    }

    func testPurchaseFromApple_ofAUserWhoseIdIsUpperCase_isOrderedUnderTheUsersOwnSpelling() throws {
        // Apple writes the token in lower case; the backend's user id is the same UUID in upper case.
        try writeNotificationConfig()
        let (daemon, url) = try startDaemon()
        _ = applePurchase("404", token: buyer)
        try settle(expecting: 0, ["enqueue", "--order", "o-1", "--user", buyer.uppercased(), "--product", world.coins, "--transaction", "404"])
        daemon.send(SIGUSR1)
        XCTAssertTrue(eventually(within: 10) { stateInLedger("o-1") == "finished" }, log(daemon))
        XCTAssertEqual(try world.simulator.send(applePurchase("405", token: buyer), to: url), 200)
        XCTAssertTrue(eventually(within: 10) { stateInLedger("apple-405") == "finished" }, log(daemon))
        XCTAssertEqual(try order("apple-405")["user_id"]?.looseString, buyer.uppercased())
        XCTAssertEqual(world.deliveries, ["404 o-1", "405 apple-405"])
    }

    func testPurchaseOfAProductMissingFromTheConfiguration_isKeptAsAnOrderNeedingAPerson_neverForgotten() throws {
        try writeNotificationConfig()
        let (daemon, url) = try startDaemon()
        let notification = applePurchase("406", token: buyer, product: "com.example.game.unconfigured")
        XCTAssertEqual(try world.simulator.send(notification, to: url), 200)
        XCTAssertTrue(eventually(within: 10) { stateInLedger("apple-406") == "needs_attention" }, log(daemon))
        let kept = try order("apple-406")
        XCTAssertEqual(kept["reason"]?.looseString, "unknown_product")
        XCTAssertTrue(kept["last_error"]?.looseString?.contains("settle retry apple-406") == true, "\(kept)")
        XCTAssertEqual(try statusJSON(["--notification", notification.uuid])["order_id"]?.looseString, "apple-406")
        XCTAssertEqual(world.deliveries, [])
    }

    func testNotificationSentWhileDown_isFoundByHistoryAtStart_andDelivered() throws {
        try writeNotificationConfig()
        try historyStarted()
        let missed = applePurchase("403", token: buyer)
        XCTAssertNil(try world.simulator.send(missed, to: "http://127.0.0.1:9/apple/notifications/v2"), "nobody listens")
        let (daemon, _) = try startDaemon()
        XCTAssertTrue(eventually(within: 10) { stateInLedger("apple-403") == "finished" }, log(daemon))
        XCTAssertEqual(try statusJSON(["--notification", missed.uuid])["source"]?.looseString, "history")
        XCTAssertEqual(world.deliveries, ["403 apple-403"])
        let requests = world.simulator.notificationHistoryRequests
        XCTAssertEqual(Set(requests.map(\.environment)), [.production, .sandbox], "both environments when sandbox is accepted")
        XCTAssertTrue(requests.allSatisfy { $0.tokenProblem == nil })
        XCTAssertEqual(try rowCount("notification_cursor"), 2, "the point reached is persisted per environment")
    }

    func testRefundBeforeDelivery_marksTheOrderNeverToBeDelivered() throws {
        try writeNotificationConfig()
        let (daemon, url) = try startDaemon()
        // Apple cannot confirm the order yet: it waits, pending, for its next attempt.
        let purchase = world.scriptTransaction("404", appAccountToken: buyer, answers: [.error(status: 500, code: 5000001)])
        try enqueueFromApp("o-4", transaction: "404")
        daemon.send(SIGUSR1)
        XCTAssertTrue(eventually(within: 10) { passes(daemon) >= 2 && stateInLedger("o-4") == "pending" }, log(daemon))
        var refunded = purchase
        refunded.revocationDateMs = nowMs
        let refund = SimulatedNotification(type: "REFUND", transaction: refunded, bundleId: world.bundleId, signedDateMs: nowMs)
        XCTAssertEqual(try world.simulator.send(refund, to: url), 200)
        XCTAssertEqual(stateInLedger("o-4"), "rejected")
        let order = try order("o-4")
        XCTAssertEqual(order["reason"]?.looseString, "refunded")
        XCTAssertEqual(order["refund"]?["kind"]?.looseString, "REFUND")
        daemon.send(SIGUSR1)
        XCTAssertTrue(eventually(within: 10) { passes(daemon) >= 3 })
        XCTAssertEqual(world.deliveries, [])
        XCTAssertEqual(try listedOrderIds(["--refunded"]), ["o-4"])
    }

    func testRefundAfterDelivery_callsTheRevokeHookOnce_withItsOwnKey() throws {
        let revoke = try world.write("revoke.sh", """
            #!/bin/sh
            payload=$(cat)
            echo "$SETTLE_IDEMPOTENCY_KEY $SETTLE_ORDER_ID" >> "\(world.folder)/revokes.log"
            printf '%s' "$payload" > "\(world.folder)/revoke-payload.json"
            exit 0
            """, mode: 0o755)
        try writeNotificationConfig(delivery: .object([("command", .array([.string(world.folder + "/grant.sh")])),
                                                       ("revoke_command", .array([.string(revoke)]))]))
        let (daemon, url) = try startDaemon()
        let purchase = applePurchase("405", token: buyer)
        XCTAssertEqual(try world.simulator.send(purchase, to: url), 200)
        XCTAssertTrue(eventually(within: 10) { stateInLedger("apple-405") == "finished" }, log(daemon))
        var refunded = purchase.transaction!
        refunded.revocationDateMs = nowMs
        let refund = SimulatedNotification(type: "REFUND", transaction: refunded, bundleId: world.bundleId, signedDateMs: nowMs)
        XCTAssertEqual(try world.simulator.send(refund, to: url), 200)
        XCTAssertEqual(try world.simulator.send(refund, to: url), 200, "Apple's retry of the same notification")
        let revokes = { ((try? String(contentsOfFile: self.world.folder + "/revokes.log", encoding: .utf8)) ?? "").split(separator: "\n") }
        XCTAssertTrue(eventually(within: 10) { revokes().count == 1 }, log(daemon))
        daemon.send(SIGUSR1)
        XCTAssertTrue(eventually(within: 10) { passes(daemon) >= 3 })
        XCTAssertEqual(revokes(), ["revoke:405 apple-405"])
        let payload = try JSONValue.parse(Data(contentsOf: URL(fileURLWithPath: world.folder + "/revoke-payload.json")))
        XCTAssertEqual(payload["event"]?.looseString, "revoke")
        XCTAssertEqual(payload["idempotency_key"]?.looseString, "revoke:405")
        let history = try history("apple-405").compactMap { $0["kind"]?.looseString }
        XCTAssertTrue(history.contains("revoke"), "\(history)")
        XCTAssertEqual(try listedOrderIds(["--refunded"]), ["apple-405"])
        XCTAssertEqual(world.deliveries, ["405 apple-405"])
    }

    func testRefundAfterATransfer_revokesFromTheNewHolder_underTheRefundsKey() throws {
        let revoke = try world.write("revoke.sh", """
            #!/bin/sh
            payload=$(cat)
            user=$(printf '%s' "$payload" | sed -n 's/.*"user_id":"\\([^"]*\\)".*/\\1/p')
            echo "$SETTLE_IDEMPOTENCY_KEY $SETTLE_ORDER_ID $user" >> "\(world.folder)/revokes.log"
            exit 0
            """, mode: 0o755)
        try writeNotificationConfig(delivery: .object([("command", .array([.string(world.folder + "/grant.sh")])),
                                                       ("revoke_command", .array([.string(revoke)]))]))
        let (daemon, url) = try startDaemon()
        let purchase = applePurchase("420", token: buyer)
        XCTAssertEqual(try world.simulator.send(purchase, to: url), 200)
        XCTAssertTrue(eventually(within: 10) { stateInLedger("apple-420") == "finished" }, log(daemon))
        let other = "0b7c2a44-1d3e-4f5a-8b6c-7d8e9f0a1b2c"
        try settle(expecting: 0, ["transfer", "apple-420", "--to-user", other, "--note", "bought on the wrong account"])
        daemon.send(SIGUSR1)
        let revokes = { ((try? String(contentsOfFile: self.world.folder + "/revokes.log", encoding: .utf8)) ?? "").split(separator: "\n").map(String.init) }
        XCTAssertTrue(eventually(within: 10) { world.deliveries.count == 2 }, log(daemon))
        XCTAssertEqual(world.deliveries, ["420 apple-420", "transfer:apple-420:1:grant apple-420"])
        XCTAssertEqual(revokes(), ["transfer:apple-420:1:revoke apple-420 \(buyer)"])
        XCTAssertTrue(eventually(within: 10) { (try? order("apple-420")["user_id"]) == .string(other) })

        var refunded = purchase.transaction!
        refunded.revocationDateMs = nowMs
        let refund = SimulatedNotification(type: "REFUND", transaction: refunded, bundleId: world.bundleId, signedDateMs: nowMs)
        XCTAssertEqual(try world.simulator.send(refund, to: url), 200)
        XCTAssertTrue(eventually(within: 10) { revokes().count == 2 }, log(daemon))
        XCTAssertEqual(revokes().last, "revoke:420 apple-420 \(other)", "the refund takes it back from the one who holds it")
    }

    /// A redelivery waiting out its hook's failure when the purchase is refunded: the refund's
    /// transaction cancels it (history names the refund), the revoke runs, and the grant is never
    /// re-sent, even once the hook works and the redelivery would have been due. Asking again is
    /// refused (exit 65) naming the refund.
    func testARefund_cancelsAWaitingRedeliveryOfItsGrant_andARedeliveryOfARefundedGrantIsRefused() throws {
        let revoke = try world.hook("revoke.sh", exit: 0)
        try writeNotificationConfig(delivery: .object([("command", .array([.string(world.folder + "/grant.sh")])),
                                                       ("revoke_command", .array([.string(revoke)]))]))
        let (daemon, url) = try startDaemon()
        let purchase = applePurchase("430", token: buyer)
        XCTAssertEqual(try world.simulator.send(purchase, to: url), 200)
        XCTAssertTrue(eventually(within: 10) { stateInLedger("apple-430") == "finished" }, log(daemon))
        _ = try world.hook("grant.sh", exit: 75)
        try settle(expecting: 0, ["redeliver", "apple-430", "--note", "backend lost it, ticket 12"])
        daemon.send(SIGUSR1)
        XCTAssertTrue(eventually(within: 10) { world.deliveries.count == 2 }, log(daemon))
        XCTAssertTrue(eventually(within: 10) {
            (try? order("apple-430")["support_actions"]?.arrayValue?.first?["attempts"]) == .number(1)
        }, log(daemon))

        var refunded = purchase.transaction!
        refunded.revocationDateMs = nowMs
        let refund = SimulatedNotification(type: "REFUND", transaction: refunded, bundleId: world.bundleId, signedDateMs: nowMs)
        XCTAssertEqual(try world.simulator.send(refund, to: url), 200)
        XCTAssertTrue(eventually(within: 10) { world.deliveries.contains("revoke:430 apple-430") }, log(daemon))
        let action = try XCTUnwrap(try order("apple-430")["support_actions"]?.arrayValue?.first)
        XCTAssertEqual(action["state"], .string("cancelled"))
        XCTAssertTrue(action["last_error"]?.looseString?.contains("cancelled by the refund: Apple refunded transaction 430") == true,
                      "\(action)")
        XCTAssertTrue(try history("apple-430").contains { $0["outcome"] == .string("redeliver_cancelled") })

        // The hook works again and the redelivery's backoff is over: nothing is granted again.
        _ = try world.hook("grant.sh", exit: 0)
        try ledger().writing { _ = try $0.query("UPDATE support_actions SET next_attempt_at = 0") }
        let before = passes(daemon)
        daemon.send(SIGUSR1)
        XCTAssertTrue(eventually(within: 10) { passes(daemon) > before }, log(daemon))
        XCTAssertEqual(world.deliveries.filter { $0 == "430 apple-430" }.count, 2, "the first grant and the failed re-send only")
        XCTAssertEqual(world.deliveries.last, "revoke:430 apple-430")

        let again = try settle(["redeliver", "apple-430", "--note", "n"])
        XCTAssertEqual(again.status, 0, "the finished revoke may be re-sent: \(again.stderr)")
        XCTAssertTrue(again.stdout.contains("revoke:430"), again.stdout)
    }

    /// A transfer moves the holder of one grant, never the buyer: Apple's next purchase carrying
    /// the buyer's account token is the buyer's (it went to the transfer's new holder).
    func testAfterATransfer_theBuyersNextPurchaseFromApple_isTheBuyers_notTheHolders() throws {
        let revoke = try world.hook("revoke.sh", exit: 0)
        try writeNotificationConfig(extra: [("user_binding", .object([("app_account_token", .string("order"))]))],
                                    delivery: .object([("command", .array([.string(world.folder + "/grant.sh")])),
                                                       ("revoke_command", .array([.string(revoke)]))]))
        let (daemon, url) = try startDaemon()
        _ = applePurchase("450", token: buyer)
        try settle(expecting: 0, ["enqueue", "--order", "o-alice", "--user", "u-alice", "--product", world.coins, "--transaction", "450",
                                  "--app-account-token", buyer])
        daemon.send(SIGUSR1)
        XCTAssertTrue(eventually(within: 10) { stateInLedger("o-alice") == "finished" }, log(daemon))
        try settle(expecting: 0, ["transfer", "o-alice", "--to-user", "u-carol", "--note", "ticket 31"])
        daemon.send(SIGUSR1)
        XCTAssertTrue(eventually(within: 10) { (try? order("o-alice")["user_id"]) == .string("u-carol") }, log(daemon))

        let next = applePurchase("451", token: buyer)
        XCTAssertEqual(try world.simulator.send(next, to: url), 200)
        XCTAssertTrue(eventually(within: 10) { stateInLedger("apple-451") == "finished" }, log(daemon))
        XCTAssertEqual(try order("apple-451")["user_id"], .string("u-alice"), "the buyer Apple names, not the transfer's holder")
    }

    func testRefundAfterDelivery_withoutARevokeRoute_waitsVisiblyInStatus_andNothingIsSentToTheGrantHook() throws {
        try writeNotificationConfig()
        let (daemon, url) = try startDaemon()
        let purchase = applePurchase("411", token: buyer)
        XCTAssertEqual(try world.simulator.send(purchase, to: url), 200)
        XCTAssertTrue(eventually(within: 10) { stateInLedger("apple-411") == "finished" }, log(daemon))
        var refunded = purchase.transaction!
        refunded.revocationDateMs = nowMs
        let refund = SimulatedNotification(type: "REFUND", transaction: refunded, bundleId: world.bundleId, signedDateMs: nowMs)
        XCTAssertEqual(try world.simulator.send(refund, to: url), 200)
        XCTAssertTrue(eventually(within: 10) { log(daemon).contains("order.revoke_waiting") }, log(daemon))
        let revoke = try order("apple-411")["revoke"]
        XCTAssertEqual(revoke?["state"]?.looseString, "pending")
        XCTAssertEqual(revoke?["idempotency_key"]?.looseString, "revoke:411")
        XCTAssertTrue(revoke?["last_error"]?.looseString?.contains("no revoke route configured") == true, "\(String(describing: revoke))")
        let text = try settle(expecting: 0, ["status", "apple-411"]).stdout
        XCTAssertTrue(text.contains("revoke: pending, key revoke:411, 0 attempts: no revoke route configured"), text)
        XCTAssertEqual(world.deliveries, ["411 apple-411"], "the grant hook never sees a revoke")
    }

    func testConsumptionRequest_isAnsweredWithTheLedgersFacts() throws {
        try writeNotificationConfig(extra: [("consumption", .object([("respond", .bool(true)), ("customer_consented", .bool(true)),
                                                                     ("refund_preference", .string("DECLINE"))]))])
        let (daemon, url) = try startDaemon()
        let purchase = applePurchase("406", token: buyer)
        XCTAssertEqual(try world.simulator.send(purchase, to: url), 200)
        XCTAssertTrue(eventually(within: 10) { stateInLedger("apple-406") == "finished" }, log(daemon))
        let request = SimulatedNotification(type: "CONSUMPTION_REQUEST", transaction: purchase.transaction, bundleId: world.bundleId,
                                            consumptionRequestReason: "UNINTENDED_PURCHASE", signedDateMs: nowMs)
        XCTAssertEqual(try world.simulator.send(request, to: url), 200)
        XCTAssertTrue(eventually(within: 10) { !world.simulator.consumptionRequests.isEmpty }, log(daemon))
        guard let sent = world.simulator.consumptionRequests.first else { return XCTFail("nothing sent to Apple") }
        XCTAssertEqual(sent.transactionId, "406")
        XCTAssertEqual(sent.environment, .production)
        XCTAssertNil(sent.tokenProblem)
        XCTAssertEqual(sent.body, .object([("customerConsented", .bool(true)), ("deliveryStatus", .string("DELIVERED")),
                                           ("sampleContentProvided", .bool(false)), ("refundPreference", .string("DECLINE"))]))
        XCTAssertTrue(eventually(within: 5) { (try? self.history("apple-406").contains { $0["kind"]?.looseString == "consumption"
                                                                                      && $0["outcome"]?.looseString == "answered" }) == true })
    }

    func testFirstStart_asksAppleForNoHistoryFromBeforeIt_andDeliversNothingItDidNotHear() throws {
        try writeNotificationConfig()
        let before = applePurchase("408", token: buyer)
        XCTAssertNil(try world.simulator.send(before, to: nil), "sent before settle ever ran")
        let (daemon, _) = try startDaemon()
        XCTAssertTrue(eventually(within: 10) { log(daemon).contains("notifications.history_started") }, log(daemon))
        daemon.send(SIGUSR1)
        XCTAssertTrue(eventually(within: 10) { passes(daemon) >= 2 }, log(daemon))
        XCTAssertEqual(world.simulator.notificationHistoryRequests.count, 0, "history starts at the first start")
        XCTAssertNil(stateInLedger("apple-408"))
        XCTAssertEqual(world.deliveries, [])
    }

    func testEnqueue_ofAnOrderIdStartingWithApple_isRefused65() throws {
        try writeNotificationConfig()
        let refused = try settle(expecting: 65, ["enqueue", "--order", "apple-409", "--user", buyer, "--product", world.coins,
                                                 "--transaction", "409"])
        XCTAssertTrue(refused.stderr.contains("apple-"), refused.stderr)
        XCTAssertNil(stateInLedger("apple-409"))
    }

    func testOrderEnqueuedWithOnlyASignedTransaction_isFoundByItsTransactionId_whenAppleTellsFirst() throws {
        try writeNotificationConfig()
        // Apple cannot confirm it at the first attempt: the order is still pending when Apple's notification comes.
        let transaction = world.scriptTransaction("410", purchaseDateMs: nowMs - 5000, appAccountToken: buyer,
                                                  answers: [.error(status: 500, code: 5000001)])
        let file = try world.write("410.jws", try transaction.signed(at: nowMs))
        try settle(expecting: 0, ["enqueue", "--order", "o-10", "--user", buyer, "--product", world.coins, "--signed-transaction-file", file])
        let ledger = try ledger()
        let reconciler = try world.reconciler(ledger: ledger)
        let inbox = try XCTUnwrap(reconciler.inbox)
        world.time.advance(by: 30)  // the binary enqueued on the real clock, a moment after the world's
        _ = try reconciler.runPass()
        XCTAssertEqual(stateInLedger("o-10"), "pending")
        let charge = SimulatedNotification(type: "ONE_TIME_CHARGE", transaction: transaction, bundleId: world.bundleId, signedDateMs: nowMs)
        guard case let .stored(result) = inbox.receive(signedPayload: try charge.signed(), source: "endpoint") else { return XCTFail() }
        XCTAssertEqual(result.outcome, "attached")
        XCTAssertEqual(result.orderId, "o-10")
        world.time.advance(by: 3600)
        _ = try reconciler.runPass()
        XCTAssertEqual(stateInLedger("o-10"), "finished")
        XCTAssertNil(stateInLedger("apple-410"), "no second order")
        XCTAssertEqual(world.deliveries, ["410 o-10"])
    }

    func testHistoryCall429_isPaced_keepsItsPlace_breakerClosed_andNothingCrashes() throws {
        try writeNotificationConfig()
        try historyStarted()
        world.simulator.script(notificationHistory: [.rateLimited(retryAfter: "600")])
        let (daemon, _) = try startDaemon()
        // One 429 is settle too fast for Apple: the bucket halves, the catch-up waits for its next
        // interval with its place kept, and Apple's breaker hears nothing.
        XCTAssertTrue(eventually(within: 10) { log(daemon).contains("notifications.history_paced") }, log(daemon))
        XCTAssertTrue(log(daemon).contains("paced: app_store notification_history (Production) at 25/s"), log(daemon))
        let status = try statusJSON()
        XCTAssertEqual(status["apple"]?["breaker"]?.looseString, "closed")
        XCTAssertEqual(world.simulator.notificationHistoryRequests.count, 1, "the paced catch-up asks no more this interval")
        XCTAssertTrue(daemon.isRunning)
    }

    func testHistoryCall5xx_isRetriedNextInterval_andThenFindsTheMissedNotification() throws {
        try writeNotificationConfig(historyInterval: 10)
        try historyStarted()
        world.simulator.script(notificationHistory: [.error(status: 500, code: 5000001)])
        let missed = applePurchase("407", token: buyer)
        XCTAssertNil(try world.simulator.send(missed, to: nil))
        let (daemon, _) = try startDaemon()
        XCTAssertTrue(eventually(within: 10) { log(daemon).contains("notifications.history_unavailable") }, log(daemon))
        XCTAssertEqual(try statusJSON()["apple"]?["breaker"]?.looseString, "closed", "one 5xx does not open the breaker")
        XCTAssertNil(stateInLedger("apple-407"))
        XCTAssertTrue(eventually(within: 20) { stateInLedger("apple-407") == "finished" }, log(daemon))
        XCTAssertEqual(world.deliveries, ["407 apple-407"])
    }
}
