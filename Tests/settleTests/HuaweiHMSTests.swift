import Foundation
import XCTest
import SettleBase
import SettleTesting
import SettleHuawei
import SettleHuaweiSimulator
#if canImport(Glibc)
import Glibc
#endif

/// HMS IAP (Android AppGallery) orders through the built binary (issue 34): the client's signed
/// purchase data checked with the app's IAP public key, `tokens/verify` on the purchase's site,
/// granted once, confirmed after the grant; a purchase HMS lists as cancelled taken back once.
final class HuaweiHMSTests: HuaweiTestCase {
    var revokesPath: String { world.folder + "/revokes.log" }
    var revokes: [String] { ((try? String(contentsOfFile: revokesPath, encoding: .utf8)) ?? "").split(separator: "\n").map(String.init) }

    override func setUpWithError() throws {
        try super.setUpWithError()
        try world.write("revoke.sh", """
            #!/bin/sh
            cat > /dev/null
            echo "$SETTLE_IDEMPOTENCY_KEY $SETTLE_ORDER_ID" >> "\(revokesPath)"
            exit 0
            """, mode: 0o755)
        try writeHuaweiConfig(extra: [("delivery", .object([("command", .array([.string(world.folder + "/grant.sh")])),
                                                            ("revoke_command", .array([.string(world.folder + "/revoke.sh")])),
                                                            ("timeout_seconds", .number(10))]))])
    }

    @discardableResult
    func scriptHMS(_ name: String, product: String? = nil, kind: Int = 0, user: String = "u-1", accountFlag: Int? = nil) -> String {
        let token = token("hms-" + name)
        var members: [(String, JSONValue)] = [
            ("applicationId", .string(Self.appId)), ("orderId", .string("HMS.\(name)")), ("productId", .string(product ?? coins)),
            ("purchaseToken", .string(token)), ("purchaseState", .number(0)), ("kind", .number(kind)),
            ("purchaseTime", .number((world.time.unixSeconds - 60) * 1000)), ("developerPayload", .string(user)),
            ("consumptionState", .number(0)), ("confirmed", .number(0)),
        ]
        if let accountFlag { members.append(("accountFlag", .number(accountFlag))) }
        hms.script(purchase: .object(members))
        return token
    }

    /// `settle enqueue --store huawei` with the client's signed purchase data.
    func enqueueHMS(_ orderId: String, token: String, user: String = "u-1", product: String? = nil,
                    signature: String? = nil) throws {
        let client = try XCTUnwrap(hms.clientData(token: token))
        let proof = JSONValue.object([("inAppPurchaseData", .string(client.data)), ("inAppDataSignature", .string(signature ?? client.signature))])
        let path = try world.write("proof-\(orderId).json", proof.serialized(), mode: 0o600)
        try settle(expecting: 0, ["enqueue", "--store", "huawei", "--order", orderId, "--user", user, "--product", product ?? coins,
                                  "--proof-file", path])
    }

    func testVerifyThenConfirm_grantsOnce_onThePurchasesSite_andConfirmsAfterTheGrant() throws {
        let consumable = scriptHMS("c")
        let unlockToken = scriptHMS("n", product: unlock, kind: 1)
        let appTouch = scriptHMS("t", user: "u-2", accountFlag: 1)
        try enqueueHMS("o-c", token: consumable)
        try enqueueHMS("o-n", token: unlockToken, product: unlock)
        try enqueueHMS("o-t", token: appTouch, user: "u-2")
        try settle(expecting: 0, ["reconcile"])
        for id in ["o-c", "o-n", "o-t"] { XCTAssertEqual(try state(id), "finished", id) }
        XCTAssertEqual(Set(world.deliveries), ["HMS.c o-c", "HMS.n o-n", "HMS.t o-t"])
        XCTAssertEqual(Set(hms.confirmed), [consumable, unlockToken, appTouch])
        XCTAssertTrue(hms.calls.contains("/apptouch /applications/purchases/tokens/verify"), "\(hms.calls)")
        XCTAssertEqual(hms.calls.filter { $0.hasPrefix("/apptouch") && !$0.hasSuffix("cancelledList") }.count, 2, "the AppTouch purchase's verify and confirm: \(hms.calls)")
        XCTAssertEqual(try history("o-c").last?["outcome"], .string("confirmed"))
        try settle(expecting: 0, ["reconcile"])
        XCTAssertEqual(world.deliveries.count, 3, "nothing granted twice")
        let everything = transcript.joined()
        XCTAssertFalse(everything.contains("SECRETHUAWEITOKEN") || everything.contains("SECRETHMSSECRET"), "a token or the client secret leaked")
    }

