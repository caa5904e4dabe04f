import Foundation
import Synchronization
import SettleTesting
import XCTest
@testable import SettleApp
@testable import SettleBase
@testable import SettleModel
@testable import SettleLedger
@testable import SettleEngine
@testable import SettleGooglePlay
@testable import SettleAppStoreSimulator
@testable import SettleGooglePlaySimulator
@testable import SettleGooglePlayModule

/// Google Play orders through whole passes, in process on the test clock: the reconciler as
/// `settle reconcile` builds it, Google's pushes stored as the listener stores them, the fake
/// Google over loopback through libcurl, real hook processes. Every test runs on SQLite here and
/// on PostgreSQL in `GooglePlayReconcilePostgresTests`.
class GooglePlayPassCase: XCTestCase {
    var world: TestWorld!
    var fake: FakeGooglePlay!
    var google: LoopbackHTTPServer!
    /// The PostgreSQL schema of this test (PostgreSQL runs only).
    var schema: (url: String, schema: String)?
    let gems = "gems_100"
    let unlock = "premium_unlock"
    let pro = "pro_monthly"
    let premium = "pro_premium_monthly"
    var nowMs: Int64 { world.time.unixSeconds * 1000 }

    /// The ledger under test, on the test clock; every call opens the same one.
    func makeLedger() throws -> any SettleLedger { try world.ledger() }

    override func setUpWithError() throws {
        world = try TestWorld()
        let document = ServiceAccountKey.document(clientEmail: "settle@example-project.iam.gserviceaccount.com", privateKeyId: "key-1",
                                                  privateKeyPEM: PlayTestKeys.serviceAccountPEM,
                                                  tokenURI: "https://oauth2.googleapis.com/token")
        try world.write("play-service-account.json", document.serialized(pretty: true), mode: 0o600)
        fake = FakeGooglePlay(packageName: PlayTestWorld.packageName, serviceAccount: try ServiceAccountKey(json: document.data),
                              pushKey: PlayTestKeys.push, time: world.time)
        let fake = self.fake!
        google = try LoopbackHTTPServer { request in fake.handle(request) }
        fake.expectTokenURL(google.baseURL + "/token")
        try world.write("google-jwks.json", JSONWebKeySet.document([(id: "fake-push-key", key: PlayTestKeys.push.publicKey)])
            .serialized(pretty: true))
        let folder = world.folder
        try world.write("grant.sh", """
            #!/bin/sh
            payload=$(cat)
            printf '%s\\n' "$payload" > "\(folder)/payload-$SETTLE_ORDER_ID.json"
            [ -e "\(folder)/fail-$SETTLE_ORDER_ID" ] && exit 75
            echo "$SETTLE_IDEMPOTENCY_KEY $SETTLE_ORDER_ID" >> "\(folder)/deliveries.log"
            exit 0
            """, mode: 0o755)
        try world.write("revoke.sh", """
            #!/bin/sh
            cat > "\(folder)/revoke-$SETTLE_ORDER_ID.json"
            echo "$SETTLE_IDEMPOTENCY_KEY $SETTLE_ORDER_ID" >> "\(folder)/revokes.log"
            """, mode: 0o755)
        try configure()
    }

    override func tearDown() {
        google?.stop()
        schema.map { TestPostgres.drop(schema: $0.schema) }
        world = nil
    }

    /// settle.json with Google Play products, pushes and a revoke hook; `binding` is
    /// `user_binding.app_account_token` (`user_id`: the obfuscated account id is the user id).
    func configure(binding: String = "user_id") throws {
        try world.writeConfig(overrides: [
            ("products", .object([
                (world.coins, .object([("type", .string("consumable"))])),
                (gems, .object([("type", .string("consumable")), ("store", .string("google_play"))])),
                (unlock, .object([("type", .string("non_consumable")), ("store", .string("google_play"))])),
                (pro, .object([("type", .string("auto_renewable")), ("store", .string("google_play"))])),
                (premium, .object([("type", .string("auto_renewable")), ("store", .string("google_play"))])),
            ])),
            ("delivery", .object([("command", .array([.string(world.folder + "/grant.sh")])),
                                  ("revoke_command", .array([.string(world.folder + "/revoke.sh")])), ("timeout_seconds", .number(10))])),
            ("user_binding", .object([("app_account_token", .string(binding))])),
            ("notifications", .object([("listen", .string("127.0.0.1:0"))])),
            ("google_play", .object([
                ("package_name", .string(PlayTestWorld.packageName)),
                ("service_account_file", .string("play-service-account.json")),
                ("api_url", .string(google.baseURL)),
                ("token_url", .string(google.baseURL + "/token")),
                ("notifications_path", .string("/google-play/rtdn")),
                ("push", .object([("audience", .string(PlayTestWorld.audience)), ("service_account_email", .string(PlayTestWorld.pushEmail)),
                                  ("jwks_url", .string(google.baseURL + FakeGooglePlay.certsPath)),
                                  ("jwks_file", .string("google-jwks.json"))])),
            ])),
        ])
    }

