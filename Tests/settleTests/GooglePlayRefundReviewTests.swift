import Foundation
import SettleApp
import SettleTesting
import XCTest
import SettleBase
import SettleModel
import SettleGooglePlay
#if canImport(Glibc)
import Glibc
#endif

/// Google's pending refund reviews (`pendingRefundReviewNotification`) on a running `settle run`,
/// answered with `orders.reviewrefund` only from what the ledger shows, within Google's 24 hours.
class GooglePlayRefundReviewTests: GooglePlayTestCase {
    let path = "/google-play/rtdn"
    let refundToken = "prt-SECRETREFUNDTOKEN-0123456789"
    var daemons: [SettleBinary.Running] = []
    /// Extra configuration the PostgreSQL subclass adds (its ledger).
    var ledgerOverride: [(String, JSONValue)] { [] }

    override func setUpWithError() throws {
        try super.setUpWithError()
        let jwks = JSONWebKeySet.document([(id: "fake-push-key", key: Self.pushKey.publicKey)])
        try world.write("google-jwks.json", jwks.serialized(pretty: true))
        try writeReviewConfig(respond: true)
    }

    override func tearDownWithError() throws {
        for daemon in daemons where daemon.isRunning {
            daemon.send(SIGKILL)
            _ = daemon.wait()
        }
        try super.tearDownWithError()
    }

    func writeReviewConfig(respond: Bool, hook: String? = nil) throws {
        try writePlayConfig(hook: hook, extra: [
            ("schedule", .object([("interval_seconds", .number(3600))])),
            ("notifications", .object([("listen", .string("127.0.0.1:0"))])),
            ("google_play", .object([
                ("package_name", .string(Self.packageName)),
                ("service_account_file", .string("play-service-account.json")),
                ("api_url", .string(google.baseURL)),
                ("token_url", .string(google.baseURL + "/token")),
                ("notifications_path", .string(path)),
                ("push", .object([("audience", .string(Self.audience)), ("service_account_email", .string(Self.pushEmail)),
                                  ("jwks_file", .string("google-jwks.json"))])),
                ("refund_review", .object([("respond", .bool(respond)), ("refund_preference", .string("DECLINE"))])),
            ])),
        ] + ledgerOverride)
    }

    func log(_ daemon: SettleBinary.Running) -> String { (try? String(contentsOfFile: daemon.stderrPath, encoding: .utf8)) ?? "" }

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

    /// POSTs Google's pending refund review of `orderId`, asked `askedAgo` seconds ago; the HTTP status.
    func pushReview(_ port: Int, orderId: String, messageId: String, askedAgo: Int64 = 60) throws -> Int? {
        let notification = DeveloperNotification(
            packageName: Self.packageName, eventTimeMillis: (world.time.unixSeconds - askedAgo) * 1000,
            kind: .pendingRefundReview(PendingRefundReviewNotification(pendingRefundToken: refundToken, orderId: orderId, rawRefundReason: 1,
                                                                       obfuscatedAccountId: "u-1")))
        let client = HTTPClient(configuration: HTTPClientConfiguration(connectTimeout: 5, totalTimeout: 10))
        let token = try fake.pushToken(audience: Self.audience, email: Self.pushEmail)
        return try client.send(HTTPRequest(method: "POST", url: "http://127.0.0.1:\(port)\(path)",
                                           headers: [HTTPHeader("Content-Type", "application/json"), HTTPHeader("Authorization", "Bearer \(token)")],
                                           body: PubSubPush.body(messageId: messageId, notification: notification))).status
    }