    func testForgedClientData_isRefused_withoutAskingHuawei_andAStrangersPurchaseIsNotGranted() throws {
        let token = scriptHMS("f")
        let stranger = try RSAPrivateKey(pem: RSAPrivateKey.generatePEM())
        let data = try XCTUnwrap(hms.clientData(token: token)).data
        try enqueueHMS("o-f", token: token, signature: try stranger.sign(Data(data.utf8)).base64EncodedString())
        let theirs = scriptHMS("s", user: "u-9")
        try enqueueHMS("o-s", token: theirs, user: "u-1")
        try settle(expecting: 0, ["reconcile"])
        XCTAssertEqual(try order("o-f")["reason"], .string("signature_invalid"))
        XCTAssertEqual(try order("o-s")["reason"], .string("user_mismatch"))
        XCTAssertFalse(hms.calls.contains { $0.contains("verify") && $0.contains("HMS.f") })
        XCTAssertEqual(hms.calls.filter { $0.hasSuffix("tokens/verify") }.count, 1, "only the stranger's purchase was asked about: \(hms.calls)")
        XCTAssertEqual(world.deliveries, [])
    }

    /// HMS lists a delivered purchase as refunded: revoked once, however often the poll reads it;
    /// one refunded before delivery is never delivered.
    func testCancelledListRefund_revokesOnce_andARefundBeforeDelivery_isNeverDelivered() throws {
        let delivered = scriptHMS("r")
        try enqueueHMS("o-r", token: delivered)
        try settle(expecting: 0, ["reconcile"])
        XCTAssertEqual(try state("o-r"), "finished")
        hms.cancel(token: delivered)
        let early = scriptHMS("e")
        try enqueueHMS("o-e", token: early)
        hms.cancel(token: early)
        for _ in 0..<2 {
            try world.ledger().writing { db in try db.query("UPDATE huawei_hms_cursor SET polled_at = 0") }
            try settle(expecting: 0, ["reconcile"])
        }
        XCTAssertEqual(revokes, ["revoke:HMS.r o-r"], "revoked once")
        XCTAssertEqual(try order("o-r")["refund"]?["kind"], .string("CANCELLED"))
        XCTAssertEqual(try state("o-e"), "rejected")
        XCTAssertEqual(try order("o-e")["reason"], .string("refunded"))
        XCTAssertEqual(world.deliveries, ["HMS.r o-r"])
        XCTAssertTrue(hms.calls.contains("/site-cn /applications/v2/purchases/cancelledList")
                      && hms.calls.contains("/apptouch /applications/v2/purchases/cancelledList"), "both sites are read: \(hms.calls)")
    }

