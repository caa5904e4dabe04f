import Foundation
import SettleApp
import SettleTesting
import XCTest
import SettleBase
import SettleModel
#if canImport(Glibc)
import Glibc
import SettleGooglePlay
import SettleLedger
@testable import SettleGooglePlayModule
#endif

/// Google Play real-time developer notifications on a running `settle run`: Pub/Sub pushes to
/// `google_play.notifications_path` on the notifications listener, authenticated by their OIDC token.
final class GooglePlayNotificationTests: GooglePlayTestCase {
    let path = "/google-play/rtdn"
    var daemons: [SettleBinary.Running] = []

    override func setUpWithError() throws {
        try super.setUpWithError()
        let jwks = JSONWebKeySet.document([(id: "fake-push-key", key: Self.pushKey.publicKey)])
        try world.write("google-jwks.json", jwks.serialized(pretty: true))
        try writePlayConfig(extra: [
            ("server_api", world.serverAPIConfig),
            ("schedule", .object([("interval_seconds", .number(3600))])),
            ("notifications", .object([("listen", .string("127.0.0.1:0"))])),
            ("google_play", .object([
                ("package_name", .string(Self.packageName)),
                ("service_account_file", .string("play-service-account.json")),
                ("api_url", .string(google.baseURL)),
                ("token_url", .string(google.baseURL + "/token")),
                ("notifications_path", .string(path)),
                ("push", .object([("audience", .string(Self.audience)), ("service_account_email", .string(Self.pushEmail)),
                                  ("jwks_url", .string(google.baseURL + "/oauth2/v3/certs")),
                                  ("jwks_file", .string("google-jwks.json"))])),
            ])),
        ])
    }

    override func tearDownWithError() throws {
        for daemon in daemons where daemon.isRunning {
            daemon.send(SIGKILL)
            _ = daemon.wait()
        }
        try super.tearDownWithError()
    }

    func log(_ daemon: SettleBinary.Running) -> String { (try? String(contentsOfFile: daemon.stderrPath, encoding: .utf8)) ?? "" }

    /// Starts `settle run` and returns it with the port it listens on once its first pass ended.
    func startDaemon(file: StaticString = #filePath, line: UInt = #line) throws -> (SettleBinary.Running, Int) {
        let daemon = try SettleBinary.start(["run", "--config", world.configPath], outputFolder: world.folder)
        daemons.append(daemon)
        var port: Int?
        _ = eventually(within: 20) {
            port = log(daemon).split(separator: "\n").first { $0.contains("notifications.listening") }?
                .split(separator: " ").first { $0.hasPrefix("port=") }.flatMap { Int($0.dropFirst(5)) }
            return port != nil && log(daemon).contains("pass.finished")
        }
        guard let port else {
            XCTFail("settle run never listened: \(log(daemon))", file: file, line: line)
            throw CocoaError(.fileReadUnknown)
        }
        return (daemon, port)
    }

    /// POSTs a push and returns the HTTP status (nil: no answer).
    func push(_ port: Int, _ body: Data, token: String?) throws -> Int? {
        let client = HTTPClient(configuration: HTTPClientConfiguration(connectTimeout: 5, totalTimeout: 10))
        var headers = [HTTPHeader("Content-Type", "application/json")]
        if let token { headers.append(HTTPHeader("Authorization", "Bearer \(token)")) }
        return try client.send(HTTPRequest(method: "POST", url: "http://127.0.0.1:\(port)\(path)", headers: headers, body: body)).status
    }

    func purchaseNotification(_ token: String, sku: String? = nil) -> DeveloperNotification {
        DeveloperNotification(packageName: Self.packageName, eventTimeMillis: world.time.unixSeconds * 1000,
                              kind: .oneTimeProduct(OneTimeProductNotification(rawNotificationType: 1, purchaseToken: PurchaseToken(token)!,
                                                                               sku: sku ?? gems)))
    }

    func storedNotifications() throws -> Int {
        let database = try SQLiteDatabase(path: world.ledgerPath, mode: .readOnly)
        defer { try? database.close() }
        return Int(try database.query("SELECT count(*) AS n FROM play_notifications").first?.int("n") ?? -1)
    }

