import Foundation
import SettleApp
import SettleTesting
import XCTest
import SettleBase
import SettleModel
import SettleGooglePlay
import SettleLedger

/// Google Play orders through the built binary: verified with the fake Google, delivered once
/// through the same hook and grant reservation as App Store orders, then consumed or
/// acknowledged, and only after the hook said delivered.
final class GooglePlayTests: GooglePlayTestCase {
    func testPurchasedConsumable_isDeliveredOnceWithTheOrderIdAsKey_thenConsumedAfterTheHook() throws {
        let token = scriptProduct("a", orderId: "GPA.1111-2222-3333-44444")
        try enqueuePlay("o-1", token: token)
        let run = try settle(expecting: 0, ["reconcile"])
        XCTAssertEqual(try state("o-1"), "finished", run.stderr)
        XCTAssertEqual(world.deliveries, ["GPA.1111-2222-3333-44444 o-1"])
        let payload = try payload("o-1")
        XCTAssertEqual(payload["store"], .string("google_play"))
        XCTAssertEqual(payload["idempotency_key"], .string("GPA.1111-2222-3333-44444"))
        XCTAssertEqual(payload["event"], .string("grant"))
        XCTAssertEqual(payload["environment"], .string("Production"))
        XCTAssertEqual(payload["grant"]?["gems"], .number(100))
        XCTAssertEqual(fake.product(token)?.consumptionState, .consumed)
        XCTAssertEqual(finishes.map { $0.path.hasSuffix(":consume") }, [true])
        XCTAssertEqual(finishes.map(\.deliveriesSoFar), [1], "Google was told before the hook delivered")
        XCTAssertEqual(try order("o-1")["history"]?.arrayValue?.last?["outcome"], .string("consumed"))
        // A second pass changes nothing: no second delivery, no second consume.
        try settle(expecting: 0, ["reconcile"])
        XCTAssertEqual(world.deliveries.count, 1)
        XCTAssertEqual(finishes.count, 1)
    }

    func testNonConsumableAndSubscription_areAcknowledgedOnlyAfterTheHook() throws {
        let unlockToken = scriptProduct("u", product: unlock, orderId: "GPA.U")
        let subscription = token("s")
        fake.script(subscription: subscription, SubscriptionPurchaseV2(
            rawSubscriptionState: "SUBSCRIPTION_STATE_ACTIVE", lineItems: [.init(productId: pro, expiryTime: "2099-01-01T00:00:00Z",
                                                                  latestSuccessfulOrderId: "GPA.S..0")],
            latestOrderId: "GPA.S..0", obfuscatedExternalAccountId: "u-1", startTime: "2026-12-01T10:00:00Z"))
        try enqueuePlay("o-unlock", token: unlockToken, product: unlock)
        try enqueuePlay("o-pro", token: subscription, product: pro)
        try settle(expecting: 0, ["reconcile"])
        XCTAssertEqual(try state("o-unlock"), "finished")
        XCTAssertEqual(try state("o-pro"), "finished")
        XCTAssertEqual(Set(world.deliveries), ["GPA.U o-unlock", "GPA.S..0 o-pro"])
        XCTAssertEqual(fake.product(unlockToken)?.acknowledgementState, .acknowledged)
        XCTAssertEqual(fake.product(unlockToken)?.consumptionState, .yetToBeConsumed, "a non-consumable is never consumed")
        XCTAssertEqual(fake.subscription(subscription)?.acknowledgementState, .acknowledged)
        XCTAssertEqual(Set(finishes.map { String($0.path.split(separator: "/").last!.split(separator: ":").last!) }), ["acknowledge"])
        XCTAssertTrue(finishes.allSatisfy { $0.deliveriesSoFar >= 1 })
        XCTAssertEqual(try payload("o-pro")["expires_date"], .string("2099-01-01T00:00:00Z"))
    }

