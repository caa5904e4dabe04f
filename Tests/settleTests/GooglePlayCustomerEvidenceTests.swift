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

/// A customer's refund policy and an order's usage evidence, recorded with `settle customer`, in
/// the answers of a running `settle run` to Google's refund reviews (`orders.reviewrefund`), which
/// the fake Google checks field by field as Google documents the request: the customer's
/// preference in Google's values, the usage evidence only when the customer consented, nothing
/// of a customer who refused, and nothing unknown.
class GooglePlayCustomerEvidenceTests: GooglePlayTestCase {
    let path = "/google-play/rtdn"
    let refundToken = "prt-SECRETREFUNDTOKEN-0123456789"
    var daemons: [SettleBinary.Running] = []
    var ledgerOverride: [(String, JSONValue)] { [] }

    override func setUpWithError() throws {
        try super.setUpWithError()
        try writeReviewConfig()
    }

    override func tearDownWithError() throws {
        for daemon in daemons where daemon.isRunning {
            daemon.send(SIGKILL)
            _ = daemon.wait()
        }
        try super.tearDownWithError()
    }

    func writeReviewConfig() throws {
        let jwks = JSONWebKeySet.document([(id: "fake-push-key", key: Self.pushKey.publicKey)])
        try world.write("google-jwks.json", jwks.serialized(pretty: true))
        try writePlayConfig(extra: [
            ("schedule", .object([("interval_seconds", .number(3600))])),
            ("notifications", .object([("listen", .string("127.0.0.1:0"))])),
            ("google_play", .object([
                ("package_name", .string(Self.packageName)),
                ("service_account_file", .string("play-service-account.json")),
                ("api_url", .string(google.baseURL)), ("token_url", .string(google.baseURL + "/token")),
                ("notifications_path", .string(path)),
                ("push", .object([("audience", .string(Self.audience)), ("service_account_email", .string(Self.pushEmail)),
                                  ("jwks_file", .string("google-jwks.json"))])),
                ("refund_review", .object([("respond", .bool(true)), ("refund_preference", .string("DECLINE"))])),
            ])),
        ] + ledgerOverride)
    }

    func log(_ daemon: SettleBinary.Running) -> String { (try? String(contentsOfFile: daemon.stderrPath, encoding: .utf8)) ?? "" }

    func startDaemon() throws -> (SettleBinary.Running, Int) {
        let daemon = try SettleBinary.start(["run", "--config", world.configPath], outputFolder: world.folder)
        daemons.append(daemon)
        var port: Int?
        _ = eventually(within: 20) {
            port = log(daemon).split(separator: "\n").first { $0.contains("notifications.listening") }?
                .split(separator: " ").first { $0.hasPrefix("port=") }.flatMap { Int($0.dropFirst(5)) }
            return port != nil && log(daemon).contains("pass.finished")
        }
        guard let port else {
            XCTFail("settle run never listened: \(log(daemon))")
            throw CocoaError(.fileReadUnknown)
        }
        return (daemon, port)
    }

    func pushReview(_ port: Int, orderId: String, account: String, messageId: String) throws -> Int? {
        let notification = DeveloperNotification(
            packageName: Self.packageName, eventTimeMillis: (world.time.unixSeconds - 60) * 1000,
            kind: .pendingRefundReview(PendingRefundReviewNotification(pendingRefundToken: refundToken, orderId: orderId,
                                                                       rawRefundReason: 1, obfuscatedAccountId: account)))
        let client = HTTPClient(configuration: HTTPClientConfiguration(connectTimeout: 5, totalTimeout: 10))
        let token = try fake.pushToken(audience: Self.audience, email: Self.pushEmail)
        return try client.send(HTTPRequest(method: "POST", url: "http://127.0.0.1:\(port)\(path)",
                                           headers: [HTTPHeader("Content-Type", "application/json"),
                                                     HTTPHeader("Authorization", "Bearer \(token)")],
                                           body: PubSubPush.body(messageId: messageId, notification: notification))).status
    }

