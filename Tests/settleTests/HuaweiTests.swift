import Foundation
import XCTest
import SettleBase
import SettleTesting
import SettleHuawei
import SettleHuaweiSimulator

/// Huawei AppGallery orders through the built binary: verified against the fake IAP Kit,
/// granted once by the hook, then confirmed as shipped after the grant (issue 34).
final class HuaweiTests: HuaweiTestCase {
    func testConsumableNonConsumableAndSubscriptionRenewal_eachGrantedOnce_andConfirmedAfterItsGrant() throws {
        try writeHuaweiConfig(extra: [("metrics_file", .string(world.folder + "/settle.prom"))])
        try grantsEachKindOnce_andConfirmsAfterTheGrant()
        // A run's metrics file counts that run's requests.
        scriptOrder("1700.M.1")
        try enqueueHuawei("o-m", purchaseOrderId: "1700.M.1")
        try settle(expecting: 0, ["reconcile"])
        let metrics = try String(contentsOfFile: world.folder + "/settle.prom", encoding: .utf8)
        XCTAssertTrue(metrics.split(separator: "\n").contains { $0.hasPrefix("settle_store_requests_total{") && $0.contains("store=\"huawei\"")
            && $0.contains("call=\"order_shipped_confirm\"") && $0.contains("outcome=\"ok\"") }, metrics)
    }
}

/// The same three kinds on a PostgreSQL ledger.
final class HuaweiPostgresTests: HuaweiTestCase {
    var schema = ""

    override func tearDownWithError() throws {
        try super.tearDownWithError()
        TestPostgres.drop(schema: schema)
    }

    func testConsumableNonConsumableAndSubscriptionRenewal_onPostgreSQL_eachGrantedOnce_andConfirmedAfterItsGrant() throws {
        let fresh = try TestPostgres.freshSchema()
        schema = fresh.schema
        try writeHuaweiConfig(extra: [("ledger", .string(fresh.url))])
        try grantsEachKindOnce_andConfirmsAfterTheGrant()
    }
}

extension HuaweiTestCase {
    func grantsEachKindOnce_andConfirmsAfterTheGrant() throws {
        scriptOrder("1700.C.1", quantity: 3)
        scriptOrder("1700.N.1", product: unlock, type: "1")
        let first = scriptOrder("1700.S.1", product: vip, type: "2")
        func subscribe(_ orders: [JSONValue]) {
            fake.script(subscription: FakeHuawei.Subscription(
                subscriptionId: "1700.SUB.1", purchaseToken: token("sub"), status: "1", expiresTimeMs: (world.time.unixSeconds + 86_400 * 30) * 1000,
                orders: orders.map { FakeHuawei.setting($0, [("purchaseToken", .string(token("sub"))), ("subscriptionId", .string("1700.SUB.1"))]) }))
        }
        subscribe([first])
        try enqueueHuawei("o-c", purchaseOrderId: "1700.C.1")
        try enqueueHuawei("o-n", purchaseOrderId: "1700.N.1", product: unlock)
        try enqueueHuawei("o-s1", purchaseOrderId: "1700.S.1", token: token("sub"), product: vip)
        try settle(expecting: 0, ["reconcile"])

        for id in ["o-c", "o-n", "o-s1"] { XCTAssertEqual(try state(id), "finished", id) }
        XCTAssertEqual(Set(world.deliveries), ["1700.C.1 o-c", "1700.N.1 o-n", "1700.S.1 o-s1"])
        let payload = try JSONValue.parse(String(contentsOfFile: world.folder + "/payload-o-c.json", encoding: .utf8))
        XCTAssertEqual(payload["quantity"], .number("3"), "the batch Huawei sold is granted whole")
        XCTAssertEqual(payload["store"], .string("huawei"))
        XCTAssertEqual(Set(fake.confirmed), ["1700.C.1", "1700.N.1", "1700.S.1"])
        let confirms = tap.confirms.withLock { $0 }
        for confirm in confirms {
            let grantedAt = world.deliveries.firstIndex { $0.hasPrefix(confirm.orderId + " ") }
            XCTAssertNotNil(grantedAt, "\(confirm.orderId) confirmed but never granted")
            XCTAssertGreaterThan(confirm.deliveriesSoFar, grantedAt ?? .max, "\(confirm.orderId) confirmed before its grant")
        }

        // The renewal: the backend enqueues the new period's order; it is granted once, as its own order id.
        let renewal = scriptOrder("1700.S.2", product: vip, type: "2")
        subscribe([first, renewal])
        try enqueueHuawei("o-s2", purchaseOrderId: "1700.S.2", token: token("sub"), product: vip)
        try settle(expecting: 0, ["reconcile"])
        try settle(expecting: 0, ["reconcile"])
        XCTAssertEqual(try state("o-s2"), "finished")
        XCTAssertEqual(world.deliveries.filter { $0.hasPrefix("1700.S.2 ") }, ["1700.S.2 o-s2"])
        XCTAssertEqual(world.deliveries.count, 4, "nothing granted twice")
        XCTAssertEqual(fake.confirmed.filter { $0 == "1700.S.2" }.count, 1)
        let order = try self.order("o-s2")
        XCTAssertEqual(order["transaction_id"], .string("1700.S.2"))

        // Support finds it by Huawei's order id, and nothing shows the token.
        let found = try settle(expecting: 0, ["status", "--transaction", "1700.C.1"])
        XCTAssertTrue(found.stdout.contains("o-c"), found.stdout)
        XCTAssertFalse(transcript.joined().contains("SECRETHUAWEITOKEN"), "a purchase token is a secret")
    }
}