    func testPushWithAForgedOrMissingToken_isRefused_andNothingIsStored() throws {
        let (_, port) = try startDaemon()
        let body = PubSubPush.body(messageId: "m-forged", notification: purchaseNotification(scriptProduct("f", orderId: "GPA.F")))
        let forged = try fake.pushToken(audience: Self.audience, email: Self.pushEmail, signer: Self.strangerKey)
        XCTAssertEqual(try push(port, body, token: forged), 403)
        let otherAudience = try fake.pushToken(audience: "https://elsewhere.example.com", email: Self.pushEmail)
        XCTAssertEqual(try push(port, body, token: otherAudience), 403)
        XCTAssertEqual(try push(port, body, token: nil), 401)
        XCTAssertEqual(try storedNotifications(), 0)
        XCTAssertTrue(world.deliveries.isEmpty)
    }

    func testPurchaseFoundOnlyThroughANotification_isDeliveredOnceToTheMappedUser_andConsumed() throws {
        let (daemon, port) = try startDaemon()
        let token = scriptProduct("n", orderId: "GPA.N", account: "u-7")
        let body = PubSubPush.body(messageId: "m-1", notification: purchaseNotification(token))
        let good = try fake.pushToken(audience: Self.audience, email: Self.pushEmail)
        XCTAssertEqual(try push(port, body, token: good), 200)
        XCTAssertEqual(try push(port, body, token: good), 200, "a redelivered push is answered, not stored again")
        XCTAssertTrue(eventually(within: 20) { (try? SQLiteLedger(readOnlyPath: world.ledgerPath).orderRecord("play-GPA.N"))??.order.state == .finished },
                      log(daemon))
        let record = try XCTUnwrap(try SQLiteLedger(readOnlyPath: world.ledgerPath).orderRecord("play-GPA.N"))
        XCTAssertEqual(record.order.userId, "u-7")
        XCTAssertEqual(record.order.origin, "google_play_notification")
        XCTAssertEqual(world.deliveries, ["GPA.N play-GPA.N"])
        XCTAssertEqual(fake.product(token)?.consumptionState, .consumed)
        XCTAssertEqual(try storedNotifications(), 1)
        XCTAssertFalse(log(daemon).contains("SECRETPLAYTOKEN"), "a purchase token was logged")
    }

    func testSubscriptionRenewal_isDeliveredAsItsOwnPurchase_onceToTheSubscriber_andARepeatedRenewalPushChangesNothing() throws {
        let subscription = token("renew")
        func script(latest: String, expiry: String) {
            fake.script(subscription: subscription, SubscriptionPurchaseV2(
                rawSubscriptionState: "SUBSCRIPTION_STATE_ACTIVE",
                lineItems: [.init(productId: pro, expiryTime: expiry, latestSuccessfulOrderId: latest)], latestOrderId: latest, obfuscatedExternalAccountId: "u-9", startTime: "2026-12-01T10:00:00Z"))
        }
        script(latest: "GPA.R..0", expiry: "2099-01-01T00:00:00Z")
        try enqueuePlay("o-sub", token: subscription, user: "u-9", product: pro)
        let (daemon, port) = try startDaemon()
        XCTAssertTrue(eventually(within: 20) { (try? SQLiteLedger(readOnlyPath: world.ledgerPath).orderRecord("o-sub"))??.order.state == .finished },
                      log(daemon))
        // A month later Google renews it: a new order id under the same token.
        script(latest: "GPA.R..1", expiry: "2099-02-01T00:00:00Z")
        func renewed(_ messageId: String) -> Data {
            PubSubPush.body(messageId: messageId, notification: DeveloperNotification(
                packageName: Self.packageName, eventTimeMillis: world.time.unixSeconds * 1000,
                kind: .subscription(SubscriptionNotification(rawNotificationType: 2, purchaseToken: PurchaseToken(subscription)!,
                                                             subscriptionId: pro))))
        }
        let good = try fake.pushToken(audience: Self.audience, email: Self.pushEmail)
        XCTAssertEqual(try push(port, renewed("m-renew-1"), token: good), 200)
        XCTAssertTrue(eventually(within: 20) {
            (try? SQLiteLedger(readOnlyPath: world.ledgerPath).orderRecord("play-GPA.R..1"))??.order.state == .finished
        }, log(daemon))
        let renewal = try XCTUnwrap(try SQLiteLedger(readOnlyPath: world.ledgerPath).orderRecord("play-GPA.R..1"))
        XCTAssertEqual(renewal.order.userId, "u-9", "the subscriber of the order that holds the token")
        XCTAssertEqual(try payload("play-GPA.R..1")["expires_date"], .string("2099-02-01T00:00:00Z"))
        // Pub/Sub may send the renewal again under another message id: no second order, no second grant.
        XCTAssertEqual(try push(port, renewed("m-renew-2"), token: good), 200)
        XCTAssertTrue(eventually(within: 20) {
            (try? SQLiteLedger(readOnlyPath: world.ledgerPath).playNotification(messageId: "m-renew-2"))??.outcome == "order_exists"
        }, log(daemon))
        XCTAssertEqual(world.deliveries.sorted(), ["GPA.R..0 o-sub", "GPA.R..1 play-GPA.R..1"])
    }