    /// A consumable bought by `user`, known to Google's Orders API, enqueued as `orderId`.
    func purchase(_ name: String, googleOrderId: String, orderId: String, user: String) throws {
        let token = scriptProduct(name, orderId: googleOrderId, account: user)
        fake.script(order: PlayOrder(orderId: googleOrderId, purchaseToken: PurchaseToken(token)!, state: "PROCESSED",
                                     lineItems: [.init(productId: gems, quantity: 1)]))
        try enqueuePlay(orderId, token: token, user: user)
    }

    func testRefundReviews_carryEachCustomersPreference_andUsageOnlyWhenTheyConsented() throws {
        try purchase("ca", googleOrderId: "GPA.5555-0000-0000-00001", orderId: "o-ca", user: "u-a")
        try purchase("cb", googleOrderId: "GPA.5555-0000-0000-00002", orderId: "o-cb", user: "u-b")
        try purchase("cc", googleOrderId: "GPA.5555-0000-0000-00003", orderId: "o-cc", user: "u-c")
        try settle(["reconcile"])
        for order in ["o-ca", "o-cb", "o-cc"] { XCTAssertEqual(try state(order), "finished", order) }
        // u-a consented, with evidence; u-b has no record; u-c refused, with evidence recorded anyway.
        try settle(expecting: 0, ["customer", "set", "u-a", "--consented", "yes", "--refund-preference", "grant_full",
                                  "--note", "ticket 5"])
        let eventsFile = try world.write("events.json", """
            [{"time": "2026-01-01T10:00:00Z", "description": "spent 60 of 100 gems"}]
            """)
        let usage = ["--consumption-percentage", "45200", "--play-time-seconds", "5400", "--ip-address", "192.0.2.10",
                     "--region-code", "KR", "--administrative-area", "Seoul", "--events-file", eventsFile]
        try settle(expecting: 0, ["customer", "usage", "o-ca"] + usage)
        try settle(expecting: 0, ["customer", "set", "u-c", "--consented", "no", "--refund-preference", "grant_full"])
        try settle(expecting: 0, ["customer", "usage", "o-cc"] + usage)

        let (daemon, port) = try startDaemon()
        for (index, (google, user)) in [("GPA.5555-0000-0000-00001", "u-a"), ("GPA.5555-0000-0000-00002", "u-b"),
                                        ("GPA.5555-0000-0000-00003", "u-c")].enumerated() {
            XCTAssertEqual(try pushReview(port, orderId: google, account: user, messageId: "m-\(index)"), 200)
        }
        XCTAssertTrue(eventually(within: 20) {
            (1...3).allSatisfy { !self.fake.refundReviews("GPA.5555-0000-0000-0000\($0)").isEmpty }
        }, log(daemon))

        let consented = try XCTUnwrap(fake.refundReviews("GPA.5555-0000-0000-00001").first)
        XCTAssertEqual(consented["refundPreference"], .string("APPROVE"), "grant_full is Google's APPROVE")
        XCTAssertEqual(consented["consumptionPercentageMilliunits"], .number("45200"))
        let events = try XCTUnwrap(consented["consumptionUsageEvents"]?.arrayValue)
        XCTAssertEqual(events.count, 2, "the delivery, then the backend's event: \(events)")
        XCTAssertTrue(events[0]["consumptionItemDescription"]?.looseString?.contains("1 h 30 min") == true, "\(events[0])")
        XCTAssertNil(events[0]["ipAddress"], "the delivery event is settle's, not where the customer used it")
        XCTAssertEqual(events[1]["consumptionItemDescription"], .string("spent 60 of 100 gems"))
        XCTAssertEqual(events[1]["consumptionTime"], .string("2026-01-01T10:00:00Z"))
        XCTAssertEqual(events[1]["ipAddress"], .string("192.0.2.10"))
        XCTAssertEqual(events[1]["location"], .object([("regionCode", .string("KR")), ("administrativeArea", .string("Seoul"))]))
        XCTAssertEqual(events[1]["obfuscatedAccountId"], .string("u-a"))

        for google in ["GPA.5555-0000-0000-00002", "GPA.5555-0000-0000-00003"] {
            let body = try XCTUnwrap(fake.refundReviews(google).first)
            XCTAssertEqual(body["refundPreference"], .string("DECLINE"), "\(google): the global preference")
            XCTAssertNil(body["consumptionPercentageMilliunits"], google)
            XCTAssertEqual(body["consumptionUsageEvents"]?.arrayValue?.count, 1, "\(google): the delivery only")
            XCTAssertFalse(body.serialized().contains("192.0.2.10"), google)
        }
        XCTAssertTrue(eventually(within: 10) {
            ((try? self.order("o-cc"))?["history"]?.arrayValue ?? []).contains {
                $0["kind"] == .string("consumption") && $0["detail"]?.looseString?.contains("refused consent") == true
            }
        }, "the history says the refusal was honoured")
        XCTAssertFalse(log(daemon).contains("SECRETREFUNDTOKEN"))

        let shown = try settle(expecting: 0, ["customer", "show", "u-a", "--json"]).stdout
        let policy = try JSONValue.parse(Data(shown.utf8))
        XCTAssertEqual(policy["consented"], .bool(true))
        XCTAssertEqual(policy["refund_preference"], .string("grant_full"))
        XCTAssertEqual(policy["set_by"], .string("cli"))
        let status = try JSONValue.parse(Data(try settle(expecting: 0, ["status", "--user", "u-a", "--json"]).stdout.utf8))
        XCTAssertEqual(status["customer"]?["refund_policy"]?["refund_preference"], .string("grant_full"))
        let used = status["customer"]?["refund_policy"]?["order_usage"]?.arrayValue?.first
        XCTAssertEqual(used?["consumption_milliunits"], .number("45200"))
        XCTAssertEqual(used?["ip_address_known"], .bool(true))
        let text = try settle(expecting: 0, ["status", "--user", "u-a"]).stdout
        XCTAssertTrue(text.contains("usage of o-ca: consumption 45.2 %, play time 1 h 30 min, 1 event"), text)
        XCTAssertFalse(text.contains("192.0.2.10") || shown.contains("192.0.2.10"), "the IP is the store's to see, not a page's")
    }