    // MARK: - Helpers

    func token(_ name: String) -> PurchaseToken { PurchaseToken("tok-\(name)-AO-J1OxYz.SECRETPLAYTOKEN_abcdefghijklmnopqrstuvwxyz")! }

    /// A one-time purchase as Google answers it: purchased, bought a minute ago.
    func product(_ name: String, product: String? = nil, orderId: String, account: String?, quantity: Int? = nil,
                 consumed: Bool = false, acknowledged: Bool = false) -> PurchaseToken {
        let token = token(name)
        fake.script(product: token.value, ProductPurchase(
            rawPurchaseState: 0, rawConsumptionState: consumed ? 1 : 0, rawAcknowledgementState: consumed || acknowledged ? 1 : 0,
            orderId: orderId, productId: product ?? gems, purchaseTimeMillis: nowMs - 60_000, quantity: quantity,
            obfuscatedExternalAccountId: account))
        return token
    }

    /// An active subscription whose latest successful period is `period`; Google's deprecated
    /// latestOrderId names a renewal whose charge was declined, as it may.
    func subscription(_ token: PurchaseToken, product: String? = nil, period: String, account: String?,
                      linked: PurchaseToken? = nil, acknowledged: Bool = false, expiry: String = "2099-01-01T00:00:00Z") {
        fake.script(subscription: token.value, SubscriptionPurchaseV2(
            rawSubscriptionState: "SUBSCRIPTION_STATE_ACTIVE",
            rawAcknowledgementState: acknowledged ? "ACKNOWLEDGEMENT_STATE_ACKNOWLEDGED" : "ACKNOWLEDGEMENT_STATE_PENDING",
            lineItems: [.init(productId: product ?? pro, expiryTime: expiry, latestSuccessfulOrderId: period)],
            latestOrderId: period + "-declined", linkedPurchaseToken: linked, obfuscatedExternalAccountId: account,
            startTime: "2026-12-01T10:00:00Z"))
    }

    func enqueue(_ ledger: any SettleLedger, _ orderId: String, user: String, token: PurchaseToken, product: String? = nil,
                 account: String? = nil) throws {
        _ = try ledger.enqueue(NewOrder(orderId: orderId, userId: user, productId: product ?? gems, appAccountToken: account,
                                        store: .googlePlay, purchaseToken: token))
    }

    /// Stores a push as the listener does once its OIDC token verified.
    func push(_ ledger: any SettleLedger, _ messageId: String, _ kind: DeveloperNotification.Kind) throws {
        let notification = DeveloperNotification(packageName: PlayTestWorld.packageName, eventTimeMillis: nowMs, kind: kind)
        let (name, token) = PlayNotificationInbox.describe(notification)
        XCTAssertTrue(try ledger.storePlayNotification(messageId: messageId, kind: name, token: token,
                                                       payload: String(decoding: notification.json.data, as: UTF8.self)))
    }

    /// A subscription push as Google sends it today: without the deprecated subscriptionId.
    func subscriptionPush(_ ledger: any SettleLedger, _ messageId: String, type: Int, _ token: PurchaseToken) throws {
        try push(ledger, messageId, .subscription(SubscriptionNotification(rawNotificationType: type, purchaseToken: token,
                                                                           subscriptionId: nil)))
    }

    func purchasePush(_ ledger: any SettleLedger, _ messageId: String, _ token: PurchaseToken, sku: String? = nil) throws {
        try push(ledger, messageId, .oneTimeProduct(OneTimeProductNotification(rawNotificationType: 1, purchaseToken: token,
                                                                               sku: sku ?? gems)))
    }

    func voidedPush(_ ledger: any SettleLedger, _ messageId: String, _ token: PurchaseToken, orderId: String) throws {
        try push(ledger, messageId, .voidedPurchase(VoidedPurchaseNotification(purchaseToken: token, orderId: orderId, rawProductType: 2,
                                                                               rawRefundType: 1)))
    }

    @discardableResult
    func pass(_ ledger: any SettleLedger) throws -> PassReport { try world.reconciler(ledger: ledger).runPass() }

