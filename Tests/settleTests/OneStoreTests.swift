import Foundation
import XCTest
import SettleBase
import SettleLedger
import SettleTesting
import SettleOneStore
import SettleOneStoreSimulator
#if canImport(Glibc)
import Glibc
#endif

/// ONE store orders through the built binary (issue 35).
final class OneStoreTests: OneStoreTestCase {
    func testConsumableAndNonConsumable_grantedOnce_andToldAfterTheGrant() throws {
        scriptPurchase("1700000000001")
        scriptPurchase("1700000000002", product: unlock)
        try enqueueOneStore("o-c", purchaseId: "1700000000001")
        try enqueueOneStore("o-n", purchaseId: "1700000000002", product: unlock)
        try settle(expecting: 0, ["reconcile"])
        XCTAssertEqual(try state("o-c"), "finished")
        XCTAssertEqual(try state("o-n"), "finished")
        XCTAssertEqual(Set(world.deliveries), ["1700000000001 o-c", "1700000000002 o-n"])
        XCTAssertEqual(Set(fake.finishes), ["consume 1700000000001", "acknowledge 1700000000002"])
        for finish in finishes.calls.withLock({ $0 }) {
            let id = finish.path.contains("0000000001") ? "1700000000001" : "1700000000002"
            let granted = try XCTUnwrap(world.deliveries.firstIndex { $0.hasPrefix(id + " ") })
            XCTAssertGreaterThan(finish.deliveriesSoFar, granted, "told before the grant: \(finish.path)")
        }
        XCTAssertTrue(finishes.calls.withLock { $0 }.contains { $0.path.contains("/purchases/all/products/os_unlock/") && $0.path.hasSuffix("/acknowledge") })
        try settle(expecting: 0, ["reconcile"])
        XCTAssertEqual(world.deliveries.count, 2, "nothing granted twice")
        XCTAssertFalse(transcript.joined().contains("SECRETONESTORE"), "a token or the client secret leaked")
        let found = try settle(expecting: 0, ["status", "--transaction", "1700000000001"]).stdout
        XCTAssertTrue(found.contains("o-c"), found)
    }

    /// A purchase ONE store knows only under the other market code: the configuration is wrong,
    /// and says so; the order waits instead of being rejected as unknown.
    func testWrongMarketCode_isAConfigurationError_notAnUnknownPurchase() throws {
        scriptPurchase("1700000000009", market: "MKT_GLB")
        try enqueueOneStore("o-m", purchaseId: "1700000000009")
        try settle(["reconcile"])
        XCTAssertEqual(try state("o-m"), "pending")
        let status = try settle(expecting: 0, ["status"]).stdout
        XCTAssertTrue(status.contains("one_store: breaker OPEN") && status.contains("set one_store.market_code to MKT_GLB"), status)
        XCTAssertEqual(world.deliveries, [])
        // An unknown market code is refused by check-config, naming the key.
        try writeOneStoreConfig(section: [("market_code", .string("MKT_KR"))])
        let bad = try settle(["check-config"])
        XCTAssertNotEqual(bad.status, 0)
        XCTAssertTrue(bad.stderr.contains("one_store.market_code: \"MKT_KR\" is not \"MKT_ONE\" or \"MKT_GLB\""), bad.stderr)
        try writeOneStoreConfig(section: [("market_code", .null)])
        let missing = try settle(["check-config"])
        XCTAssertTrue(missing.stderr.contains("one_store.market_code"), missing.stderr)
    }

