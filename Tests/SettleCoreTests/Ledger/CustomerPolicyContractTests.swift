import Foundation
import SettleTesting
import XCTest
@testable import SettleBase
@testable import SettleModel
@testable import SettleLedger

/// Customers' refund policy and orders' usage evidence (issue 37), on every back end: what a
/// backend, a hook or a person records, what SQL may write (the documented INSERT) and what the
/// CHECKs refuse, and what a store module is allowed to send (`refundEvidence`).
extension LedgerContractTests {
    /// The SQL block docs/backend.md documents for backends, exactly as written there.
    func documentedCustomerSQL() throws -> String {
        let path = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent("docs/backend.md").path
        let text = try String(contentsOfFile: path, encoding: .utf8)
        let marker = try XCTUnwrap(text.range(of: "<!-- customer-policy-sql -->"), "docs/backend.md lost its SQL marker")
        let rest = text[marker.upperBound...]
        let start = try XCTUnwrap(rest.range(of: "```sql\n")), end = try XCTUnwrap(rest.range(of: "\n```", range: start.upperBound..<rest.endIndex))
        return String(rest[start.upperBound..<end.lowerBound])
    }

    func testTheDocumentedSQLInsert_runsOnEachEngine_andIsWhatAStoreIsAllowedToSend() throws {
        let sql = try documentedCustomerSQL()
        try onEachBackEnd { b in
            _ = try b.store.enqueue(NewOrder(orderId: "o-1001", userId: "u-42", productId: world.coins, transactionId: "100",
                                             receipt: world.receipt("o-1001")))
            try b.execute(sql)
            try b.execute(sql) // a backend that writes again updates, never fails
            let policy = try XCTUnwrap(b.store.customerPolicy(userId: "u-42"), b.name)
            XCTAssertEqual(policy.consented, true, b.name)
            XCTAssertEqual(policy.refundPreference, .decline, b.name)
            XCTAssertEqual(policy.setBy, .backend, b.name)
            XCTAssertEqual(policy.problems, [], b.name)
            let evidence = try b.store.refundEvidence(orderId: "o-1001")
            XCTAssertEqual(evidence.consent, .given, b.name)
            XCTAssertEqual(evidence.preference, .decline, b.name)
            let usage = try XCTUnwrap(evidence.usage, b.name)
            XCTAssertEqual(usage.consumptionMilliunits, 45200, b.name)
            XCTAssertEqual(usage.playTimeSeconds, 5400, b.name)
            XCTAssertEqual(usage.events, [UsageEvent(at: 1_767_261_600, description: "spent 60 of 100 coins")], b.name)
            XCTAssertEqual(usage.ipAddress, "192.0.2.10", b.name)
            XCTAssertEqual(usage.location, CoarseLocation(regionCode: "KR"), b.name)
            XCTAssertEqual(usage.problems, [], b.name)
        }
    }

    func testSQLWithOutOfRangeValues_isRefusedByTheChecks_onEachEngine() throws {
        let refused = [
            "INSERT INTO order_usage(order_id, consumption_milliunits) VALUES ('o-1', 200000)",
            "INSERT INTO order_usage(order_id, consumption_milliunits) VALUES ('o-1', -1)",
            "INSERT INTO order_usage(order_id, play_time_seconds) VALUES ('o-1', -5)",
            "INSERT INTO order_usage(order_id, ip_address) VALUES ('o-1', '\(String(repeating: "1", count: 46))')",
            "INSERT INTO order_usage(order_id, region_code) VALUES ('o-1', 'KOREA')",
            "INSERT INTO customers(user_id, consented) VALUES ('u-1', 2)",
            "INSERT INTO customers(user_id, refund_preference) VALUES ('u-1', 'GRANT_FULL')",
            "INSERT INTO customers(user_id, set_by) VALUES ('u-1', 'store')",
            "INSERT INTO customers(user_id) VALUES ('')",
            "INSERT INTO customers(user_id, note) VALUES ('u-1', '\(String(repeating: "n", count: 1001))')",
        ]
        try onEachBackEnd { b in
            for sql in refused {
                XCTAssertThrowsError(try b.execute(sql), "\(b.name): \(sql)")
            }
            XCTAssertNil(try b.store.customerPolicy(userId: "u-1"), b.name)
            XCTAssertNil(try b.store.orderUsage(orderId: "o-1"), b.name)
        }
    }

    func testWhatSQLLetThroughButSettleCannotUse_isNamed_andTreatedAsUnknown() throws {
        try onEachBackEnd { b in
            try enqueue(b.store, "o-1")
            try b.execute("INSERT INTO customers(user_id, consented) VALUES ('u-1', 1)")
            try b.execute("""
                INSERT INTO order_usage(order_id, consumption_milliunits, usage_events, ip_address)
                VALUES ('o-1', 1000, 'not json', 'not-an-ip')
                """)
            let usage = try XCTUnwrap(b.store.refundEvidence(orderId: "o-1").usage, b.name)
            XCTAssertEqual(usage.consumptionMilliunits, 1000, b.name)
            XCTAssertEqual(usage.events, [], b.name)
            XCTAssertNil(usage.ipAddress, b.name)
            XCTAssertEqual(usage.problems.count, 2, "\(b.name): \(usage.problems)")
            XCTAssertTrue(try b.store.refundEvidence(orderId: "o-1").summary.contains("unusable"), b.name)
        }
    }