    /// App Store orders, each a receipt of one coins purchase the Apple simulator verifies.
    func enqueueAppStore(_ ledger: any SettleLedger, _ ids: [String]) throws {
        for (index, id) in ids.enumerated() {
            let transaction = "70000\(index)"
            let receipt = world.scriptReceipt(id, [SimulatedTransaction(productId: world.coins, transactionId: transaction)])
            _ = try ledger.enqueue(NewOrder(orderId: id, userId: "u-\(id)", productId: world.coins, transactionId: transaction,
                                            receipt: receipt))
        }
    }

    /// Stored pushes not worked on yet, by message id.
    func waitingPushes(_ ledger: any SettleLedger) throws -> [String] {
        try ledger.pendingPlayNotifications(limit: 100).map(\.messageId)
    }

    /// SQL straight on the ledger, as a backend or an operator would run it.
    func execute(_ sql: String) throws {
        try SQLiteDatabase(path: world.ledgerPath, mode: .readWrite).execute(sql)
    }

    /// Makes writing the order `orderId` fail a constraint, as a row a backend broke would.
    func poisonOrders(orderId: String) throws {
        try execute("""
            CREATE TRIGGER poisoned BEFORE INSERT ON orders WHEN NEW.order_id = '\(orderId)'
            BEGIN SELECT RAISE(ABORT, 'this row cannot be written'); END
            """)
    }

    func order(_ ledger: any SettleLedger, _ id: String) throws -> Order? { try ledger.orderRecord(id)?.order }

    var deliveries: [String] { lines("deliveries.log") }
    var revokes: [String] { lines("revokes.log") }

    func lines(_ name: String) -> [String] {
        ((try? String(contentsOfFile: world.folder + "/" + name, encoding: .utf8)) ?? "").split(separator: "\n").map(String.init)
    }

    func payload(_ name: String) throws -> JSONValue {
        try JSONValue.parse(Data(contentsOf: URL(fileURLWithPath: world.folder + "/" + name + ".json")))
    }

    // MARK: - Renewals, upgrades (issue 23, 2.1)

    // MARK: - Deprecations (2.11)

    // MARK: - Refunds (2.3, 2.5)

    // MARK: - Purchase pushes (2.6, 2.7)

    // MARK: - Finished elsewhere (2.9)

    // MARK: - A slow Google (2.8, 2.12)

    // MARK: - Pushes on the ledger (2.13)

    // MARK: - Numbers from outside in the ledger's rows (issue 32, item 16; GooglePlayNumberTests.swift)
}

/// The pass tests on a SQLite ledger; `GooglePlayReconcilePostgresTests` runs them on PostgreSQL.
class GooglePlayReconcileTests: GooglePlayPassCase {
    func testRenewal_goesToTheSubscriberWhoseGrantItIs_neverToTheOldestOrderHoldingTheToken() throws {
        // Backends store the account id with each order (`app_account_token: order`).
        try configure(binding: "order")
        let ledger = try makeLedger()
        let alices = token("alice-sub")
        subscription(alices, period: "GPA.S..0", account: "acct-alice")
        // Bob's backend enqueued Alice's token first: Google's account id is not his.
        try enqueue(ledger, "o-bob", user: "bob", token: alices, product: pro, account: "acct-bob")
        try pass(ledger)
        XCTAssertEqual(try order(ledger, "o-bob")?.reason, RejectionReason.userMismatch.rawValue)
        world.time.advance(by: 60)
        try enqueue(ledger, "o-alice", user: "alice", token: alices, product: pro, account: "acct-alice")
        try pass(ledger)
        XCTAssertEqual(try order(ledger, "o-alice")?.state, .finished)
        // A month later Google renews it; the push names no subscriptionId, as Google's current example.
        subscription(alices, period: "GPA.S..1", account: "acct-alice", acknowledged: true, expiry: "2099-02-01T00:00:00Z")
        try subscriptionPush(ledger, "m-renew", type: 2, alices)
        try pass(ledger)
        let renewal = try XCTUnwrap(try order(ledger, "play-GPA.S..1"))
        XCTAssertEqual(renewal.userId, "alice", "the renewal goes to the subscriber, not to the oldest order holding the token")
        XCTAssertEqual(renewal.state, .finished)
        XCTAssertEqual(deliveries, ["GPA.S..0 o-alice", "GPA.S..1 play-GPA.S..1"])
        XCTAssertEqual(try payload("payload-play-GPA.S..1")["user_id"], .string("alice"))
        XCTAssertEqual(try payload("payload-play-GPA.S..1")["purchase_date"], .string("2099-01-01T00:00:00Z"),
                       "a renewal's period starts where the one before it ended, not at the subscription's start")
        XCTAssertEqual(try payload("payload-o-alice")["purchase_date"], .string("2026-12-01T10:00:00Z"))
    }