    /// A refused acknowledge backs off and ends with a person, the refund clock shown; a purchase
    /// the app consumed itself is never granted again by settle.
    func testRefusedAcknowledge_backsOff_thenNeedsAPerson_andOneConsumedElsewhereIsSetAside() throws {
        scriptPurchase("1700000000003", product: unlock)
        try enqueueOneStore("o-r", purchaseId: "1700000000003", product: unlock)
        fake.refuseFinishes(100)
        for _ in 0..<3 {
            try settle(["reconcile"])
            try world.ledger().writing { db in try db.query("UPDATE orders SET next_attempt_at = 0 WHERE order_id = 'o-r'") }
        }
        let order = try self.order("o-r")
        XCTAssertEqual(order["state"], .string("needs_attention"), "\(order.serialized())")
        XCTAssertEqual(order["reason"], .string("store_finish_refused"))
        XCTAssertEqual(world.deliveries, ["1700000000003 o-r"], "granted once")
        let status = try settle(expecting: 0, ["status"]).stdout
        XCTAssertTrue(status.contains("o-r") && status.contains("ONE store refunds it in"), status)

        let consumed = scriptPurchase("1700000000004")
        var purchase = try XCTUnwrap(fake.purchase(token: consumed))
        purchase.consumptionState = 1
        fake.script(purchase)
        try enqueueOneStore("o-e", purchaseId: "1700000000004")
        try settle(["reconcile"])
        XCTAssertEqual(try self.order("o-e")["reason"], .string("finished_elsewhere"))
        XCTAssertEqual(world.deliveries.count, 1)
    }

    /// PNS can be lost: a cancellation nobody was told of is found by re-reading the recent purchase, revoked once.
    func testLostCancellation_isFoundByTheRereads_andRevokedOnce() throws {
        let token = scriptPurchase("1700000000005")
        try enqueueOneStore("o-l", purchaseId: "1700000000005")
        try settle(expecting: 0, ["reconcile"])
        XCTAssertEqual(try state("o-l"), "finished")
        fake.cancel(token: token)
        for _ in 0..<2 {
            try world.ledger().writing { db in try db.query("UPDATE one_store_cursor SET reread_at = 0") }
            try settle(expecting: 0, ["reconcile"])
        }
        XCTAssertEqual(revokes, ["revoke:1700000000005 o-l"])
        XCTAssertEqual(try order("o-l")["refund"]?["kind"], .string("CANCELED"))
    }

    /// PNS on a running daemon: a forged message grants nothing; a payment nobody enqueued becomes
    /// its buyer's order; a cancellation, once the purchase read again shows it, revokes once.
    func testPNS_forgedGrantsNothing_aPaymentBecomesAnOrder_andACancellationRevokesOnce() throws {
        try writeOneStoreConfig(section: [("notifications_path", .string("/one-store/pns"))], extra: [
            ("schedule", .object([("interval_seconds", .number(3600))])),
            ("notifications", .object([("listen", .string("127.0.0.1:0"))])),
        ])
        let (daemon, port) = try startDaemon()
        let token = scriptPurchase("1700000000006", user: "u-6")
        let stranger = try RSAPrivateKey(pem: RSAPrivateKey.generatePEM())
        XCTAssertEqual(try post(port, "/one-store/pns", fake.pns(token: token, state: "COMPLETED", signer: stranger)), 401)
        var tampered = try XCTUnwrap(String(data: fake.pns(token: token, state: "COMPLETED"), encoding: .utf8))
        tampered = tampered.replacingOccurrences(of: "\"price\":\"1200\"", with: "\"price\":\"1\"")
        XCTAssertEqual(try post(port, "/one-store/pns", Data(tampered.utf8)), 401)
        XCTAssertEqual(world.deliveries, [])

        XCTAssertEqual(try post(port, "/one-store/pns", fake.pns(token: token, state: "COMPLETED")), 200)
        XCTAssertTrue(eventually(within: 20) { (try? self.state("onestore-1700000000006")) == "finished" }, log(daemon))
        XCTAssertEqual(world.deliveries, ["1700000000006 onestore-1700000000006"])
        XCTAssertEqual(try order("onestore-1700000000006")["user_id"], .string("u-6"))

        // A cancellation message the purchase does not show yet changes nothing.
        XCTAssertEqual(try post(port, "/one-store/pns", fake.pns(token: token, state: "CANCELED")), 200)
        usleep(500_000)
        XCTAssertEqual(revokes, [])
        daemon.send(SIGTERM)
        _ = daemon.wait()
        fake.cancel(token: token)
        // The cancellation waits, and the next pass (the next start's) sees the purchase cancelled.
        let (second, _) = try startDaemon()
        XCTAssertTrue(eventually(within: 20) { self.revokes == ["revoke:1700000000006 onestore-1700000000006"] }, "\(revokes) \(log(second))")
        // Issue 37: the cancellation is the buyer's refund, counted once in their history.
        let status = try settle(expecting: 0, ["status", "--user", "u-6", "--json"]).stdout
        let customer = try JSONValue.parse(status)["customer"]
        XCTAssertEqual(customer?["refunds_90d"]?["count"], .number(1), status)
        XCTAssertEqual(customer?["refunds_90d"]?["orders"]?.arrayValue?.first?["kind"], .string("CANCELED"), status)
        let text = try settle(expecting: 0, ["status"]).stdout
        XCTAssertTrue(text.contains("refunds: 0 customers with >= 3 refunds in 90 days\n"), text)
        XCTAssertFalse(log(daemon).contains("SECRETONESTORETOKEN") || log(second).contains("SECRETONESTORETOKEN"), "a token was logged")
    }

