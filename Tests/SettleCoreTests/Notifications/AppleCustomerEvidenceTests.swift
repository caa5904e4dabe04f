import SettleTesting
import XCTest
@testable import SettleApp
@testable import SettleBase
@testable import SettleModel
import SettleAppStore
@testable import SettleLedger
@testable import SettleEngine
@testable import SettleAppStoreSimulator
@testable import SettleAppStoreModule

/// A customer's refund policy and an order's usage evidence in the answer to Apple's
/// CONSUMPTION_REQUEST (Send Consumption Information v2), on the test clock against the
/// simulator, which checks the body as Apple documents it: the customer's preference replaces
/// the global one; the consumption percentage goes only with consent; a customer who refused
/// consent gets no answer; nothing the customer did not consent to, and nothing unknown, is
/// sent. SQLite here, PostgreSQL in `AppleCustomerEvidencePostgresTests`.
class AppleCustomerEvidenceTests: XCTestCase {
    var world: TestWorld!
    var schema: (url: String, schema: String)?
    let buyer = "6f1e4c2a-5b3d-4e8f-9a0b-1c2d3e4f5a6b"
    var nowMs: Int64 { world.time.unixSeconds * 1000 }

    override func setUpWithError() throws {
        world = try TestWorld()
        try world.writeConfig(serverAPI: true, overrides: [
            ("notifications", .object([("listen", .string("127.0.0.1:0"))])),
            ("user_binding", .object([("app_account_token", .string("user_id"))])),
            ("consumption", .object([("respond", .bool(true)), ("customer_consented", .bool(true)),
                                     ("refund_preference", .string("GRANT_FULL"))])),
        ])
    }

    override func tearDown() {
        schema.map { TestPostgres.drop(schema: $0.schema) }
        world = nil
    }

    func makeLedger() throws -> any SettleLedger { try world.ledger() }

    /// A consumable bought by the buyer, delivered by a pass, then the subject of a refund request
    /// answered by the next pass; the body Apple received, nil when none was sent.
    func answer(_ transaction: String, setUp: (any SettleLedger, String) throws -> Void) throws -> (body: JSONValue?, history: [HistoryEntry]) {
        let ledger = try makeLedger()
        let reconciler = try world.reconciler(ledger: ledger)
        let inbox = try XCTUnwrap(reconciler.inbox)
        let bought = world.scriptTransaction(transaction, purchaseDateMs: nowMs - 5000, appAccountToken: buyer)
        let orderId = "o-\(transaction)"
        _ = try ledger.enqueue(NewOrder(orderId: orderId, userId: buyer, productId: world.coins, transactionId: transaction))
        _ = try reconciler.runPass()
        XCTAssertEqual(try ledger.orderRecord(orderId)?.order.state, .finished)
        try setUp(ledger, orderId)
        let before = world.simulator.consumptionRequests.count
        let signed = try SimulatedNotification(type: "CONSUMPTION_REQUEST", transaction: bought, bundleId: world.bundleId,
                                               consumptionRequestReason: "UNINTENDED_PURCHASE", signedDateMs: nowMs - 1000).signed()
        guard case .stored = inbox.receive(signedPayload: signed, source: "endpoint") else {
            XCTFail("not stored")
            return (nil, [])
        }
        _ = try reconciler.runPass()
        let sent = world.simulator.consumptionRequests.dropFirst(before)
        XCTAssertLessThanOrEqual(sent.count, 1)
        let history = try ledger.orderRecord(orderId)?.history.filter { $0.kind == .consumption } ?? []
        return (sent.first?.body, history)
    }

    func keys(_ body: JSONValue?) -> [String] {
        guard case let .object(members)? = body else { return [] }
        return members.map(\.0).sorted()
    }

    func testNoCustomerRecord_isAnsweredWithTheGlobalSettings_asBefore() throws {
        let (body, history) = try answer("941") { _, _ in }
        XCTAssertEqual(keys(body), ["customerConsented", "deliveryStatus", "refundPreference", "sampleContentProvided"])
        XCTAssertEqual(body?["refundPreference"], .string("GRANT_FULL"))
        XCTAssertEqual(history.last?.outcome, "answered")
    }