    func testRenewal_thatNoOrderHoldsAGrantOfUnderAVerifiedBinding_isUnclaimed_neverDelivered() throws {
        try configure(binding: "order")
        let ledger = try makeLedger()
        let alices = token("alice-only")
        subscription(alices, period: "GPA.U..0", account: "acct-alice")
        try enqueue(ledger, "o-bob", user: "bob", token: alices, product: pro, account: "acct-bob")
        try pass(ledger)
        XCTAssertEqual(try order(ledger, "o-bob")?.reason, RejectionReason.userMismatch.rawValue)
        subscription(alices, period: "GPA.U..1", account: "acct-alice")
        try subscriptionPush(ledger, "m-renew", type: 2, alices)
        try pass(ledger)
        let renewal = try XCTUnwrap(try order(ledger, "play-GPA.U..1"), "the paid renewal is kept")
        XCTAssertEqual(renewal.userId, "")
        XCTAssertEqual(renewal.state, .needsAttention)
        XCTAssertEqual(renewal.reason, AttentionReason.unclaimedPurchase.rawValue)
        XCTAssertEqual(deliveries, [], "a renewal was delivered to someone whose grant it is not")
    }

    func testUpgrade_goesToTheUserOfTheLinkedGrant_andItsPayloadNamesTheGrantItReplaces() throws {
        let ledger = try makeLedger()
        let monthly = token("monthly")
        subscription(monthly, period: "GPA.M", account: "alice")
        try enqueue(ledger, "o-monthly", user: "alice", token: monthly, product: pro)
        try pass(ledger)
        XCTAssertEqual(try order(ledger, "o-monthly")?.state, .finished)
        // Alice upgrades in the app: a new token, linked to the one it replaces.
        let upgraded = token("premium")
        subscription(upgraded, product: premium, period: "GPA.P", account: "alice", linked: monthly)
        try subscriptionPush(ledger, "m-upgrade", type: 4, upgraded)
        try pass(ledger)
        XCTAssertEqual(try order(ledger, "play-GPA.P")?.userId, "alice")
        XCTAssertEqual(try order(ledger, "play-GPA.P")?.state, .finished)
        let granted = try payload("payload-play-GPA.P")
        XCTAssertEqual(granted["replaces"], .string("GPA.M"), "the backend cannot end the old tier")
        XCTAssertEqual(granted["product_id"], .string(premium))
        XCTAssertNil(try payload("payload-o-monthly")["replaces"])
        // The same for an upgrade the backend enqueues itself.
        let again = token("premium-again")
        subscription(again, product: premium, period: "GPA.Q", account: "alice", linked: upgraded)
        try enqueue(ledger, "o-again", user: "alice", token: again, product: premium)
        try pass(ledger)
        XCTAssertEqual(try payload("payload-o-again")["replaces"], .string("GPA.P"))
    }

    func testSubscriptionRetriedAcrossARenewal_keepsThePeriodItHolds_andTheRenewalIsItsOwnOrder() throws {
        let ledger = try makeLedger()
        let sub = token("retried")
        subscription(sub, period: "GPA.K..0", account: "alice")
        try enqueue(ledger, "o-sub", user: "alice", token: sub, product: pro)
        try world.write("fail-o-sub", "")
        try pass(ledger)
        XCTAssertEqual(try order(ledger, "o-sub")?.state, .pending)
        XCTAssertEqual(try order(ledger, "o-sub")?.verified?.grantKey, "GPA.K..0")
        // Google renews it before the delivery is retried.
        subscription(sub, period: "GPA.K..1", account: "alice")
        try FileManager.default.removeItem(atPath: world.folder + "/fail-o-sub")
        world.time.advance(by: 3600)
        try subscriptionPush(ledger, "m-renew", type: 2, sub)
        try pass(ledger)
        let held = try order(ledger, "o-sub")
        XCTAssertEqual(held?.state, .finished, held?.lastError ?? "")
        XCTAssertEqual(deliveries.sorted(), ["GPA.K..0 o-sub", "GPA.K..1 play-GPA.K..1"])
    }

    func testSubscriptionBoughtOutsideTheApp_isFoundWithoutSubscriptionId_andGrantedItsLatestSuccessfulOrder() throws {
        let ledger = try makeLedger()
        let sub = token("outside")
        subscription(sub, period: "GPA.O..0", account: "carol")
        try subscriptionPush(ledger, "m-bought", type: 4, sub)
        try pass(ledger)
        let made = try XCTUnwrap(try order(ledger, "play-GPA.O..0"), "the subscription was dropped as unknown_product")
        XCTAssertEqual(made.productId, pro)
        XCTAssertEqual(made.state, .finished)
        XCTAssertEqual(deliveries, ["GPA.O..0 play-GPA.O..0"], "granted under the deprecated latestOrderId")
        XCTAssertEqual(fake.subscription(sub.value)?.acknowledgementState, .acknowledged)
    }