    func testDemo_recoversAOneStorePurchase_andConsumesIt() throws {
        let tmp = world.folder + "/tmp"
        try FileManager.default.createDirectory(atPath: tmp, withIntermediateDirectories: false)
        let result = try settleWithoutConfig(["demo"], environment: ["TMPDIR": tmp], workingDirectory: tmp)
        XCTAssertEqual(result.status, 0, result.stderr)
        XCTAssertTrue(result.stdout.contains("17070421461015116001 o-5001"), result.stdout)
        XCTAssertTrue(result.stdout.contains("o-5001 17070421461015116001: consumed (by settle, before the three-day refund)"), result.stdout)
        XCTAssertFalse(result.stdout.contains("17070421461015116002 o-5002"), "a purchase the app consumed was granted again")
        XCTAssertFalse(result.stdout.contains("demo-os-token-"), "the demo printed a purchase token")
    }
}

/// The same two kinds, and a lost cancellation found by the re-reads, on a PostgreSQL ledger.
final class OneStorePostgresTests: OneStoreTestCase {
    var url = ""
    var schema = ""

    override func setUpWithError() throws {
        try super.setUpWithError()
        (url, schema) = try TestPostgres.freshSchema()
        try writeOneStoreConfig(extra: [("ledger", .string(url))])
    }

    override func tearDownWithError() throws {
        try super.tearDownWithError()
        TestPostgres.drop(schema: schema)
    }

    func testTwoKindsTold_andALostCancellationRevokedOnce_onPostgreSQL() throws {
        let token = scriptPurchase("1700000000011")
        scriptPurchase("1700000000012", product: unlock)
        try enqueueOneStore("o-c", purchaseId: "1700000000011")
        try enqueueOneStore("o-n", purchaseId: "1700000000012", product: unlock)
        try settle(expecting: 0, ["reconcile"])
        XCTAssertEqual(Set(world.deliveries), ["1700000000011 o-c", "1700000000012 o-n"])
        XCTAssertEqual(Set(fake.finishes), ["consume 1700000000011", "acknowledge 1700000000012"])
        fake.cancel(token: token)
        for _ in 0..<2 {
            let ledger = try PostgresLedger(url: url, time: world.time)
            try ledger.writing { db in try db.query("UPDATE one_store_cursor SET reread_at = 0") }
            try ledger.close()
            try settle(expecting: 0, ["reconcile"])
        }
        XCTAssertEqual(revokes, ["revoke:1700000000011 o-c"])
    }
}