final class HuaweiMoreTests: HuaweiTestCase {
    /// A signed answer that is not Huawei's (another root, a leaf without Huawei's marker, a
    /// payload changed after signing) grants nothing and stops the store; one about another app
    /// or bought by a stranger is refused.
    func testForgedAnswers_andStrangersPurchases_grantNothing() throws {
        scriptOrder("1700.F.1")
        try enqueueHuawei("o-f", purchaseOrderId: "1700.F.1")
        let forgedChain = HuaweiTestChains.x5c([HuaweiTestChains.forgedLeafPEM, HuaweiTestChains.forgedIntermediatePEM,
                                                HuaweiTestChains.forgedRootPEM])
        let noMarker = HuaweiTestChains.x5c([HuaweiTestChains.noMarkerLeafPEM, HuaweiSimulatorChain.intermediatePEM,
                                             HuaweiSimulatorChain.rootPEM])
        let forgeries: [(FakeHuawei.Forgery, String)] = [
            (.signer(key: try ES256PrivateKey(pem: HuaweiTestChains.forgedLeafKeyPEM), x5c: forgedChain), "not signed by a configured root"),
            (.signer(key: try ES256PrivateKey(pem: HuaweiTestChains.noMarkerLeafKeyPEM), x5c: noMarker), "lacks Huawei's IAP signing extension"),
            (.tamperedPayload, "signature does not verify"),
        ]
        for (forgery, why) in forgeries {
            fake.forge(forgery)
            try settle(["reconcile"])
            let order = try self.order("o-f")
            XCTAssertEqual(order["state"], .string("pending"), why)
            XCTAssertEqual(order["attempts"], .number("0"), "not the order's fault: no attempt used")
            let status = try settle(expecting: 0, ["status"]).stdout
            XCTAssertTrue(status.contains("huawei: breaker OPEN") && status.contains("configuration fault: Huawei's jwsPurchaseOrder does not verify")
                          && status.contains(why), status)
            XCTAssertEqual(world.deliveries, [], why)
            try world.ledger().writing { db in try db.query("UPDATE store_breakers SET state = 'closed', retry_at = NULL, consecutive_failures = 0") }
        }
        fake.forge(nil)
        scriptOrder("1700.A.1", extra: [("applicationId", .string("99999999"))])
        scriptOrder("1700.U.1", user: "u-2")
        try enqueueHuawei("o-a", purchaseOrderId: "1700.A.1")
        try enqueueHuawei("o-u", purchaseOrderId: "1700.U.1", user: "u-1")
        try settle(expecting: 0, ["reconcile"])
        XCTAssertEqual(try order("o-a")["reason"], .string("bundle_mismatch"))
        XCTAssertEqual(try order("o-u")["reason"], .string("user_mismatch"))
        XCTAssertEqual(try state("o-f"), "finished", "the genuine answer, once it came")
        XCTAssertEqual(world.deliveries, ["1700.F.1 o-f"])
        XCTAssertEqual(fake.confirmed, ["1700.F.1"])
    }

    /// Confirm fails: the order stays delivering (never delivered again) and is confirmed at a
    /// later pass; a revoked purchase is never granted.
    func testConfirmOutage_isRetried_withoutAnotherGrant_andARevokedPurchaseIsRefused() throws {
        scriptOrder("1700.O.1")
        scriptOrder("1700.R.1")
        fake.revoke("1700.R.1")
        try enqueueHuawei("o-o", purchaseOrderId: "1700.O.1")
        try enqueueHuawei("o-r", purchaseOrderId: "1700.R.1")
        tap.failConfirms.withLock { $0 = 1 }
        try settle(["reconcile"])
        XCTAssertEqual(try state("o-o"), "delivering")
        XCTAssertEqual(try order("o-r")["reason"], .string("refunded"))
        XCTAssertEqual(fake.confirmed, [])
        try world.ledger().writing { db in try db.query("UPDATE orders SET next_attempt_at = 0 WHERE order_id = 'o-o'") }
        try world.ledger().writing { db in try db.query("UPDATE store_breakers SET state = 'closed', retry_at = NULL, consecutive_failures = 0") }
        try settle(expecting: 0, ["reconcile"])
        XCTAssertEqual(try state("o-o"), "finished")
        XCTAssertEqual(world.deliveries, ["1700.O.1 o-o"], "granted once, confirmed at the next pass")
        XCTAssertEqual(fake.confirmed, ["1700.O.1"])
    }

    func testCheckConfig_namesTheHuaweiSection_andAWrongKeyOrRoot() throws {
        let ok = try settle(expecting: 0, ["check-config"])
        XCTAssertTrue(ok.stdout.contains("huawei: app \(Self.appId)") && ok.stdout.contains("(contents redacted)"), ok.stdout)
        XCTAssertFalse(ok.stdout.contains("BEGIN"), "the key is named by its file only")
        try world.write("huawei-iap.p8", "not a key", mode: 0o600)
        let badKey = try settle(["check-config"])
        XCTAssertNotEqual(badKey.status, 0)
        XCTAssertTrue(badKey.stderr.contains("huawei.private_key_file"), badKey.stderr)
        try world.write("huawei-iap.p8", Self.iapKeyPEM, mode: 0o600)
        try writeHuaweiConfig(extra: [("huawei", .object([("app_id", .string(Self.appId)), ("issuer_id", .string("i")),
                                                           ("key_id", .string("k")), ("private_key_file", .string("huawei-iap.p8")),
                                                           ("root_certificates", .array([.string("huawei-root.pem")])),
                                                           ("api_urll", .string("https://x.example"))]))])
        let typo = try settle(["check-config"])
        XCTAssertNotEqual(typo.status, 0)
        XCTAssertTrue(typo.stderr.contains("huawei.api_urll: unknown key"), typo.stderr)
    }
}