    func testRefundOfOnePeriod_revokesThatPeriodOnly_andARenewalNotYetDelivered_isStillDelivered() throws {
        let ledger = try makeLedger()
        let sub = token("refunded-period")
        subscription(sub, period: "GPA.R..0", account: "alice")
        try enqueue(ledger, "o-sub", user: "alice", token: sub, product: pro)
        try pass(ledger)
        subscription(sub, period: "GPA.R..1", account: "alice", acknowledged: true)
        try subscriptionPush(ledger, "m-renew", type: 2, sub)
        // The renewal's first delivery fails: it waits, holding its period.
        try world.write("fail-play-GPA.R..1", "")
        try pass(ledger)
        XCTAssertEqual(try order(ledger, "play-GPA.R..1")?.state, .pending)
        // Google refunds the first period only.
        try FileManager.default.removeItem(atPath: world.folder + "/fail-play-GPA.R..1")
        fake.script(voided: [VoidedPurchase(purchaseToken: sub, orderId: "GPA.R..0", voidedTimeMillis: nowMs, rawVoidedSource: 0,
                                            rawVoidedReason: 1)])
        world.time.advance(by: 3601)
        try pass(ledger)
        XCTAssertEqual(revokes, ["revoke:GPA.R..0 o-sub"], "a period Google did not refund was revoked")
        XCTAssertEqual(try order(ledger, "play-GPA.R..1")?.state, .finished, "a paid renewal was rejected")
        XCTAssertEqual(deliveries, ["GPA.R..0 o-sub", "GPA.R..1 play-GPA.R..1"])
    }

    func testQuantityBasedPartialRefund_revokesOnlyTheVoidedQuantity() throws {
        let ledger = try makeLedger()
        let five = product("five", orderId: "GPA.F", account: "alice", quantity: 5)
        try enqueue(ledger, "o-five", user: "alice", token: five)
        try pass(ledger)
        XCTAssertEqual(try payload("payload-o-five")["quantity"], .number(5))
        fake.script(voided: [VoidedPurchase(purchaseToken: five, orderId: "GPA.F", voidedTimeMillis: nowMs, rawVoidedSource: 0,
                                            rawVoidedReason: 1, voidedQuantity: 2)])
        world.time.advance(by: 3601)
        try pass(ledger)
        XCTAssertEqual(revokes, ["revoke:GPA.F o-five"], "Google lists a partial refund only when asked")
        XCTAssertEqual(try payload("revoke-o-five")["revoke_quantity"], .number(2))
        // Google voids whole units: each taken back in full, with no percentage.
        XCTAssertEqual(try payload("revoke-o-five")["revocation_type"], .string("REFUND_FULL"))
        XCTAssertEqual(try payload("revoke-o-five")["revocation_percentage"], .null)
        // A full refund takes back all that was delivered.
        let one = product("one", product: unlock, orderId: "GPA.W", account: "alice")
        try enqueue(ledger, "o-one", user: "alice", token: one, product: unlock)
        try pass(ledger)
        fake.script(voided: [VoidedPurchase(purchaseToken: one, orderId: "GPA.W", voidedTimeMillis: nowMs, rawVoidedSource: 0,
                                            rawVoidedReason: 1)])
        world.time.advance(by: 3601)
        try pass(ledger)
        XCTAssertEqual(try payload("revoke-o-one")["revoke_quantity"], .number(1))
    }

    func testVoidedPush_revokesNothingUntilGooglesVoidedPurchasesListConfirmsIt() throws {
        let ledger = try makeLedger()
        let bought = product("pushed-void", product: unlock, orderId: "GPA.V", account: "alice")
        try enqueue(ledger, "o-v", user: "alice", token: bought, product: unlock)
        try pass(ledger)
        // Anyone who can make Pub/Sub deliver a message says this purchase was refunded; Google does not.
        try voidedPush(ledger, "m-void", bought, orderId: "GPA.V")
        try pass(ledger)
        XCTAssertEqual(revokes, [], "a voiding Google never confirmed was applied")
        XCTAssertEqual(try ledger.playNotification(messageId: "m-void")?.outcome, "received", "asked again at the next pass")
        world.time.advance(by: Double(PlayNotificationInbox.voidedConfirmationSeconds))
        try pass(ledger)
        XCTAssertEqual(try ledger.playNotification(messageId: "m-void")?.outcome, "not_confirmed")
        XCTAssertEqual(revokes, [])
        XCTAssertEqual(try order(ledger, "o-v")?.state, .finished)
        // Google's list shows a real one: the push is applied at once.
        let refunded = product("real-void", product: unlock, orderId: "GPA.VR", account: "alice")
        try enqueue(ledger, "o-vr", user: "alice", token: refunded, product: unlock)
        try pass(ledger)
        fake.script(voided: [VoidedPurchase(purchaseToken: refunded, orderId: "GPA.VR", voidedTimeMillis: nowMs, rawVoidedSource: 0,
                                            rawVoidedReason: 1)])
        try voidedPush(ledger, "m-void-2", refunded, orderId: "GPA.VR")
        try pass(ledger)
        XCTAssertEqual(try ledger.playNotification(messageId: "m-void-2")?.outcome, "voided")
        XCTAssertEqual(revokes, ["revoke:GPA.VR o-vr"])
    }