    /// A consumable bought by u-1 and known to Google's Orders API, enqueued as `orderId`.
    func deliveredPurchase(_ name: String, googleOrderId: String, orderId: String) throws -> (SettleBinary.Running, Int) {
        let token = scriptProduct(name, orderId: googleOrderId, account: "u-1")
        fake.script(order: PlayOrder(orderId: googleOrderId, purchaseToken: PurchaseToken(token)!, state: "PROCESSED",
                                     lineItems: [.init(productId: gems, quantity: 1)]))
        try enqueuePlay(orderId, token: token)
        let (daemon, port) = try startDaemon()
        XCTAssertTrue(eventually(within: 20) { (try? self.state(orderId)) == "finished" }, log(daemon))
        return (daemon, port)
    }

    func consumptionHistory(_ orderId: String) throws -> [JSONValue] {
        try XCTUnwrap(order(orderId)["history"]?.arrayValue).filter { $0["kind"] == .string("consumption") }
    }

    func testRefundReviewOfADeliveredPurchase_isAnsweredFromTheLedgersEvidence_andRecorded_neverShowingTheRefundToken() throws {
        let (daemon, port) = try deliveredPurchase("rr", googleOrderId: "GPA.7777-0000-0000-00001", orderId: "o-rr")
        XCTAssertEqual(try pushReview(port, orderId: "GPA.7777-0000-0000-00001", messageId: "m-rr"), 200)
        XCTAssertTrue(eventually(within: 20) { self.fake.refundReviews("GPA.7777-0000-0000-00001").count == 1 }, log(daemon))
        let body = try XCTUnwrap(fake.refundReviews("GPA.7777-0000-0000-00001").first)
        XCTAssertEqual(body["pendingRefundToken"], .string(refundToken))
        XCTAssertEqual(body["refundPreference"], .string("DECLINE"))
        XCTAssertEqual(body["sampleContentProvided"], .bool(false))
        XCTAssertNil(body["consumptionPercentageMilliunits"], "how much was used is the operator's knowledge, not the ledger's")
        let event = try XCTUnwrap(body["consumptionUsageEvents"]?.arrayValue?.first)
        XCTAssertEqual(event["obfuscatedAccountId"], .string("u-1"))
        assertTime(event["consumptionTime"], nullable: false, "consumptionTime")
        XCTAssertTrue(event["consumptionItemDescription"]?.looseString?.contains("consumed with Google Play") == true, "\(event)")
        XCTAssertTrue(eventually(within: 20) { ((try? self.consumptionHistory("o-rr")) ?? []).count == 1 }, log(daemon))
        let entry = try XCTUnwrap(consumptionHistory("o-rr").first)
        XCTAssertEqual(entry["outcome"], .string("answered"))
        XCTAssertTrue(entry["detail"]?.looseString?.contains("DECLINE") == true, "\(entry)")
        // Another pass sends nothing more: the review was answered once.
        daemon.send(SIGUSR1)
        XCTAssertTrue(eventually(within: 10) { self.log(daemon).components(separatedBy: "pass.finished").count > 3 }, log(daemon))
        XCTAssertEqual(fake.refundReviews("GPA.7777-0000-0000-00001").count, 1)
        XCTAssertFalse(log(daemon).contains("SECRETREFUNDTOKEN"), "the pending refund token was logged")
        XCTAssertFalse(try order("o-rr").serialized().contains("SECRETREFUNDTOKEN"), "the pending refund token is in the history")
        XCTAssertFalse(log(daemon).contains("SECRETPLAYTOKEN"), "a purchase token was logged")
    }