    func testConsent_decidesWhatOfTheCustomersIsAllowed_refusedNothing_unknownThePreferenceOnly() throws {
        try onEachBackEnd { b in
            try enqueue(b.store, "o-1")
            try b.store.setOrderUsage(OrderUsage(orderId: "o-1", consumptionMilliunits: 500, ipAddress: "2001:db8::1"), source: .hook)
            XCTAssertEqual(try b.store.refundEvidence(orderId: "o-1"), .unknown("u-1"), "no record: the global settings (\(b.name))")

            try b.store.setCustomer("u-1", CustomerChange(refundPreference: .grantFull), source: .hook)
            var evidence = try b.store.refundEvidence(orderId: "o-1")
            XCTAssertEqual(evidence.consent, .unknown, b.name)
            XCTAssertEqual(evidence.preference, .grantFull, b.name)
            XCTAssertNil(evidence.usage, "usage without consent is never allowed out (\(b.name))")

            try b.store.setCustomer("u-1", CustomerChange(consented: false), source: .hook)
            evidence = try b.store.refundEvidence(orderId: "o-1")
            XCTAssertEqual(evidence.consent, .refused, b.name)
            XCTAssertNil(evidence.preference, b.name)
            XCTAssertNil(evidence.usage, b.name)

            world.time.advance(by: 60)
            try b.store.setCustomer("u-1", CustomerChange(consented: true), source: .cli, by: Operator(name: "root", channel: .cli))
            evidence = try b.store.refundEvidence(orderId: "o-1")
            XCTAssertEqual(evidence.consent, .given, b.name)
            XCTAssertEqual(evidence.usage?.consumptionMilliunits, 500, b.name)
            XCTAssertEqual(evidence.usage?.ipAddress, "2001:db8::1", b.name)
            let policy = try XCTUnwrap(b.store.customerPolicy(userId: "u-1"), b.name)
            XCTAssertEqual(policy.consentAt, world.time.unixSeconds, b.name)
            XCTAssertEqual(policy.consentBy, "cli root", b.name)
            XCTAssertEqual(policy.refundPreference, .grantFull, "a change keeps what it does not name (\(b.name))")
            XCTAssertEqual(try b.store.auditEntries().map { "\($0.actor) \($0.action) \($0.subject) \($0.detail)" },
                           ["root customer_set u-1 consented yes"], "the hook's changes are not a person's (\(b.name))")
        }
    }

    func testUsage_mergesWhatIsKnown_andIsRefusedForAnOrderTheLedgerDoesNotHold() throws {
        try onEachBackEnd { b in
            try enqueue(b.store, "o-1")
            try b.store.setOrderUsage(OrderUsage(orderId: "o-1", consumptionMilliunits: 100), source: .hook)
            try b.store.setOrderUsage(OrderUsage(orderId: "o-1", playTimeSeconds: 60,
                                                 location: CoarseLocation(regionCode: "US", administrativeArea: "CA")), source: .cli)
            let usage = try XCTUnwrap(b.store.orderUsage(orderId: "o-1"), b.name)
            XCTAssertEqual(usage.consumptionMilliunits, 100, b.name)
            XCTAssertEqual(usage.playTimeSeconds, 60, b.name)
            XCTAssertEqual(usage.location, CoarseLocation(regionCode: "US", administrativeArea: "CA"), b.name)
            XCTAssertEqual(usage.setBy, .cli, b.name)
            XCTAssertThrowsError(try b.store.setOrderUsage(OrderUsage(orderId: "o-404", consumptionMilliunits: 1), source: .cli),
                                 b.name) { error in
                XCTAssertEqual("\(error)", "no order o-404 in the ledger", b.name)
            }
        }
    }

    func testInput_outOfRangeOrGarbage_isRefusedNamingTheField() {
        func problem(_ body: () throws -> Void) -> String? {
            do { try body(); return nil } catch { return (error as? CustomerInput.Problem)?.field ?? "\(error)" }
        }
        XCTAssertEqual(problem { _ = try CustomerInput.milliunits(200_000) }, "consumption_percentage")
        XCTAssertEqual(problem { _ = try CustomerInput.playTime(-1) }, "play_time_seconds")
        XCTAssertEqual(problem { _ = try CustomerInput.ipAddress("192.0.2.1:80") }, "ip_address")
        XCTAssertEqual(problem { _ = try CustomerInput.userId(String(repeating: "u", count: 201)) }, "user")
        XCTAssertEqual(problem { _ = try CustomerInput.preference("APPROVE") }, "refund_preference")
        XCTAssertEqual(problem { _ = try CustomerInput.location(regionCode: "kr", administrativeArea: nil, locality: nil) },
                       "location.region_code")
        let huge = JSONValue.array(Array(repeating: .object([("time", .string("2026-01-01T00:00:00Z")),
                                                            ("description", .string("x"))]), count: 101))
        XCTAssertEqual(problem { _ = try CustomerInput.events(huge) }, "events")
        let long = JSONValue.array([.object([("time", .string("2026-01-01T00:00:00Z")),
                                             ("description", .string(String(repeating: "x", count: 1001)))])])
        XCTAssertEqual(problem { _ = try CustomerInput.events(long) }, "events[0].description")
        XCTAssertEqual(problem { _ = try CustomerInput.usage(.object([("consumption_percentage", .number("1e30"))]), orderId: "o") },
                       "usage.consumption_percentage")
        XCTAssertEqual(problem { _ = try CustomerInput.usage(.object([("lifetime_dollars", .number("1"))]), orderId: "o") },
                       "usage.lifetime_dollars")
    }
}