    func testPurchasePush_forATokenAnotherUsersRejectedOrderHolds_createsTheBuyersOwnOrder() throws {
        let ledger = try makeLedger()
        let alices = product("alices", orderId: "GPA.A", account: "alice")
        try enqueue(ledger, "o-bob", user: "bob", token: alices)
        try pass(ledger)
        XCTAssertEqual(try order(ledger, "o-bob")?.reason, RejectionReason.userMismatch.rawValue)
        try purchasePush(ledger, "m-bought", alices)
        try pass(ledger)
        XCTAssertEqual(try order(ledger, "play-GPA.A")?.userId, "alice", "the push was swallowed by Bob's rejected order")
        XCTAssertEqual(try order(ledger, "play-GPA.A")?.state, .finished)
        XCTAssertEqual(deliveries, ["GPA.A play-GPA.A"])
        XCTAssertEqual(try order(ledger, "o-bob")?.state, .rejected)
    }

    func testPurchasePush_forAProductNotInTheConfiguration_isKeptAsAnOrder_unknownProduct() throws {
        let ledger = try makeLedger()
        let gold = product("gold", product: "gold_bar", orderId: "GPA.G", account: "alice")
        try purchasePush(ledger, "m-gold", gold, sku: "gold_bar")
        let season = token("season")
        subscription(season, product: "season_pass", period: "GPA.SP", account: "alice")
        try subscriptionPush(ledger, "m-season", type: 4, season)
        try pass(ledger)
        for (id, product) in [("play-GPA.G", "gold_bar"), ("play-GPA.SP", "season_pass")] {
            let kept = try XCTUnwrap(try order(ledger, id), "\(product): a paid purchase was dropped")
            XCTAssertEqual(kept.productId, product)
            XCTAssertEqual(kept.userId, "alice")
            XCTAssertEqual(kept.state, .needsAttention)
            XCTAssertEqual(kept.reason, AttentionReason.unknownProduct.rawValue)
        }
        XCTAssertEqual(deliveries, [])
    }

    func testPurchaseGoogleSaysConsumedOrAcknowledged_isSetAside_finishedElsewhere_andARetryDeliversIt() throws {
        let ledger = try makeLedger()
        let consumed = product("consumed", orderId: "GPA.C", account: "alice", consumed: true)
        let acknowledged = product("acknowledged", product: unlock, orderId: "GPA.K", account: "alice", acknowledged: true)
        try enqueue(ledger, "o-c", user: "alice", token: consumed)
        try enqueue(ledger, "o-k", user: "alice", token: acknowledged, product: unlock)
        try pass(ledger)
        for id in ["o-c", "o-k"] {
            XCTAssertEqual(try order(ledger, id)?.state, .needsAttention, id)
            XCTAssertEqual(try order(ledger, id)?.reason, AttentionReason.finishedElsewhere.rawValue, id)
        }
        XCTAssertEqual(deliveries, [], "a purchase someone already finished was delivered again")
        XCTAssertTrue(try order(ledger, "o-c")?.lastError?.contains("settle retry o-c") == true)
        // Support checked: the customer never got it.
        _ = try ledger.retry(orderIds: ["o-c"], note: "not granted: ticket 7", proof: nil)
        try pass(ledger)
        XCTAssertEqual(try order(ledger, "o-c")?.state, .finished)
        XCTAssertEqual(deliveries, ["GPA.C o-c"])
        XCTAssertEqual(try order(ledger, "o-k")?.state, .needsAttention)
    }