    func testRefundReviewOfAPurchaseSettleNeverDelivered_sendsNothing_andSaysWhy() throws {
        try world.hook("fail.sh", exit: 65)
        let token = scriptProduct("nd", orderId: "GPA.7777-0000-0000-00002", account: "u-1")
        fake.script(order: PlayOrder(orderId: "GPA.7777-0000-0000-00002", purchaseToken: PurchaseToken(token)!, state: "PROCESSED",
                                     lineItems: [.init(productId: gems, quantity: 1)]))
        try writeReviewConfig(respond: true, hook: world.folder + "/fail.sh")
        try enqueuePlay("o-nd", token: token)
        try settle(["reconcile"])
        try settle(expecting: 0, ["resolve", "o-nd", "--as", "wont_grant", "--note", "test"])
        let (daemon, port) = try startDaemon()
        XCTAssertEqual(try pushReview(port, orderId: "GPA.7777-0000-0000-00002", messageId: "m-nd"), 200)
        XCTAssertEqual(try pushReview(port, orderId: "GPA.7777-0000-0000-09999", messageId: "m-none"), 200)
        XCTAssertTrue(eventually(within: 20) {
            self.log(daemon).components(separatedBy: "google_play.refund_review_not_answered").count == 3
        }, log(daemon))
        XCTAssertTrue(fake.refundReviews("GPA.7777-0000-0000-00002").isEmpty, "an answer without evidence of delivery was sent")
        XCTAssertTrue(fake.refundReviews("GPA.7777-0000-0000-09999").isEmpty)
        let entry = try XCTUnwrap(consumptionHistory("o-nd").first)
        XCTAssertEqual(entry["outcome"], .string("not_answered"))
        XCTAssertTrue(entry["detail"]?.looseString?.contains("no answer sent") == true, "\(entry)")
    }

    func testRefundReviewPastGooglesDeadline_orWithAnswersOff_sendsNothing_andIsRecorded() throws {
        let (daemon, port) = try deliveredPurchase("late", googleOrderId: "GPA.7777-0000-0000-00003", orderId: "o-late")
        XCTAssertEqual(try pushReview(port, orderId: "GPA.7777-0000-0000-00003", messageId: "m-late", askedAgo: 25 * 3600), 200)
        XCTAssertTrue(eventually(within: 20) { ((try? self.consumptionHistory("o-late")) ?? []).count == 1 }, log(daemon))
        XCTAssertTrue(fake.refundReviews("GPA.7777-0000-0000-00003").isEmpty)
        XCTAssertTrue(try consumptionHistory("o-late").first?["detail"]?.looseString?.contains("past Google's 24-hour deadline") == true)

        daemon.send(SIGKILL)
        _ = daemon.wait()
        try writeReviewConfig(respond: false)
        let (off, offPort) = try startDaemon()
        XCTAssertEqual(try pushReview(offPort, orderId: "GPA.7777-0000-0000-00003", messageId: "m-off"), 200)
        XCTAssertTrue(eventually(within: 20) { ((try? self.consumptionHistory("o-late")) ?? []).count == 2 }, log(off))
        XCTAssertTrue(fake.refundReviews("GPA.7777-0000-0000-00003").isEmpty)
        XCTAssertTrue(try consumptionHistory("o-late").last?["detail"]?.looseString?.contains("refund_review.respond is off") == true)
    }

    func testRefundReviewOfAPurchaseStillBeingSettled_waitsForItsDelivery_thenIsAnswered() throws {
        let token = scriptProduct("wait", orderId: "GPA.7777-0000-0000-00004", state: 2, account: "u-1")
        fake.script(order: PlayOrder(orderId: "GPA.7777-0000-0000-00004", purchaseToken: PurchaseToken(token)!, state: "PENDING",
                                     lineItems: [.init(productId: gems, quantity: 1)]))
        try enqueuePlay("o-wait", token: token)
        let (daemon, port) = try startDaemon()
        XCTAssertEqual(try history("o-wait").last?["outcome"], .string("wait"))
        XCTAssertEqual(try pushReview(port, orderId: "GPA.7777-0000-0000-00004", messageId: "m-wait"), 200)
        XCTAssertTrue(eventually(within: 20) { self.log(daemon).components(separatedBy: "pass.finished").count > 2 }, log(daemon))
        XCTAssertTrue(fake.refundReviews("GPA.7777-0000-0000-00004").isEmpty)
        XCTAssertTrue(try consumptionHistory("o-wait").isEmpty, "the review was closed while its order was still being settled")
        // The payment completes; the order is delivered; the pass after that answers the review.
        scriptProduct("wait", orderId: "GPA.7777-0000-0000-00004", state: 0, account: "u-1")
        try settle(expecting: 0, ["reconcile", "--order", "o-wait"])
        XCTAssertEqual(try state("o-wait"), "finished")
        daemon.send(SIGUSR1)
        XCTAssertTrue(eventually(within: 20) { self.fake.refundReviews("GPA.7777-0000-0000-00004").count == 1 }, log(daemon))
        XCTAssertTrue(eventually(within: 20) { ((try? self.consumptionHistory("o-wait")) ?? []).first?["outcome"] == .string("answered") },
                      log(daemon))
    }

