import Foundation
import SettleTesting
import XCTest
@testable import SettleApp
@testable import SettleBase
@testable import SettleModel
@testable import SettleLedger
@testable import SettleEngine
@testable import SettleAppStoreSimulator

/// The delivery hook's answer may carry the customer's consent and refund preference and the
/// order's usage (`"customer"`, `"usage"` next to `"granted"`), for its own order and customer
/// only; garbage is refused by member, named in the log, and never stops the grant. Real hook
/// processes, a real ledger (SQLite here, PostgreSQL in `HookCustomerAnswerPostgresTests`).
class HookCustomerAnswerTests: XCTestCase {
    var world: TestWorld!
    var schema: (url: String, schema: String)?
    let collector = LineCollector()
    var logged: [String] { collector.lines }

    override func setUpWithError() throws { world = try TestWorld() }
    override func tearDown() {
        schema.map { TestPostgres.drop(schema: $0.schema) }
        world = nil
    }

    func makeLedger() throws -> any SettleLedger { try world.ledger() }

    /// One order of user `u-o-1` delivered by a hook that prints `answer` (with `KEY` replaced by
    /// the idempotency key) as its last line and exits `code`.
    func deliver(answer: String, exit code: Int32 = 0) throws -> any SettleLedger {
        let quoted = answer.replacingOccurrences(of: "'", with: "'\\''").replacingOccurrences(of: "KEY", with: "%s")
        let path = try world.hook("answer.sh", exit: code, extra: "printf '\(quoted)\\n' \"$SETTLE_IDEMPOTENCY_KEY\"")
        try world.writeConfig(hook: path)
        let ledger = try makeLedger()
        let receipt = world.scriptReceipt("o-1", [SimulatedTransaction(productId: world.coins, transactionId: "2000000000000001")])
        _ = try ledger.enqueue(NewOrder(orderId: "o-1", userId: "u-o-1", productId: world.coins, transactionId: "2000000000000001",
                                        receipt: receipt))
        let lines = collector
        let log = Log(environment: [:], time: world.time, sink: { line in lines.append(line) })
        _ = try world.reconciler(ledger: ledger, log: log).runPass()
        return ledger
    }

    func testAnswerWithCustomerAndUsage_recordsThemForTheOrdersOwnCustomer_setByTheHook() throws {
        let ledger = try deliver(answer: """
            {"granted": "KEY", "customer": {"consented": true, "refund_preference": "decline"}, \
            "usage": {"consumption_percentage": 45200, "play_time_seconds": 5400, "ip_address": "192.0.2.10", \
            "location": {"region_code": "KR"}, "events": [{"time": "2026-01-01T10:00:00Z", "description": "spent coins"}]}}
            """)
        XCTAssertEqual(try ledger.orderRecord("o-1")?.order.state, .finished)
        let policy = try XCTUnwrap(ledger.customerPolicy(userId: "u-o-1"))
        XCTAssertEqual(policy.consented, true)
        XCTAssertEqual(policy.refundPreference, .decline)
        XCTAssertEqual(policy.setBy, .hook)
        XCTAssertEqual(policy.consentBy, "hook")
        let usage = try XCTUnwrap(ledger.orderUsage(orderId: "o-1"))
        XCTAssertEqual(usage.consumptionMilliunits, 45200)
        XCTAssertEqual(usage.events.count, 1)
        XCTAssertEqual(usage.location, CoarseLocation(regionCode: "KR"))
        XCTAssertEqual(try ledger.auditEntries(), [], "a hook is not a person")
    }

    func testAnswerNamingAnotherCustomer_isRefused_theGrantStands_andTheUsageOfItsOwnOrderIsKept() throws {
        let ledger = try deliver(answer: """
            {"granted": "KEY", "customer": {"user_id": "u-victim", "consented": false, "refund_preference": "grant_full"}, \
            "usage": {"consumption_percentage": 100000}}
            """)
        XCTAssertEqual(try ledger.orderRecord("o-1")?.order.state, .finished)
        XCTAssertNil(try ledger.customerPolicy(userId: "u-victim"), "a hook set another customer's policy")
        XCTAssertNil(try ledger.customerPolicy(userId: "u-o-1"), "the refused member set nothing")
        XCTAssertEqual(try ledger.orderUsage(orderId: "o-1")?.consumptionMilliunits, 100_000)
        XCTAssertTrue(logged.contains { $0.contains("hook.customer_refused") && $0.contains("another user") }, "\(logged)")
    }