    func testCustomerCommand_refusesOutOfRangeValues_andUnknownOrders_withExit65() throws {
        try purchase("cd", googleOrderId: "GPA.5555-0000-0000-00004", orderId: "o-cd", user: "u-d")
        for arguments in [["usage", "o-cd", "--consumption-percentage", "200000"], ["usage", "o-cd", "--play-time-seconds", "-5"],
                          ["usage", "o-cd", "--ip-address", "localhost"], ["usage", "o-404", "--consumption-percentage", "5"],
                          ["set", "u-d", "--refund-preference", "APPROVE"],
                          ["set", String(repeating: "u", count: 201), "--consented", "yes"]] {
            let result = try settle(expecting: 65, ["customer"] + arguments)
            XCTAssertFalse(result.stderr.isEmpty, "\(arguments): the refusal names why")
        }
        try settle(expecting: 64, ["customer", "set", "u-d", "--consented", "maybe"])
        try settle(expecting: 64, ["customer", "set", "u-d"])
        XCTAssertTrue(try settle(expecting: 0, ["customer", "show", "u-d"]).stdout.contains("no refund policy recorded"))
    }
}

/// The same answers on a PostgreSQL ledger.
final class GooglePlayCustomerEvidencePostgresTests: GooglePlayCustomerEvidenceTests {
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

    // Linux test discovery lists only the methods a class declares: each inherited test is named here.
    override func testRefundReviews_carryEachCustomersPreference_andUsageOnlyWhenTheyConsented() throws {
        try super.testRefundReviews_carryEachCustomersPreference_andUsageOnlyWhenTheyConsented()
    }

    override func testCustomerCommand_refusesOutOfRangeValues_andUnknownOrders_withExit65() throws {
        try super.testCustomerCommand_refusesOutOfRangeValues_andUnknownOrders_withExit65()
    }
}