    func testRefundReviewConfiguration_refusesAPreferenceGoogleHasNot_andAnswersWithoutNotifications() throws {
        func play(_ review: JSONValue, notifications: Bool) -> [(String, JSONValue)] {
            var members: [(String, JSONValue)] = [("package_name", .string(Self.packageName)),
                                                  ("service_account_file", .string("play-service-account.json")),
                                                  ("refund_review", review)]
            if notifications {
                members += [("notifications_path", .string(path)),
                            ("push", .object([("audience", .string(Self.audience)), ("service_account_email", .string(Self.pushEmail)),
                                              ("jwks_file", .string("google-jwks.json"))]))]
            }
            return [("notifications", .object([("listen", .string("127.0.0.1:0"))])), ("google_play", .object(members))]
        }
        try writePlayConfig(extra: play(.object([("respond", .bool(true)), ("refund_preference", .string("GRANT_FULL"))]), notifications: true))
        XCTAssertTrue(try settle(expecting: 78, ["check-config"]).stderr.contains("refund_preference"))
        try writePlayConfig(extra: play(.object([("respond", .bool(true))]), notifications: false))
        XCTAssertTrue(try settle(expecting: 78, ["check-config"]).stderr.contains("notifications_path"))
        try writePlayConfig(extra: play(.object([("respond", .bool(true)), ("refund_preference", .string("APPROVE"))]), notifications: true))
        try settle(expecting: 0, ["check-config"])
    }
}

/// The same reviews on a PostgreSQL ledger.
final class GooglePlayRefundReviewPostgresTests: GooglePlayRefundReviewTests {
    var schema = ""
    var url = ""
    override var ledgerOverride: [(String, JSONValue)] { [("ledger", .string(url))] }

    override func setUpWithError() throws {
        let fresh = try TestPostgres.freshSchema()
        (url, schema) = (fresh.url, fresh.schema)
        try super.setUpWithError()
        try settle(expecting: 0, ["migrate"])
    }

    override func tearDownWithError() throws {
        TestPostgres.drop(schema: schema)
        try super.tearDownWithError()
    }

    override func testRefundReviewOfADeliveredPurchase_isAnsweredFromTheLedgersEvidence_andRecorded_neverShowingTheRefundToken() throws {
        try super.testRefundReviewOfADeliveredPurchase_isAnsweredFromTheLedgersEvidence_andRecorded_neverShowingTheRefundToken()
    }

    override func testRefundReviewOfAPurchaseSettleNeverDelivered_sendsNothing_andSaysWhy() throws {
        try super.testRefundReviewOfAPurchaseSettleNeverDelivered_sendsNothing_andSaysWhy()
    }

    override func testRefundReviewPastGooglesDeadline_orWithAnswersOff_sendsNothing_andIsRecorded() throws {
        try super.testRefundReviewPastGooglesDeadline_orWithAnswersOff_sendsNothing_andIsRecorded()
    }

    override func testRefundReviewOfAPurchaseStillBeingSettled_waitsForItsDelivery_thenIsAnswered() throws {
        try super.testRefundReviewOfAPurchaseStillBeingSettled_waitsForItsDelivery_thenIsAnswered()
    }
}