    func testAnswerWithGarbage_isRefusedByMember_namedInTheLog_andNeverStopsTheGrant() throws {
        let huge = String(repeating: "x", count: 2000)
        let ledger = try deliver(answer: """
            {"granted": "KEY", "customer": {"consented": "yes"}, \
            "usage": {"consumption_percentage": 200000, "play_time_seconds": -3, "events": [{"time": "now", "description": "\(huge)"}]}}
            """)
        XCTAssertEqual(try ledger.orderRecord("o-1")?.order.state, .finished)
        XCTAssertNil(try ledger.customerPolicy(userId: "u-o-1"))
        XCTAssertNil(try ledger.orderUsage(orderId: "o-1"))
        XCTAssertTrue(logged.contains { $0.contains("hook.customer_refused") && $0.contains("customer.consented") }, "\(logged)")
        XCTAssertTrue(logged.contains { $0.contains("hook.usage_refused") && $0.contains("usage.consumption_percentage") }, "\(logged)")
    }

    func testWebhookAnswer_carriesTheCustomer_inItsJSONBody() throws {
        let server = try LoopbackHTTPServer { request in
            let key = request.header("Idempotency-Key") ?? ""
            return .json(200, JSONValue.object([
                ("granted", .string(key)),
                ("customer", .object([("consented", .bool(true)), ("refund_preference", .string("neutral"))])),
                ("usage", .object([("play_time_seconds", .number(60))])),
            ]).data)
        }
        defer { server.stop() }
        try world.write("webhook-secret", "WEBHOOK-SECRET-0b1c2d3e4f", mode: 0o600)
        try world.writeConfig(overrides: [("delivery", .object([
            ("webhook", .object([("url", .string(server.baseURL + "/grant")), ("secret_file", .string("webhook-secret"))])),
            ("timeout_seconds", .number(3)),
        ]))])
        let ledger = try makeLedger()
        let receipt = world.scriptReceipt("o-1", [SimulatedTransaction(productId: world.coins, transactionId: "2000000000000002")])
        _ = try ledger.enqueue(NewOrder(orderId: "o-1", userId: "u-w", productId: world.coins, transactionId: "2000000000000002",
                                        receipt: receipt))
        _ = try world.reconciler(ledger: ledger).runPass()
        XCTAssertEqual(try ledger.orderRecord("o-1")?.order.state, .finished)
        XCTAssertEqual(try ledger.customerPolicy(userId: "u-w")?.refundPreference, .neutral)
        XCTAssertEqual(try ledger.orderUsage(orderId: "o-1")?.playTimeSeconds, 60)
    }

    func testAnswerOfAHookThatDidNotDeliver_isNotRead_andAnOlderAnswerReadsAsBefore() throws {
        let ledger = try deliver(answer: #"{"customer": {"consented": true}, "usage": {"consumption_percentage": 5}}"#, exit: 75)
        XCTAssertEqual(try ledger.orderRecord("o-1")?.order.state, .pending)
        XCTAssertNil(try ledger.customerPolicy(userId: "u-o-1"), "only a delivered order's answer is read")
        XCTAssertNil(try ledger.orderUsage(orderId: "o-1"))
        XCTAssertNil(Reconciler.answerObject("hook saw o-1\n{\"granted\": \"1\"}"), "an older answer has nothing to read")
        XCTAssertNil(Reconciler.answerObject("\"customer\" said hello, not JSON"))
    }
}

/// The same answers on a PostgreSQL ledger.
final class HookCustomerAnswerPostgresTests: HookCustomerAnswerTests {
    override func makeLedger() throws -> any SettleLedger {
        if schema == nil { schema = try TestPostgres.freshSchema() }
        return try PostgresLedger(url: schema!.url, time: world.time)
    }

    // Linux test discovery lists only the methods a class declares: each inherited test is named here.
    override func testAnswerWithCustomerAndUsage_recordsThemForTheOrdersOwnCustomer_setByTheHook() throws {
        try super.testAnswerWithCustomerAndUsage_recordsThemForTheOrdersOwnCustomer_setByTheHook()
    }

    override func testAnswerNamingAnotherCustomer_isRefused_theGrantStands_andTheUsageOfItsOwnOrderIsKept() throws {
        try super.testAnswerNamingAnotherCustomer_isRefused_theGrantStands_andTheUsageOfItsOwnOrderIsKept()
    }

    override func testAnswerWithGarbage_isRefusedByMember_namedInTheLog_andNeverStopsTheGrant() throws {
        try super.testAnswerWithGarbage_isRefusedByMember_namedInTheLog_andNeverStopsTheGrant()
    }

    override func testWebhookAnswer_carriesTheCustomer_inItsJSONBody() throws {
        try super.testWebhookAnswer_carriesTheCustomer_inItsJSONBody()
    }

    override func testAnswerOfAHookThatDidNotDeliver_isNotRead_andAnOlderAnswerReadsAsBefore() throws {
        try super.testAnswerOfAHookThatDidNotDeliver_isNotRead_andAnOlderAnswerReadsAsBefore()
    }
}