    func testHookFailure_leavesThePurchaseUnacknowledged_andUsesAnAttempt() throws {
        let token = scriptProduct("f", product: unlock)
        try world.hook("fail.sh", exit: 75)
        try writePlayConfig(hook: world.folder + "/fail.sh")
        try enqueuePlay("o-f", token: token, product: unlock)
        try settle(["reconcile"])
        XCTAssertEqual(try state("o-f"), "pending")
        XCTAssertEqual(try attempts("o-f"), 1)
        XCTAssertEqual(fake.product(token)?.acknowledgementState, .yetToBeAcknowledged)
        XCTAssertTrue(finishes.isEmpty)
    }

    func testPendingPurchase_waitsWithoutUsingAnAttempt_thenIsDeliveredOnceItIsPurchased() throws {
        let token = scriptProduct("p", orderId: "GPA.P", state: 2)
        try enqueuePlay("o-p", token: token)
        try settle(expecting: 0, ["reconcile"])
        XCTAssertEqual(try state("o-p"), "pending")
        XCTAssertEqual(try attempts("o-p"), 0)
        XCTAssertTrue(world.deliveries.isEmpty)
        XCTAssertEqual(try history("o-p").last?["outcome"], .string("wait"))
        scriptProduct("p", orderId: "GPA.P", state: 0)
        try settle(expecting: 0, ["reconcile", "--order", "o-p"])
        XCTAssertEqual(try state("o-p"), "finished")
        XCTAssertEqual(world.deliveries, ["GPA.P o-p"])
    }

    func testCanceledPurchase_isRejected_andNeverDelivered() throws {
        try enqueuePlay("o-c", token: scriptProduct("c", state: 1))
        try settle(expecting: 0, ["reconcile"])
        XCTAssertEqual(try state("o-c"), "rejected")
        XCTAssertEqual(try order("o-c")["reason"], .string("canceled"))
        XCTAssertTrue(world.deliveries.isEmpty)
        XCTAssertTrue(finishes.isEmpty)
    }

    func testTestPurchase_isDeliveredAsSandbox_onlyWhereSandboxIsAccepted() throws {
        try writePlayConfig(acceptSandbox: false)
        try enqueuePlay("o-t1", token: scriptProduct("t1", test: true))
        try settle(expecting: 0, ["reconcile"])
        XCTAssertEqual(try state("o-t1"), "rejected")
        XCTAssertEqual(try order("o-t1")["reason"], .string("sandbox_not_accepted"))
        XCTAssertTrue(world.deliveries.isEmpty)

        try writePlayConfig(acceptSandbox: true)
        try enqueuePlay("o-t2", token: scriptProduct("t2", orderId: "GPA.T2", test: true))
        try settle(expecting: 0, ["reconcile"])
        XCTAssertEqual(try state("o-t2"), "finished")
        XCTAssertEqual(try payload("o-t2")["environment"], .string("Sandbox"))
    }

    func testAnotherUsersPurchase_isRejectedAsUserMismatch_andNeverDelivered() throws {
        try enqueuePlay("o-m", token: scriptProduct("m", account: "u-2"), user: "u-1")
        try settle(expecting: 0, ["reconcile"])
        XCTAssertEqual(try state("o-m"), "rejected")
        XCTAssertEqual(try order("o-m")["reason"], .string("user_mismatch"))
        XCTAssertTrue(world.deliveries.isEmpty)
        XCTAssertTrue(finishes.isEmpty)
    }

    func testAlreadyAcknowledgedPurchase_isSetAsideFinishedElsewhere_andOnceRetried_isDeliveredWithoutAcknowledgingAgain() throws {
        let token = scriptProduct("k", product: unlock, orderId: "GPA.K", acknowledged: true)
        try enqueuePlay("o-k", token: token, product: unlock)
        try settle(expecting: 0, ["reconcile"])
        // settle acknowledges only what it delivered: someone else finished this one.
        XCTAssertEqual(try state("o-k"), "needs_attention")
        XCTAssertEqual(try order("o-k")["reason"], .string("finished_elsewhere"))
        XCTAssertTrue(world.deliveries.isEmpty)
        try settle(expecting: 0, ["retry", "o-k", "--note", "not granted"])
        try settle(expecting: 0, ["reconcile"])
        XCTAssertEqual(try state("o-k"), "finished")
        XCTAssertEqual(world.deliveries, ["GPA.K o-k"])
        XCTAssertTrue(finishes.isEmpty, "an acknowledged purchase is not acknowledged again")
        XCTAssertEqual(try history("o-k").last?["outcome"], .string("already_acknowledged"))
    }