    func testConsentedCustomer_withEvidence_sendsTheirPreferenceAndThePercentage_andNothingAppleDoesNotDefine() throws {
        let (body, history) = try answer("942") { ledger, order in
            try ledger.setCustomer(self.buyer, CustomerChange(consented: true, refundPreference: .decline), source: .hook)
            try ledger.setOrderUsage(OrderUsage(orderId: order, consumptionMilliunits: 45200, playTimeSeconds: 5400,
                                                events: [UsageEvent(at: 1_767_225_600, description: "spent coins")],
                                                ipAddress: "192.0.2.10", location: CoarseLocation(regionCode: "KR")), source: .hook)
        }
        XCTAssertEqual(keys(body), ["consumptionPercentage", "customerConsented", "deliveryStatus", "refundPreference",
                                    "sampleContentProvided"])
        XCTAssertEqual(body?["consumptionPercentage"], .number("45200"))
        XCTAssertEqual(body?["refundPreference"], .string("DECLINE"))
        XCTAssertEqual(body?["customerConsented"], .bool(true))
        let entry = try XCTUnwrap(history.last)
        XCTAssertEqual(entry.outcome, "answered", "the simulator took it (202): \(entry.detail ?? "")")
        XCTAssertTrue(entry.detail?.contains("consent given") == true, entry.detail ?? "")
        XCTAssertTrue(entry.detail?.contains("not fields of Apple's ConsumptionRequest v2") == true, entry.detail ?? "")
        XCTAssertFalse(entry.detail?.contains("192.0.2.10") == true, "the IP is in no answer to Apple: \(entry.detail ?? "")")
    }

    func testConsentUnknown_sendsTheirPreference_butNoUsage() throws {
        let (body, _) = try answer("943") { ledger, order in
            try ledger.setCustomer(self.buyer, CustomerChange(refundPreference: .decline), source: .cli)
            try ledger.setOrderUsage(OrderUsage(orderId: order, consumptionMilliunits: 90000), source: .hook)
        }
        XCTAssertEqual(body?["refundPreference"], .string("DECLINE"))
        XCTAssertNil(body?["consumptionPercentage"], "usage without the customer's consent was sent")
    }

    func testCustomerWhoRefusedConsent_getsNoAnswer_andTheHistorySaysWhy() throws {
        let (body, history) = try answer("944") { ledger, order in
            try ledger.setCustomer(self.buyer, CustomerChange(consented: false, refundPreference: .decline), source: .console,
                                   by: Operator(name: "bob", channel: .web, role: .support))
            try ledger.setOrderUsage(OrderUsage(orderId: order, consumptionMilliunits: 1000), source: .hook)
        }
        XCTAssertNil(body, "Apple takes an answer only with customerConsented true, which would be false")
        let entry = try XCTUnwrap(history.last)
        XCTAssertEqual(entry.outcome, "not_answered")
        XCTAssertTrue(entry.detail?.contains("refused consent") == true, entry.detail ?? "")
    }

    func testProratedWithoutAPercentage_sendsTheGlobalPreference_andNeutralLeavesItOut() throws {
        let (prorated, history) = try answer("945") { ledger, _ in
            try ledger.setCustomer(self.buyer, CustomerChange(consented: true, refundPreference: .grantProrated), source: .hook)
        }
        XCTAssertEqual(prorated?["refundPreference"], .string("GRANT_FULL"), "GRANT_PRORATED without a percentage is refused by Apple")
        XCTAssertTrue(history.last?.detail?.contains("GRANT_PRORATED needs a consumption percentage") == true)
        let (withPercentage, _) = try answer("946") { ledger, order in
            try ledger.setOrderUsage(OrderUsage(orderId: order, consumptionMilliunits: 30000), source: .hook)
        }
        XCTAssertEqual(withPercentage?["refundPreference"], .string("GRANT_PRORATED"))
        XCTAssertEqual(withPercentage?["consumptionPercentage"], .number("30000"))
        let (neutral, _) = try answer("947") { ledger, _ in
            try ledger.setCustomer(self.buyer, CustomerChange(refundPreference: .neutral), source: .hook)
        }
        XCTAssertNotNil(neutral)
        XCTAssertNil(neutral?["refundPreference"], "Apple has no neutral value; its refundPreference is optional")
    }