    func testSlowGoogle_getsABoundedShareOfThePass_kicksProgressAfterEachPush_andTheAppStoreOrdersSettleInThatPass() throws {
        let ledger = try makeLedger()
        try enqueueAppStore(ledger, ["a-1", "a-2", "a-3"])
        for i in 1...6 {
            try purchasePush(ledger, "m-slow-\(i)", product("slow-\(i)", orderId: "GPA.S\(i)", account: "alice"))
        }
        // Google's next three answers each take 6 s by the test clock. The pass lends Google 15 s:
        // a quarter of the 60 s interval, which is longer than one exchange (2 s connect + 3 s).
        for _ in 0..<3 { fake.failNextAPICalls(.slow(6)) }
        let reconciler = try world.reconciler(ledger: ledger)
        XCTAssertEqual(reconciler.sideWorkSeconds, 15)
        let time = world.time
        let started = time.now
        let kicks = Mutex<[Double]>([])
        try reconciler.runPass(progress: { kicks.withLock { $0.append(time.now.timeIntervalSince(started)) } })
        let at = kicks.withLock { $0 }
        let gaps = zip(at, [0] + at).map { $0 - $1 }
        XCTAssertLessThanOrEqual(gaps.max() ?? .infinity, 6, "the watchdog went unfed for longer than one push (kicks at \(at))")
        for id in ["a-1", "a-2", "a-3"] {
            XCTAssertEqual(try order(ledger, id)?.state, .finished, "\(id) waited for a slow Google")
        }
        XCTAssertEqual(try waitingPushes(ledger), ["m-slow-4", "m-slow-5", "m-slow-6"], "the pass gave Google more than its share")
        // Google answers again: the pushes left are worked at the next pass.
        try pass(ledger)
        XCTAssertEqual(try waitingPushes(ledger), [])
        XCTAssertEqual(Set(deliveries.filter { $0.hasPrefix("GPA.") }), Set((1...6).map { "GPA.S\($0) play-GPA.S\($0)" }))
    }

    /// Google refusing even an eighth of its quota (the bucket at its floor): Google as a whole.
    func testGoogleFailingAsAWhole_stopsTheStoredPushesAtTheFirst_feedsItsBreaker_andTheRestWaitForItsRetryAfter() throws {
        let ledger = try makeLedger()
        let pacer = try world.pacer(atFloor: [PacerKey(store: "google_play", group: "one_time_purchases", environment: "production")])
        func pass(_ ledger: any SettleLedger) throws { _ = try world.reconciler(ledger: ledger, pacer: pacer).runPass() }
        try enqueueAppStore(ledger, ["a-1"])
        for i in 1...4 {
            try purchasePush(ledger, "m-down-\(i)", product("down-\(i)", orderId: "GPA.D\(i)", account: "alice"))
        }
        fake.failNextAPICalls(.status(429, retryAfter: "120"))
        try pass(ledger)
        XCTAssertEqual(fake.calls.count, 1, "every stored push asked a Google that had asked to be left alone")
        XCTAssertEqual(try order(ledger, "a-1")?.state, .finished, "Google's trouble held back an App Store order")
        XCTAssertEqual(try ledger.breakers()[.googlePlay]?.state, .open)
        XCTAssertEqual(try waitingPushes(ledger).count, 4)
        // Past the breaker's own 30 s cool-down, inside Google's Retry-After: nothing is asked.
        world.time.advance(by: 60)
        try pass(ledger)
        XCTAssertEqual(fake.calls.count, 1, "Google was asked again before its Retry-After")
        // After it, the stored pushes are the probe (no Play order is due): Google answers, all are worked.
        world.time.advance(by: 61)
        try pass(ledger)
        XCTAssertEqual(try waitingPushes(ledger), [])
        XCTAssertEqual(try ledger.breakers()[.googlePlay]?.state, .closed)
        XCTAssertEqual(deliveries.filter { $0.hasPrefix("GPA.") }.count, 4)
    }

    func testGoogle429AboveTheFloor_isPaced_thePushesWaitForTheNextPass_andTheBreakerStaysClosed() throws {
        let ledger = try makeLedger()
        let pacer = try world.pacer()
        for i in 1...3 {
            try purchasePush(ledger, "m-paced-\(i)", product("paced-\(i)", orderId: "GPA.P\(i)", account: "alice"))
        }
        fake.failNextAPICalls(.status(429, retryAfter: "5"))
        _ = try world.reconciler(ledger: ledger, pacer: pacer).runPass()
        XCTAssertEqual(fake.calls.filter { !$0.path.contains("voidedpurchases") }.count, 1,
                       "the rest of the pushes wait once the bucket is spent (the voided poll has a bucket of its own)")
        XCTAssertEqual(try ledger.breakers()[.googlePlay]?.state, .closed, "settle too fast is not Google down")
        XCTAssertEqual(try ledger.breakers()[.googlePlay]?.consecutiveFailures, 0)
        XCTAssertEqual(try waitingPushes(ledger).count, 3)
        world.time.advance(by: 6)
        _ = try world.reconciler(ledger: ledger, pacer: pacer).runPass()
        XCTAssertEqual(try waitingPushes(ledger), [])
        XCTAssertEqual(deliveries.filter { $0.hasPrefix("GPA.P") }.count, 3)
        XCTAssertEqual(pacer.bucket(PacerKey(store: "google_play", group: "one_time_purchases", environment: "production"))?.throttles, 1)
    }