    func testSamePurchaseInTwoOrders_isGrantedOnce_throughTheGrantReservation() throws {
        let token = scriptProduct("d", orderId: "GPA.D")
        try enqueuePlay("o-d1", token: token)
        try enqueuePlay("o-d2", token: token)
        try settle(expecting: 0, ["reconcile"])
        XCTAssertEqual(world.deliveries.count, 1)
        XCTAssertEqual(Set([try state("o-d1"), try state("o-d2")]), ["finished", "rejected"])
    }

    func testKill9BetweenHookAndAcknowledge_acknowledgesOnTheNextPass_withoutDeliveringAgain() throws {
        let token = scriptProduct("x", product: unlock, orderId: "GPA.X")
        try enqueuePlay("o-x", token: token, product: unlock)
        tap.killAtFinish.withLock { $0 = true }
        let crashed = try settle(["reconcile"])
        XCTAssertNotEqual(crashed.status, 0)
        XCTAssertEqual(world.deliveries, ["GPA.X o-x"])
        XCTAssertEqual(fake.product(token)?.acknowledgementState, .yetToBeAcknowledged)
        let between = try order("o-x")
        XCTAssertEqual(between["state"], .string("delivering"))
        XCTAssertEqual(between["store_finish"], .string("pending"))

        try settle(expecting: 0, ["reconcile"])
        XCTAssertEqual(try state("o-x"), "finished")
        XCTAssertEqual(world.deliveries, ["GPA.X o-x"], "the hook ran again after the crash")
        XCTAssertEqual(fake.product(token)?.acknowledgementState, .acknowledged)
        XCTAssertEqual(finishes.count, 2)
    }

    func testUnauthorizedOnce_refreshesTheAccessToken_andVerifies() throws {
        try enqueuePlay("o-401", token: scriptProduct("r", orderId: "GPA.R"))
        fake.failNextAPICalls(.status(401, reason: "authError"))
        try settle(expecting: 0, ["reconcile"])
        XCTAssertEqual(try state("o-401"), "finished")
        XCTAssertEqual(fake.tokenRequests, 2, "one token, refused once, then one fresh token")
        XCTAssertEqual(try attempts("o-401"), 0)
    }

    func testUnauthorizedTwiceOrForbidden_isAConfigurationFault_exit78_andUsesNoAttempt() throws {
        try enqueuePlay("o-403", token: scriptProduct("n"))
        fake.failNextAPICalls(.status(403, reason: "permissionDenied"))
        let run = try settle(expecting: 78, ["reconcile"])
        XCTAssertTrue(run.stderr.contains("Manage orders") || run.stderr.contains("View financial data"), run.stderr)
        XCTAssertEqual(try state("o-403"), "pending")
        XCTAssertEqual(try attempts("o-403"), 0)
        XCTAssertTrue(world.deliveries.isEmpty)
    }

    func testRateLimitedAndServerErrors_keepTheAttempt_andAreRetried() throws {
        try enqueuePlay("o-429", token: scriptProduct("q", orderId: "GPA.Q"))
        fake.failNextAPICalls(.status(429, retryAfter: "120"))
        try settle(["reconcile"])
        XCTAssertEqual(try state("o-429"), "pending")
        XCTAssertEqual(try attempts("o-429"), 0)
        fake.failNextAPICalls(.status(503))
        try settle(["reconcile", "--order", "o-429"])
        XCTAssertEqual(try state("o-429"), "pending")
        XCTAssertEqual(try attempts("o-429"), 0)
        try settle(expecting: 0, ["reconcile", "--order", "o-429"])
        XCTAssertEqual(try state("o-429"), "finished")
        XCTAssertEqual(world.deliveries, ["GPA.Q o-429"])
    }

