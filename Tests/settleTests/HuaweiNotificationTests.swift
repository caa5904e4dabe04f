import Foundation
import XCTest
import SettleBase
import SettleLedger
import SettleTesting
import SettleHuawei
import SettleHuaweiSimulator
#if canImport(Glibc)
import Glibc
#endif

/// IAP Kit's key-event notifications on a running `settle run` (issue 34): signed by Huawei's
/// chain or refused, stored once by request id before the 200, a purchase the backend never saw
/// becoming an order, a revocation taking the goods back once, and the history catch-up finding a
/// notification that never reached the listener.
final class HuaweiNotificationTests: HuaweiTestCase {
    let path = "/huawei/notifications"
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
        try configure()
    }

    func configure(binding: String = "user_id", refundReview: [(String, JSONValue)]? = nil) throws {
        try writeHuaweiConfig(extra: [
            ("user_binding", .object([("app_account_token", .string(binding))])),
            ("schedule", .object([("interval_seconds", .number(3600))])),
            ("notifications", .object([("listen", .string("127.0.0.1:0"))])),
            ("delivery", .object([("command", .array([.string(world.folder + "/grant.sh")])),
                                  ("revoke_command", .array([.string(world.folder + "/revoke.sh")])), ("timeout_seconds", .number(10))])),
            ("huawei", .object([
                ("app_id", .string(Self.appId)), ("issuer_id", .string("issuer-1")), ("key_id", .string("key-1")),
                ("private_key_file", .string("huawei-iap.p8")), ("root_certificates", .array([.string("huawei-root.pem")])),
                ("api_url", .string(huawei.baseURL)), ("notifications_path", .string(path)),
            ] + (refundReview.map { [("refund_review", JSONValue.object($0))] } ?? []))),
        ])
    }

    func post(_ port: Int, _ body: Data) throws -> (status: Int, text: String) { try post(port, path: path, body) }

    func stored() throws -> [String: String] {
        let database = try SQLiteDatabase(path: world.ledgerPath, mode: .readOnly)
        defer { try? database.close() }
        return Dictionary(uniqueKeysWithValues: try database.query("SELECT request_id, outcome FROM huawei_notifications").map {
            ($0.string("request_id") ?? "", $0.string("outcome") ?? "")
        })
    }

    func orderState(_ id: String) -> String? { (try? SQLiteLedger(readOnlyPath: world.ledgerPath).orderRecord(id))??.order.state.rawValue }

    func testForgedOrGarbledNotifications_areRefused_andNothingIsStored() throws {
        let (_, port) = try startDaemon()
        scriptOrder("1900.F.1", user: "u-5")
        let forgedChain = HuaweiTestChains.x5c([HuaweiTestChains.forgedLeafPEM, HuaweiTestChains.forgedIntermediatePEM,
                                                HuaweiTestChains.forgedRootPEM])
        fake.forge(.signer(key: try ES256PrivateKey(pem: HuaweiTestChains.forgedLeafKeyPEM), x5c: forgedChain))
        let forged = fake.notification(type: "DID_NEW_TRANSACTION", subtype: "INITIAL_BUY", purchaseOrderId: "1900.F.1",
                                       purchaseToken: token("1900.F.1"), productId: coins)
        XCTAssertEqual(try post(port, forged).status, 401)
        fake.forge(.tamperedPayload)
        XCTAssertEqual(try post(port, fake.notification(type: "REVOKE", purchaseOrderId: "1900.F.1", purchaseToken: token("1900.F.1"))).status, 401)
        fake.forge(nil)
        XCTAssertEqual(try post(port, Data("{\"jws\": 1}".utf8)).status, 400)
        XCTAssertEqual(try post(port, Data("not json".utf8)).status, 400)
        XCTAssertEqual(try stored(), [:])
        XCTAssertEqual(world.deliveries, [])
    }

    /// A purchase only a notification told of becomes its buyer's order, is delivered once and
    /// confirmed; Huawei's repeat is answered and not stored again; a revocation, sent twice,
    /// takes the goods back once.
    func testNewTransactionNobodyEnqueued_isDeliveredOnceToItsBuyer_andARevocationTakesItBackOnce() throws {
        let (daemon, port) = try startDaemon()
        scriptOrder("1900.N.1", user: "u-7", quantity: 2)
        let body = fake.notification(type: "DID_NEW_TRANSACTION", subtype: "INITIAL_BUY", purchaseOrderId: "1900.N.1",
                                     purchaseToken: token("1900.N.1"), productId: coins, requestId: "req-new-1")
        XCTAssertEqual(try post(port, body).status, 200)
        XCTAssertTrue(try post(port, body).text.contains("duplicate"), "a repeat is answered, not stored again")
        XCTAssertTrue(eventually(within: 20) { orderState("huawei-1900.N.1") == "finished" }, log(daemon))
        let record = try XCTUnwrap(try SQLiteLedger(readOnlyPath: world.ledgerPath).orderRecord("huawei-1900.N.1"))
        XCTAssertEqual(record.order.userId, "u-7")
        XCTAssertEqual(record.order.origin, "huawei_notification")
        XCTAssertEqual(world.deliveries, ["1900.N.1 huawei-1900.N.1"])
        XCTAssertEqual(fake.confirmed, ["1900.N.1"])

        fake.revoke("1900.N.1")
        for id in ["req-revoke-1", "req-revoke-2"] {
            XCTAssertEqual(try post(port, fake.notification(type: "REVOKE", subtype: "REFUND_TRANSACTION", purchaseOrderId: "1900.N.1",
                                                            purchaseToken: token("1900.N.1"), requestId: id)).status, 200)
        }
        XCTAssertTrue(eventually(within: 20) { revokes == ["revoke:1900.N.1 huawei-1900.N.1"] && (try? stored().values.filter { $0 == "received" }.isEmpty) == true },
                      "\(revokes) \(log(daemon))")
        XCTAssertEqual(try stored()["req-new-1"], "order_created")
        XCTAssertEqual(try stored()["req-revoke-1"], "revoked")
        let shown = try order("huawei-1900.N.1")
        XCTAssertEqual(shown["huawei_notifications"]?.arrayValue?.map { $0["outcome"]?.looseString ?? "" }, ["order_created", "revoked", "revoked"],
                       "the order's status lists the notifications about it: \(shown.serialized())")
        let text = try settle(expecting: 0, ["status", "huawei-1900.N.1"]).stdout
        XCTAssertTrue(text.contains("Huawei notifications:") && text.contains("DID_NEW_TRANSACTION (INITIAL_BUY): order_created (endpoint)"), text)
        usleep(300_000)
        XCTAssertEqual(revokes.count, 1, "revoked once")
        // Issue 37: the customer's refund history counts the revoked purchase once, however often it was told.
        let status = try settle(expecting: 0, ["status", "--user", "u-7", "--json"]).stdout
        let customer = try JSONValue.parse(status)["customer"]
        XCTAssertEqual(customer?["refunds_90d"]?["count"], .number(1), "\(customer?.serialized() ?? "no customer")")
        XCTAssertEqual(customer?["refunds_90d"]?["orders"]?.arrayValue?.first?["kind"], .string("REVOKE"))
        XCTAssertFalse(log(daemon).contains("SECRETHUAWEITOKEN"), "a purchase token was logged")
    }

    /// A notification for an order the backend enqueued makes that order due; one refunded before
    /// its delivery is never delivered.
    func testNotification_forAnEnqueuedOrder_makesItDue_andARefundBeforeDelivery_isNeverDelivered() throws {
        scriptOrder("1900.E.1", user: "u-1")
        scriptOrder("1900.E.2", user: "u-2")
        try enqueueHuawei("o-e2", purchaseOrderId: "1900.E.2", user: "u-2")
        try world.ledger().writing { db in try db.query("UPDATE orders SET next_attempt_at = next_attempt_at + 86400 WHERE order_id = 'o-e2'") }
        let (daemon, port) = try startDaemon()
        try enqueueHuawei("o-e1", purchaseOrderId: "1900.E.1")
        try world.ledger().writing { db in try db.query("UPDATE orders SET next_attempt_at = next_attempt_at + 86400 WHERE order_id = 'o-e1'") }
        XCTAssertEqual(try post(port, fake.notification(type: "DID_NEW_TRANSACTION", purchaseOrderId: "1900.E.1",
                                                        purchaseToken: token("1900.E.1"), productId: coins)).status, 200)
        XCTAssertEqual(try post(port, fake.notification(type: "REVOKE", subtype: "REFUND_TRANSACTION", purchaseOrderId: "1900.E.2",
                                                        purchaseToken: token("1900.E.2"))).status, 200)
        XCTAssertTrue(eventually(within: 20) { orderState("o-e1") == "finished" && orderState("o-e2") == "rejected" }, log(daemon))
        XCTAssertEqual(world.deliveries, ["1900.E.1 o-e1"])
        XCTAssertEqual(try order("o-e2")["reason"], .string("refunded"))
        XCTAssertEqual(revokes, [], "nothing was delivered, so nothing is revoked")
        XCTAssertNil(orderState("huawei-1900.E.1"), "the enqueued order took its purchase")
    }

    /// A purchase whose developer payload maps to nobody is set aside for `settle assign`.
    func testNewTransaction_thatNamesNobodyKnown_waitsForAssign() throws {
        try configure(binding: "order")
        let (daemon, port) = try startDaemon()
        scriptOrder("1900.U.1", user: "payload-nobody-knows")
        XCTAssertEqual(try post(port, fake.notification(type: "DID_NEW_TRANSACTION", purchaseOrderId: "1900.U.1",
                                                        purchaseToken: token("1900.U.1"), productId: coins)).status, 200)
        XCTAssertTrue(eventually(within: 20) { orderState("huawei-1900.U.1") == "needs_attention" }, log(daemon))
        XCTAssertEqual(try order("huawei-1900.U.1")["reason"], .string("unclaimed_purchase"))
        XCTAssertEqual(world.deliveries, [])
    }

    /// A notification that never reached the listener (settle was down) is found in Huawei's
    /// history at the next start and delivered.
    func testMissedNotification_isCaughtUpFromTheHistory_atTheNextStart() throws {
        let (first, _) = try startDaemon()
        XCTAssertTrue(eventually(within: 20) { ((try? world.ledger().reading { db in try db.query("SELECT * FROM huawei_cursor") })?.count ?? 0) == 1 },
                      "the first start marks where the history catch-up begins: \(log(first))")
        first.send(SIGTERM)
        _ = first.wait()
        // While settle is down Huawei sends a notification nobody takes.
        // (Signed half a minute ago: the catch-up reads up to a few seconds before now.)
        world.time.advance(by: -30)
        scriptOrder("1900.H.1", user: "u-8")
        _ = fake.notification(type: "DID_NEW_TRANSACTION", subtype: "INITIAL_BUY", purchaseOrderId: "1900.H.1",
                              purchaseToken: token("1900.H.1"), productId: coins, requestId: "req-missed")
        let (second, _) = try startDaemon()
        XCTAssertTrue(eventually(within: 20) { orderState("huawei-1900.H.1") == "finished" }, log(first) + "\n-----\n" + log(second))
        XCTAssertEqual(world.deliveries, ["1900.H.1 huawei-1900.H.1"])
        XCTAssertEqual(try stored()["req-missed"], "order_created")
        XCTAssertTrue(fake.calls.contains { $0.hasPrefix("notification_history ") })
    }

    /// A refund review is answered only from evidence, and only when answering is on: every
    /// order delivered gets the operator's decision; a purchase settle cannot show delivered gets
    /// no answer at all.
    func testRefundReview_isAnsweredFromEvidenceOnly() throws {
        try configure(refundReview: [("respond", .bool(true)), ("delivered", .string("reject"))])
        scriptOrder("1900.D.1", user: "u-1")
        try enqueueHuawei("o-d", purchaseOrderId: "1900.D.1")
        let (daemon, port) = try startDaemon()
        XCTAssertTrue(eventually(within: 20) { orderState("o-d") == "finished" }, log(daemon))
        XCTAssertEqual(try post(port, fake.refundRequest(batch: "batch-1", orders: [("1900.D.1", 600)], requestId: "req-r1")).status, 200)
        XCTAssertEqual(try post(port, fake.refundRequest(batch: "batch-2", orders: [("1900.NOBODY.1", 600)], requestId: "req-r2")).status, 200)
        XCTAssertTrue(eventually(within: 20) { (try? stored().values.filter { $0 == "received" }.isEmpty) == true }, log(daemon))
        XCTAssertEqual(try stored()["req-r1"], "answered_reject")
        XCTAssertEqual(try stored()["req-r2"], "not_answered", "no evidence, no answer")
        let answers = fake.refundResults
        XCTAssertEqual(answers.count, 1)
        XCTAssertEqual(answers.first?["refundBatchNo"], .string("batch-1"))
        XCTAssertEqual(answers.first?["reviewType"], .number("2"))
        XCTAssertTrue(answers.first?["remark"]?.looseString?.contains("settle delivered transaction 1900.D.1 (order o-d)") ?? false,
                      "\(answers)")
        XCTAssertEqual(answers.first?["reviewResultList"]?.arrayValue?.first?["refundMoney"], .number("0"))
        let history = try self.history("o-d").map { $0["outcome"]?.looseString ?? "" }
        XCTAssertTrue(history.contains("answered_reject"), "\(history)")
    }

    func testRefundReview_withAnsweringOff_isNotAnswered() throws {
        scriptOrder("1900.O.1", user: "u-1")
        try enqueueHuawei("o-off", purchaseOrderId: "1900.O.1")
        let (daemon, port) = try startDaemon()
        XCTAssertTrue(eventually(within: 20) { orderState("o-off") == "finished" }, log(daemon))
        XCTAssertEqual(try post(port, fake.refundRequest(batch: "batch-3", orders: [("1900.O.1", 600)], requestId: "req-r3")).status, 200)
        XCTAssertTrue(eventually(within: 20) { (try? stored()["req-r3"]) == "not_answered" }, log(daemon))
        XCTAssertEqual(fake.refundResults.count, 0)
    }
}
