import Foundation
import SettleApp
import SettleTesting
import XCTest
import SettleBase
import SettleModel
@testable import SettleLedger

/// Huawei's refund reviews ask for a decision, not for data: a customer's own refund preference
/// (`settle customer set`) replaces `huawei.refund_review.delivered` (decline rejects, grant_full
/// approves), a customer who refused consent gets the operator's decision, and no usage evidence
/// is sent; the history names where the decision came from.
final class HuaweiCustomerDecisionTests: HuaweiTestCase {
    let path = "/huawei/notifications"

    override func setUpWithError() throws {
        try super.setUpWithError()
        try writeHuaweiConfig(extra: [
            ("user_binding", .object([("app_account_token", .string("user_id"))])),
            ("schedule", .object([("interval_seconds", .number(3600))])),
            ("notifications", .object([("listen", .string("127.0.0.1:0"))])),
            ("delivery", .object([("command", .array([.string(world.folder + "/grant.sh")])), ("timeout_seconds", .number(10))])),
            ("huawei", .object([
                ("app_id", .string(Self.appId)), ("issuer_id", .string("issuer-1")), ("key_id", .string("key-1")),
                ("private_key_file", .string("huawei-iap.p8")), ("root_certificates", .array([.string("huawei-root.pem")])),
                ("api_url", .string(huawei.baseURL)), ("notifications_path", .string(path)),
                ("refund_review", .object([("respond", .bool(true)), ("delivered", .string("reject"))])),
            ])),
        ])
    }

    func outcomes() throws -> [String: String] {
        let database = try SQLiteDatabase(path: world.ledgerPath, mode: .readOnly)
        defer { try? database.close() }
        return Dictionary(uniqueKeysWithValues: try database.query("SELECT request_id, outcome FROM huawei_notifications").map {
            ($0.string("request_id") ?? "", $0.string("outcome") ?? "")
        })
    }

    func orderState(_ id: String) -> String? { (try? SQLiteLedger(readOnlyPath: world.ledgerPath).orderRecord(id))??.order.state.rawValue }

    func testACustomersPreference_replacesTheOperatorsDecision_unlessTheyRefusedConsent() throws {
        scriptOrder("1900.C.1", user: "u-grant")
        scriptOrder("1900.C.2", user: "u-refused")
        try enqueueHuawei("o-grant", purchaseOrderId: "1900.C.1", user: "u-grant")
        try enqueueHuawei("o-refused", purchaseOrderId: "1900.C.2", user: "u-refused")
        try settle(expecting: 0, ["customer", "set", "u-grant", "--refund-preference", "grant_full", "--note", "goodwill"])
        try settle(expecting: 0, ["customer", "set", "u-refused", "--consented", "no", "--refund-preference", "grant_full"])
        let (daemon, port) = try startDaemon()
        let log = (try? String(contentsOfFile: daemon.stderrPath, encoding: .utf8)) ?? ""
        XCTAssertTrue(eventually(within: 20) { self.orderState("o-grant") == "finished" && self.orderState("o-refused") == "finished" },
                      log)
        for (batch, order, request) in [("batch-g", "1900.C.1", "req-g"), ("batch-r", "1900.C.2", "req-r")] {
            XCTAssertEqual(try post(port, path: path, fake.refundRequest(batch: batch, orders: [(order, 600)], requestId: request)).status,
                           200)
        }
        XCTAssertTrue(eventually(within: 20) { (try? self.outcomes().values.filter { $0 == "received" }.isEmpty) == true })
        XCTAssertEqual(try outcomes()["req-g"], "answered_approve", "the customer's grant_full")
        XCTAssertEqual(try outcomes()["req-r"], "answered_reject", "a customer who refused consent: the operator's decision")
        let detail = try history("o-grant").compactMap { $0["detail"]?.looseString }.first { $0.contains("answered approve") }
        XCTAssertTrue(detail?.contains("customer u-grant's refund preference grant_full") == true, detail ?? "no history")
    }
}