    func testGlobalProrated_forAConsentedCustomerWhoUsedNothing_leavesThePreferenceOut_asAppleRefusesIt() throws {
        try world.writeConfig(serverAPI: true, overrides: [
            ("notifications", .object([("listen", .string("127.0.0.1:0"))])),
            ("user_binding", .object([("app_account_token", .string("user_id"))])),
            ("consumption", .object([("respond", .bool(true)), ("customer_consented", .bool(true)),
                                     ("refund_preference", .string("GRANT_PRORATED"))])),
        ])
        let (body, history) = try answer("948") { ledger, order in
            try ledger.setCustomer(self.buyer, CustomerChange(consented: true), source: .hook)
            try ledger.setOrderUsage(OrderUsage(orderId: order, consumptionMilliunits: 0), source: .hook)
        }
        XCTAssertEqual(body?["consumptionPercentage"], .number("0"))
        XCTAssertNil(body?["refundPreference"])
        XCTAssertEqual(history.last?.outcome, "answered", "Apple took it: \(history.last?.detail ?? "")")
    }

    func testTheSimulator_refusesWhatApplesConsumptionRequestDoesNotTake() {
        func code(_ members: [(String, JSONValue)]) -> Int? {
            let base: [(String, JSONValue)] = [("customerConsented", .bool(true)), ("deliveryStatus", .string("DELIVERED")),
                                               ("sampleContentProvided", .bool(false))]
            var merged = base.filter { b in !members.contains { $0.0 == b.0 } }
            merged += members
            return SimulatedConsumptionRequest.problem(.object(merged))?.code
        }
        XCTAssertNil(code([]))
        XCTAssertNil(code([("consumptionPercentage", .number("100000")), ("refundPreference", .string("GRANT_PRORATED"))]))
        XCTAssertEqual(code([("customerConsented", .bool(false))]), 4000035)
        XCTAssertEqual(code([("deliveryStatus", .string("SHIPPED"))]), 4000036)
        XCTAssertEqual(code([("consumptionPercentage", .number("200000"))]), 4000000)
        XCTAssertEqual(code([("consumptionPercentage", .number("-1"))]), 4000000)
        XCTAssertEqual(code([("refundPreference", .string("APPROVE"))]), 4000000)
        XCTAssertEqual(code([("playTime", .number("3"))]), 4000000, "v1's fields are not v2's")
        XCTAssertEqual(code([("refundPreference", .string("GRANT_PRORATED")), ("consumptionPercentage", .number("0"))]), 4000000)
        XCTAssertEqual(code([("deliveryStatus", .string("UNDELIVERED_OTHER")), ("consumptionPercentage", .number("5"))]), 4000000)
    }
}

/// The same answers on a PostgreSQL ledger.
final class AppleCustomerEvidencePostgresTests: AppleCustomerEvidenceTests {
    override func makeLedger() throws -> any SettleLedger {
        if schema == nil { schema = try TestPostgres.freshSchema() }
        return try PostgresLedger(url: schema!.url, time: world.time)
    }

    // Linux test discovery lists only the methods a class declares: each inherited test is named here.
    override func testNoCustomerRecord_isAnsweredWithTheGlobalSettings_asBefore() throws { try super.testNoCustomerRecord_isAnsweredWithTheGlobalSettings_asBefore() }
    override func testConsentedCustomer_withEvidence_sendsTheirPreferenceAndThePercentage_andNothingAppleDoesNotDefine() throws { try super.testConsentedCustomer_withEvidence_sendsTheirPreferenceAndThePercentage_andNothingAppleDoesNotDefine() }
    override func testConsentUnknown_sendsTheirPreference_butNoUsage() throws { try super.testConsentUnknown_sendsTheirPreference_butNoUsage() }
    override func testCustomerWhoRefusedConsent_getsNoAnswer_andTheHistorySaysWhy() throws { try super.testCustomerWhoRefusedConsent_getsNoAnswer_andTheHistorySaysWhy() }
    override func testGlobalProrated_forAConsentedCustomerWhoUsedNothing_leavesThePreferenceOut_asAppleRefusesIt() throws {
        try super.testGlobalProrated_forAConsentedCustomerWhoUsedNothing_leavesThePreferenceOut_asAppleRefusesIt()
    }
    override func testProratedWithoutAPercentage_sendsTheGlobalPreference_andNeutralLeavesItOut() throws { try super.testProratedWithoutAPercentage_sendsTheGlobalPreference_andNeutralLeavesItOut() }
}