    /// HMS's server notifications: a paid order nobody enqueued is verified with Huawei and
    /// becomes its buyer's order; an unsigned refund notification is applied only once the
    /// cancelled purchases list shows it; a subscription notification that does not verify is refused.
    func testNotifications_paidOrderBecomesAnOrder_andAnUnsignedRefundWaitsForTheCancelledList() throws {
        try writeHuaweiConfig(extra: [
            ("schedule", .object([("interval_seconds", .number(3600))])),
            ("notifications", .object([("listen", .string("127.0.0.1:0"))])),
            ("delivery", .object([("command", .array([.string(world.folder + "/grant.sh")])),
                                  ("revoke_command", .array([.string(world.folder + "/revoke.sh")])), ("timeout_seconds", .number(10))])),
            ("huawei", .object([("app_id", .string(Self.appId)), ("hms", .object((hmsSection.objectMembers ?? [])
                + [("notifications_path", .string("/huawei/hms"))]))])),
        ])
        let (daemon, port) = try startDaemon()
        let token = scriptHMS("p", user: "u-6")
        func orderNotification(_ type: Int) -> Data {
            JSONValue.object([("version", .string("v2")), ("eventType", .string("ORDER")), ("applicationId", .string(Self.appId)),
                              ("notifyTime", .number(world.time.unixSeconds * 1000)),
                              ("orderNotification", .object([("version", .string("v2")), ("notificationType", .number(type)),
                                                             ("purchaseToken", .string(token)), ("productId", .string(coins))]))]).data
        }
        let paid = try post(port, path: "/huawei/hms", orderNotification(1))
        XCTAssertEqual(paid.status, 200)
        XCTAssertTrue(paid.text.contains("\"errorCode\":\"0\""), paid.text)
        XCTAssertTrue(eventually(within: 20) { (try? self.state("huawei-hms-HMS.p")) == "finished" }, log(daemon))
        XCTAssertEqual(world.deliveries, ["HMS.p huawei-hms-HMS.p"])
        XCTAssertEqual(try order("huawei-hms-HMS.p")["user_id"], .string("u-6"))
        XCTAssertEqual(hms.confirmed, [token])

        // A refund notification alone changes nothing until the cancelled list shows the refund.
        XCTAssertEqual(try post(port, path: "/huawei/hms", orderNotification(2)).status, 200)
        XCTAssertTrue(eventually(within: 20) { self.log(daemon).contains("huawei.cancelled_polled") && self.log(daemon).components(separatedBy: "huawei.cancelled_polled").count > 2 },
                      log(daemon))
        XCTAssertEqual(revokes, [], "an unsigned notification is not evidence of a refund")
        let forged = JSONValue.object([("version", .string("v2")), ("eventType", .string("SUBSCRIPTION")),
                                       ("subNotification", .object([("statusUpdateNotification", .string("{}")),
                                                                    ("notificationSignature", .string("Zm9yZ2Vk"))]))]).data
        XCTAssertEqual(try post(port, path: "/huawei/hms", forged).status, 401)
        let noToken = JSONValue.object([("orderNotification", .object([("notificationType", .number(1))]))]).data
        XCTAssertEqual(try post(port, path: "/huawei/hms", noToken).status, 400, "nothing to ask Huawei about: not stored")
        XCTAssertFalse(log(daemon).contains("SECRETHUAWEITOKEN"), "a purchase token was logged")
        daemon.send(SIGTERM)
        _ = daemon.wait()

        // Once Huawei's cancelled purchases list shows the refund, it is taken back, once.
        hms.cancel(token: token)
        for _ in 0..<2 {
            try world.ledger().writing { db in try db.query("UPDATE huawei_hms_cursor SET polled_at = 0") }
            try settle(expecting: 0, ["reconcile"])
        }
        XCTAssertEqual(revokes, ["revoke:HMS.p huawei-hms-HMS.p"])
    }

    /// An HMS subscription: each period granted once under its own order id while HMS says it is
    /// valid, with its expiry; nothing to confirm; an invalid one waits for a person.
    func testSubscription_eachValidPeriodGrantedOnce_withItsExpiry() throws {
        let token = token("hms-sub")
        func subscribe(_ orderId: String, valid: Bool, expires: Int64) {
            hms.script(purchase: .object([
                ("applicationId", .string(Self.appId)), ("orderId", .string(orderId)), ("productId", .string(vip)),
                ("purchaseToken", .string(token)), ("purchaseState", .number(0)), ("kind", .number(2)),
                ("subscriptionId", .string("SUB.1")), ("subIsvalid", .bool(valid)), ("expirationDate", .number(expires)),
                ("purchaseTime", .number((world.time.unixSeconds - 60) * 1000)), ("developerPayload", .string("u-1")),
            ]))
        }
        let month = world.time.unixSeconds * 1000 + 30 * 86_400_000
        subscribe("HMS.S.0", valid: true, expires: month)
        try enqueueHMS("o-s0", token: token, product: vip)
        try settle(expecting: 0, ["reconcile"])
        XCTAssertEqual(try state("o-s0"), "finished")
        let payload = try JSONValue.parse(String(contentsOfFile: world.folder + "/payload-o-s0.json", encoding: .utf8))
        XCTAssertNotEqual(payload["expires_date"], .null, "the period's end reaches the hook")
        XCTAssertEqual(try history("o-s0").last?["outcome"], .string("subscription_needs_no_confirm"))
        XCTAssertTrue(hms.calls.contains("/sub-cn/sub /applications/v2/purchases/get"), "\(hms.calls)")

        // The renewal: a new order id under the same token, its own order, granted once.
        subscribe("HMS.S.1", valid: true, expires: month * 2)
        try enqueueHMS("o-s1", token: token, product: vip)
        try settle(expecting: 0, ["reconcile"])
        try settle(expecting: 0, ["reconcile"])
        XCTAssertEqual(world.deliveries.filter { $0.hasPrefix("HMS.S.") }, ["HMS.S.0 o-s0", "HMS.S.1 o-s1"])
        subscribe("HMS.S.2", valid: false, expires: month * 2)
        try enqueueHMS("o-s2", token: token, product: vip)
        try settle(expecting: 0, ["reconcile"])
        XCTAssertEqual(world.deliveries.count, 2)
        XCTAssertEqual(try order("o-s2")["reason"], .string("purchase_state_unclear"), "not valid now: a person looks")
        XCTAssertEqual(hms.confirmed, [], "HMS is told of no subscription's delivery")
    }
}