    /// A renewal of a subscription whose only order could not have its binding checked
    /// (`token_unverifiable`): that order does not swallow the paid renewal; the renewal is an
    /// order of its own, waiting for a person (it was logged order_exists and had no order at all).
    func testRenewalPush_isNotSwallowedByAnOrderWhoseBindingWasNeverVerified() throws {
        let subscription = token("unverified")
        func script(latest: String) {
            fake.script(subscription: subscription, SubscriptionPurchaseV2(
                rawSubscriptionState: "SUBSCRIPTION_STATE_ACTIVE",
                lineItems: [.init(productId: pro, expiryTime: "2099-01-01T00:00:00Z", latestSuccessfulOrderId: latest)],
                latestOrderId: latest, obfuscatedExternalAccountId: "acct-9", startTime: "2026-12-01T10:00:00Z"))
        }
        // Account ids are the ones stored with orders, and this order was enqueued without one.
        var config = try JSONValue.parse(Data(contentsOf: URL(fileURLWithPath: world.configPath)))
        if case var .object(members) = config {
            members = members.map { $0.0 == "user_binding" ? ($0.0, .object([("app_account_token", .string("order"))])) : $0 }
            config = .object(members)
        }
        try world.write("settle.json", config.serialized(pretty: true))
        script(latest: "GPA.U..0")
        try enqueuePlay("o-unv", token: subscription, user: "u-9", product: pro)
        let (daemon, port) = try startDaemon()
        let ledger = { try? SQLiteLedger(readOnlyPath: self.world.ledgerPath) }
        XCTAssertTrue(eventually(within: 20) { (try? ledger()?.orderRecord("o-unv"))??.order.reason == "token_unverifiable" }, log(daemon))
        script(latest: "GPA.U..1")
        let renewed = PubSubPush.body(messageId: "m-unv-1", notification: DeveloperNotification(
            packageName: Self.packageName, eventTimeMillis: world.time.unixSeconds * 1000,
            kind: .subscription(SubscriptionNotification(rawNotificationType: 2, purchaseToken: PurchaseToken(subscription)!,
                                                         subscriptionId: pro))))
        XCTAssertEqual(try push(port, renewed, token: try fake.pushToken(audience: Self.audience, email: Self.pushEmail)), 200)
        XCTAssertTrue(eventually(within: 20) { (try? ledger()?.playNotification(messageId: "m-unv-1"))??.outcome == "order_created" },
                      log(daemon))
        // The order is made pending by the push and set aside by the pass it asks for.
        XCTAssertTrue(eventually(within: 20) { (try? ledger()?.orderRecord("play-GPA.U..1"))??.order.state == .needsAttention },
                      log(daemon))
        let renewal = try XCTUnwrap(try ledger()?.orderRecord("play-GPA.U..1"))
        XCTAssertEqual(renewal.order.state, .needsAttention)
        XCTAssertEqual(renewal.order.reason, "unclaimed_purchase")
        XCTAssertEqual(try ledger()?.orderRecord("o-unv")?.order.reason, "token_unverifiable", "left as it was")
        XCTAssertEqual(world.deliveries, [], "nothing granted without a binding")
    }