    func testPushWhoseEffectCannotBeWritten_isKeptNotApplied_andTheOtherPushesAndPassesGoOn() throws {
        let ledger = try makeLedger()
        try poisonOrders(orderId: "play-GPA.BAD")
        try enqueueAppStore(ledger, ["a-1"])
        try purchasePush(ledger, "m-bad", product("bad", orderId: "GPA.BAD", account: "alice"))
        try purchasePush(ledger, "m-good", product("good", orderId: "GPA.GOOD", account: "alice"))
        try pass(ledger)
        let bad = try XCTUnwrap(try ledger.playNotification(messageId: "m-bad"))
        XCTAssertEqual(bad.outcome, "not_applied")
        XCTAssertTrue(bad.detail?.contains("this row cannot be written") == true, bad.detail ?? "")
        XCTAssertEqual(try order(ledger, "play-GPA.GOOD")?.state, .finished)
        XCTAssertEqual(try order(ledger, "a-1")?.state, .finished)
        XCTAssertNoThrow(try pass(ledger), "one push stopped every pass")
    }

    func testPushMadeOrder_keepsItsOrigin() throws {
        let ledger = try makeLedger()
        try purchasePush(ledger, "m-origin", product("origin", orderId: "GPA.O", account: "alice"))
        try pass(ledger)
        XCTAssertEqual(try order(ledger, "play-GPA.O")?.origin, "google_play_notification")
    }

    func testOrdersWithAbsurdTimesAndAttemptsInTheirRows_areSettled_andThePassDoesNotTrap() throws { try checkOrdersWithAbsurdTimesAndAttemptsInTheirRows() }
    func testVoidedPollCursorWithAbsurdTimes_neverTraps_andNeverAsksGoogleForAWindowAfterNow() throws { try checkVoidedPollCursorWithAbsurdTimes() }
    func testStoredPushesWithAbsurdTimes_areNotApplied_withTheirReason_andNeverClaimedAgain() throws { try checkStoredPushesWithAbsurdTimes() }

    // MARK: - Google's push keys (2.13)

    func testPushSignedUnderAKeyGoogleRotatedIn_isAcceptedThroughTheConfiguredURL_andUnknownKeysAreCounted() throws {
        let ledger = try makeLedger()
        let metrics = Metrics()
        let reconciler = try Reconciler.configured(try world.configuration(), ledger: ledger, environment: [:], log: .silent,
                                                   metrics: metrics, modules: TestStores.modules)
        let inbox = try XCTUnwrap((reconciler.stores[.googlePlay] as? GooglePlayAdapter)?.inbox)
        // A key the operator's file does not hold: only Google's published set has it.
        fake.rotateIn(pushKey: PlayTestKeys.stranger.publicKey, id: "rotated-in")
        func post(_ messageId: String, keyId: String) throws -> Int {
            let token = try fake.pushToken(audience: PlayTestWorld.audience, email: PlayTestWorld.pushEmail, signer: PlayTestKeys.stranger,
                                           keyId: keyId)
            let notification = DeveloperNotification(packageName: PlayTestWorld.packageName, eventTimeMillis: nowMs,
                                                     kind: .test)
            let request = HTTPServerRequest(method: "POST", path: "/google-play/rtdn", headers: [HTTPHeader("Authorization", "Bearer \(token)")],
                                            body: PubSubPush.body(messageId: messageId, notification: notification))
            return inbox.answer(request).response.status
        }
        XCTAssertEqual(try post("m-rotated", keyId: "rotated-in"), 200)
        XCTAssertEqual(fake.certsRequests, 1)
        XCTAssertEqual(try post("m-unknown", keyId: "nobodys"), 403)
        XCTAssertNil(try ledger.playNotification(messageId: "m-unknown"))
        let file = metrics.render(summary: try ledger.summary(OrderFilter(limit: 0)), bundleId: world.bundleId)
        XCTAssertTrue(file.contains("settle_google_play_push_unknown_key_total{bundle_id=\"\(world.bundleId)\"} 1"), file)
    }
}