    func testPurchaseToken_neverAppearsInOutput_andStatusFindsTheOrderByTokenFile() throws {
        let token = scriptProduct("secret", orderId: "GPA.SECRET")
        try enqueuePlay("o-s", token: token)
        fake.failNextAPICalls(.status(500))
        try settle(["reconcile"])
        let found = try settle(expecting: 0, ["status", "--purchase-token-file", "-", "--json"], stdin: Data(token.utf8))
        let orders = try JSONValue.parse(found.stdout)["orders"]?.arrayValue ?? []
        XCTAssertEqual(orders.compactMap { $0["order_id"]?.looseString }, ["o-s"])
        let fingerprint = PurchaseToken(token)!.fingerprint
        XCTAssertEqual(orders.first?["purchase_token"], .string(fingerprint))
        XCTAssertEqual(orders.first?["store"], .string("google_play"))
        try settle(expecting: 0, ["status", "o-s"])
        try settle(expecting: 0, ["status"])
        try settle(expecting: 0, ["reconcile", "--order", "o-s"])
        XCTAssertFalse(everything.contains("SECRETPLAYTOKEN"), "a purchase token was printed")
        XCTAssertFalse(try String(contentsOfFile: world.folder + "/payload-o-s.json", encoding: .utf8).contains("SECRETPLAYTOKEN"),
                       "the hook got the purchase token")
    }

    func testEnqueue_takesNoTokenOnTheCommandLine_andChecksTheProofBelongsToTheStore() throws {
        let onArgv = try settle(["enqueue", "--store", "google_play", "--order", "o-a", "--user", "u-1", "--product", gems,
                                 "--purchase-token", token("argv")])
        XCTAssertEqual(onArgv.status, 64)
        let noToken = try settle(["enqueue", "--store", "google_play", "--order", "o-a", "--user", "u-1", "--product", gems])
        XCTAssertEqual(noToken.status, 64)
        let appleProof = try settle(["enqueue", "--store", "google_play", "--order", "o-a", "--user", "u-1", "--product", gems,
                                     "--transaction", "1000000000000001"])
        XCTAssertEqual(appleProof.status, 64)
        XCTAssertTrue(appleProof.stderr.contains("--transaction is a proof of App Store orders, not of Google Play orders"),
                      appleProof.stderr)
        let tokenForApple = try settle(["enqueue", "--order", "o-b", "--user", "u-1", "--product", gems,
                                        "--purchase-token-file", try world.write("t2", token("b"), mode: 0o600)])
        XCTAssertEqual(tokenForApple.status, 64, "a token is no App Store proof: \(tokenForApple.stderr)")
        // Every store's reserved ids are refused, whatever store the order names.
        let playIdForApple = try settle(["enqueue", "--order", "play-GPA.2", "--user", "u-1", "--product", gems,
                                         "--transaction", "1000000000000001"])
        XCTAssertEqual(playIdForApple.status, 65, playIdForApple.stderr)
        XCTAssertTrue(playIdForApple.stderr.contains("ids starting with play- are settle's own, for purchases Google reports"))
        let reserved = try settle(["enqueue", "--store", "google_play", "--order", "play-GPA.1", "--user", "u-1", "--product", gems,
                                   "--purchase-token-file", try world.write("t", token("r"), mode: 0o600)])
        XCTAssertEqual(reserved.status, 65)
    }