    func testPendingOrder_isAskedAgainAtOnce_whenANotificationSaysItWasPurchased() throws {
        let token = scriptProduct("pp", orderId: "GPA.PP", state: 2)
        try enqueuePlay("o-pp", token: token)
        let (daemon, port) = try startDaemon()
        XCTAssertTrue(eventually(within: 20) { (try? SQLiteLedger(readOnlyPath: world.ledgerPath).orderRecord("o-pp"))??.history.last?.outcome == "wait" },
                      log(daemon))
        // The payment completed: Google's notification, not the ten-minute recheck, brings the order back.
        scriptProduct("pp", orderId: "GPA.PP", state: 0)
        let good = try fake.pushToken(audience: Self.audience, email: Self.pushEmail)
        XCTAssertEqual(try push(port, PubSubPush.body(messageId: "m-pp", notification: purchaseNotification(token)), token: good), 200)
        XCTAssertTrue(eventually(within: 20) { (try? SQLiteLedger(readOnlyPath: world.ledgerPath).orderRecord("o-pp"))??.order.state == .finished },
                      log(daemon))
        XCTAssertEqual(world.deliveries, ["GPA.PP o-pp"])
    }

    func testVoidedPurchaseNotification_revokesTheDeliveredOrderOnce() throws {
        let revokes = world.folder + "/revokes.log"
        try world.write("revoke.sh", "#!/bin/sh\ncat > /dev/null\necho \"$SETTLE_IDEMPOTENCY_KEY $SETTLE_ORDER_ID\" >> \"\(revokes)\"\n", mode: 0o755)
        var config = try JSONValue.parse(Data(contentsOf: URL(fileURLWithPath: world.configPath)))
        if case var .object(members) = config, let i = members.firstIndex(where: { $0.0 == "delivery" }) {
            members[i].1 = .object([("command", .array([.string(world.folder + "/grant.sh")])),
                                    ("revoke_command", .array([.string(world.folder + "/revoke.sh")])), ("timeout_seconds", .number(10))])
            config = .object(members)
        }
        try world.write("settle.json", config.serialized(pretty: true))
        let token = scriptProduct("rv", product: unlock, orderId: "GPA.RV")
        try enqueuePlay("o-rv", token: token, product: unlock)
        let (daemon, port) = try startDaemon()
        XCTAssertTrue(eventually(within: 20) { (try? SQLiteLedger(readOnlyPath: world.ledgerPath).orderRecord("o-rv"))??.order.state == .finished },
                      log(daemon))
        // Google's voided purchases list confirms what the push says.
        fake.script(voided: [VoidedPurchase(purchaseToken: PurchaseToken(token)!, orderId: "GPA.RV",
                                            voidedTimeMillis: world.time.unixSeconds * 1000, rawVoidedSource: 0, rawVoidedReason: 1)])
        let voided = DeveloperNotification(packageName: Self.packageName, eventTimeMillis: world.time.unixSeconds * 1000,
                                           kind: .voidedPurchase(VoidedPurchaseNotification(purchaseToken: PurchaseToken(token)!, orderId: "GPA.RV",
                                                                                            rawProductType: 2, rawRefundType: 1)))
        let good = try fake.pushToken(audience: Self.audience, email: Self.pushEmail)
        XCTAssertEqual(try push(port, PubSubPush.body(messageId: "m-v1", notification: voided), token: good), 200)
        XCTAssertEqual(try push(port, PubSubPush.body(messageId: "m-v2", notification: voided), token: good), 200)
        XCTAssertTrue(eventually(within: 20) { ((try? String(contentsOfFile: revokes, encoding: .utf8)) ?? "").contains("revoke:GPA.RV o-rv") },
                      log(daemon))
        daemon.send(SIGUSR1)
        XCTAssertTrue(eventually(within: 10) { log(daemon).components(separatedBy: "pass.finished").count > 3 }, log(daemon))
        XCTAssertEqual(try String(contentsOfFile: revokes, encoding: .utf8), "revoke:GPA.RV o-rv\n", "revoked more than once")
    }
}