    func testUnacknowledgedPurchaseUnderADay_isShownInStatus_warnedAbout_andCounted() throws {
        // Bought 2.5 days ago, delivered, and Google is unavailable for the acknowledgement: half a day left.
        let late = scriptProduct("late", product: unlock, orderId: "GPA.LATE", boughtAgo: 60 * 3600)
        try enqueuePlay("o-late", token: late, product: unlock)
        try writePlayConfig(extra: [("metrics_file", .string(world.folder + "/settle.prom"))])
        tap.failFinishes.withLock { $0 = 1 }
        let run = try settle(["reconcile"])
        XCTAssertEqual(world.deliveries, ["GPA.LATE o-late"])
        XCTAssertEqual(try state("o-late"), "delivering")
        XCTAssertTrue(run.stderr.contains("google_play.ack_deadline_soon"), run.stderr)
        let status = try statusJSON()
        let unacknowledged = status["google_play"]?["unacknowledged"]?.arrayValue ?? []
        XCTAssertEqual(unacknowledged.compactMap { $0["order_id"]?.looseString }, ["o-late"])
        XCTAssertEqual(unacknowledged.first?["delivered"], .bool(true))
        XCTAssertEqual(status["stores"]?["google_play"]?["delivering"], .number(1))
        let text = try settle(expecting: 0, ["status"]).stdout
        XCTAssertTrue(text.contains("unacknowledged o-late (delivered, acknowledge pending): Google refunds it in"), text)
        XCTAssertTrue(text.contains("under 24 h"), text)
        let metrics = try String(contentsOfFile: world.folder + "/settle.prom", encoding: .utf8)
        XCTAssertTrue(metrics.contains("settle_play_ack_deadline_soon{bundle_id=\"com.example.game\",store=\"google_play\"} 1"), metrics)

        // The failed acknowledge backs off like any other (issue 32, item 20); once it ends, Google is told.
        let database = try SQLiteDatabase(path: world.ledgerPath, mode: .readWrite)
        _ = try database.query("UPDATE orders SET next_attempt_at = 0 WHERE order_id = 'o-late'")
        try database.close()
        try settle(expecting: 0, ["reconcile"])
        XCTAssertEqual(try state("o-late"), "finished")
        XCTAssertEqual(world.deliveries.count, 1)
        XCTAssertEqual(fake.product(late)?.acknowledgementState, .acknowledged)
    }

    func testClaimOrder_putsAPlayOrderUnderADayFromItsDeadlineFirst() throws {
        for (id, transaction) in [("a-1", "1000000000000001"), ("a-2", "1000000000000002")] {
            try enqueueValid(id, transaction: transaction)
        }
        try enqueuePlay("o-urgent", token: scriptProduct("urgent", orderId: "GPA.URGENT"))
        // Enqueued two and a half days ago (a backend's own row): less than a day before Google refunds it.
        let database = try SQLiteDatabase(path: world.ledgerPath, mode: .readWrite)
        _ = try database.query("UPDATE orders SET created_at = created_at - 216000 WHERE order_id = 'o-urgent'")
        try database.close()
        try writePlayConfig(extra: [("schedule", .object([("concurrency", .number(1))]))])
        try settle(expecting: 0, ["reconcile"])
        XCTAssertEqual(world.deliveries.first, "GPA.URGENT o-urgent", "\(world.deliveries)")
        XCTAssertEqual(world.deliveries.count, 3)
    }

    func testPlayOnlyInstallation_needsNoAppleSection_andCheckConfigShowsGooglePlayWithoutTheKey() throws {
        try FileManager.default.removeItem(atPath: world.folder + "/AppleRootCA-G3.pem")
        try world.writeConfig(receiptAPI: false, overrides: [
            ("products", .object([(gems, .object([("type", .string("consumable")), ("store", .string("google_play"))]))])),
            ("user_binding", .object([("app_account_token", .string("user_id"))])),
            ("google_play", .object([
                ("package_name", .string(Self.packageName)),
                ("service_account_file", .string("play-service-account.json")),
                ("api_url", .string(google.baseURL)),
                ("token_url", .string(google.baseURL + "/token")),
            ])),
        ])
        let check = try settle(expecting: 0, ["check-config"])
        XCTAssertTrue(check.stdout.contains("google_play: package com.example.game"), check.stdout)
        XCTAssertTrue(check.stdout.contains("product gems_100: consumable store google_play"), check.stdout)
        XCTAssertFalse(check.stdout.contains("PRIVATE KEY"), check.stdout)
        try enqueuePlay("o-only", token: scriptProduct("only", orderId: "GPA.ONLY"))
        try settle(expecting: 0, ["reconcile"])
        XCTAssertEqual(try state("o-only"), "finished")
    }

    func testPushKeys_areGooglesPublishedSetByDefault_theFileIsOptional_andAURLMustBeHTTPS() throws {
        func configure(_ push: [(String, JSONValue)]) throws {
            try world.writeConfig(overrides: [
                ("products", .object([(gems, .object([("type", .string("consumable")), ("store", .string("google_play"))]))])),
                ("notifications", .object([("listen", .string("127.0.0.1:0"))])),
                ("google_play", .object([
                    ("package_name", .string(Self.packageName)), ("service_account_file", .string("play-service-account.json")),
                    ("notifications_path", .string("/google-play/rtdn")),
                    ("push", .object([("audience", .string(Self.audience)), ("service_account_email", .string(Self.pushEmail))] + push)),
                ])),
            ])
        }
        try configure([])
        let defaults = try settle(expecting: 0, ["check-config"])
        XCTAssertTrue(defaults.stdout.contains("keys https://www.googleapis.com/oauth2/v3/certs\n"), defaults.stdout)
        try world.write("google-jwks.json", JSONWebKeySet.document([(id: "k", key: Self.pushKey.publicKey)]).serialized())
        try configure([("jwks_url", .string(google.baseURL + "/oauth2/v3/certs")), ("jwks_file", .string("google-jwks.json"))])
        let both = try settle(expecting: 0, ["check-config"])
        XCTAssertTrue(both.stdout.contains("keys \(google.baseURL)/oauth2/v3/certs, else \(world.folder)/google-jwks.json"), both.stdout)
        try configure([("jwks_url", .string("http://keys.example.com/certs"))])
        let plain = try settle(expecting: 78, ["check-config"])
        XCTAssertTrue(plain.stderr.contains("google_play.push.jwks_url: must be an https:// URL"), plain.stderr)
    }

    func testCheckConfig_showsGooglesQuotaPerBucket_aConfiguredRate_andRefusesABadOne() throws {
        try writePlayConfig()
        var result = try settle(expecting: 0, ["check-config"])
        XCTAssertTrue(result.stdout.contains("google_play.rate_limits: one_time_purchases 50, orders 50, subscriptions 50, voided_purchases 1 "
                                             + "(requests a second)"), result.stdout)
        func limits(_ rates: JSONValue) throws {
            try world.writeConfig(overrides: [
                ("products", .object([(gems, .object([("type", .string("consumable")), ("store", .string("google_play"))]))])),
                ("google_play", .object([
                    ("package_name", .string(Self.packageName)), ("service_account_file", .string("play-service-account.json")),
                    ("rate_limits", rates),
                ])),
            ])
        }
        try limits(.object([("subscriptions", .number(200))]))
        result = try settle(expecting: 0, ["check-config"])
        XCTAssertTrue(result.stdout.contains("subscriptions 200 (configured)"), result.stdout)
        try limits(.object([("subscriptions", .number(-1))]))
        result = try settle(expecting: 78, ["check-config"])
        XCTAssertTrue(result.stderr.contains("google_play.rate_limits.subscriptions: -1 is out of range"), result.stderr)
        try limits(.object([("inappproducts", .number(5))]))
        result = try settle(expecting: 78, ["check-config"])
        XCTAssertTrue(result.stderr.contains("google_play.rate_limits.inappproducts: unknown endpoint group"), result.stderr)
    }

    func testConfigurationMistakes_nameTheKeyPath_andExit78() throws {
        try world.writeConfig(overrides: [
            ("products", .object([(gems, .object([("type", .string("consumable")), ("store", .string("android"))]))])),
        ])
        let store = try settle(expecting: 78, ["check-config"])
        XCTAssertTrue(store.stderr.contains("products.gems_100.store"), store.stderr)
        try world.writeConfig(overrides: [
            ("products", .object([(gems, .object([("type", .string("consumable")), ("store", .string("google_play"))]))])),
        ])
        let missing = try settle(expecting: 78, ["check-config"])
        XCTAssertTrue(missing.stderr.contains("a google_play product needs the google_play section"), missing.stderr)
        try writePlayConfig(extra: [("google_play", .object([("package_name", .string(Self.packageName)),
                                                             ("service_account_file", .string("play-service-account.json")),
                                                             ("api_url", .string("http://google.example.com"))]))])
        let url = try settle(expecting: 78, ["check-config"])
        XCTAssertTrue(url.stderr.contains("google_play.api_url"), url.stderr)
        try world.write("play-service-account.json", "{}", mode: 0o644)
        try writePlayConfig()
        let readable = try settle(expecting: 78, ["check-config"])
        XCTAssertTrue(readable.stderr.contains("google_play.service_account_file"), readable.stderr)
    }
}
