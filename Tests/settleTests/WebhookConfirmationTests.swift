import Foundation
import SettleApp
import SettleTesting
import Synchronization
import XCTest
import SettleBase

/// A webhook confirms a grant by naming its key: a 2xx that does not (a maintenance page, a
/// proxy) delivers nothing. Through the built binary with a Google Play order, where a false
/// "delivered" is worst: settle would acknowledge, and Google keep the money for goods nobody got.
class WebhookConfirmationTests: GooglePlayTestCase {
    final class Receiver: Sendable {
        /// Answer as a maintenance page (200, HTML) instead of confirming the key.
        let maintenance = Mutex(true)
        /// Answer with the request's own body (an echo endpoint), which holds `idempotency_key`.
        let echo = Mutex(false)
        let keys = Mutex<[String]>([])
    }
    let receiver = Receiver()
    nonisolated(unsafe) var server: LoopbackHTTPServer!

    /// The ledger this run uses (the world's SQLite file; PostgreSQL in the subclass).
    func ledgerOverride() throws -> [(String, JSONValue)] { [] }
    func prepareLedger() throws {}

    override func setUpWithError() throws {
        try super.setUpWithError()
        let receiver = self.receiver
        server = try LoopbackHTTPServer { request in
            let key = request.header("Idempotency-Key") ?? ""
            receiver.keys.withLock { $0.append(key) }
            if receiver.echo.withLock({ $0 }) {
                return HTTPServerResponse(status: 200, headers: [HTTPHeader("Content-Type", "application/json")], body: request.body)
            }
            if receiver.maintenance.withLock({ $0 }) {
                return HTTPServerResponse(status: 200, headers: [HTTPHeader("Content-Type", "text/html")],
                                          body: Data("<html><body>Back soon: down for maintenance</body></html>".utf8))
            }
            return .json(200, JSONValue.object([("granted", .string(key))]).data)
        }
        try world.write("webhook-secret", "whsec-0123456789abcdef", mode: 0o600)
        try writePlayConfig(extra: [
            ("delivery", .object([("webhook", .object([("url", .string(server.baseURL + "/grant")),
                                                       ("secret_file", .string("webhook-secret"))])),
                                  ("timeout_seconds", .number(3))])),
        ] + ledgerOverride())
        try prepareLedger()
    }

    override func tearDownWithError() throws {
        server?.stop()
        server = nil
        try super.tearDownWithError()
    }

    func testAMaintenancePageAnswering200_isNoDelivery_GoogleIsNeverTold_andTheOrderEndsHookUnconfirmed() throws {
        let token = scriptProduct("m", product: unlock, orderId: "GPA.M-0001")
        try enqueuePlay("o-m", token: token, product: unlock)
        for attempt in 1...3 {   // the world's schedule.max_attempts
            try settle(["reconcile", "--order", "o-m"])
            XCTAssertEqual(try attempts("o-m"), attempt)
        }
        XCTAssertEqual(receiver.keys.withLock { $0 }, ["GPA.M-0001", "GPA.M-0001", "GPA.M-0001"])
        let order = try order("o-m")
        XCTAssertEqual(order["state"], .string("needs_attention"))
        XCTAssertEqual(order["reason"], .string("hook_unconfirmed"))
        XCTAssertTrue(order["last_error"]?.looseString?.contains("webhook answered HTTP 200 without confirming the grant") == true,
                      "\(order)")
        XCTAssertTrue(finishes.isEmpty, "Google is not told about a delivery nobody confirmed")
        XCTAssertEqual(fake.product(token)?.acknowledgementState, .yetToBeAcknowledged)

        // The receiver is back and confirms: a retry delivers under the same key, then acknowledges.
        receiver.maintenance.withLock { $0 = false }
        try settle(expecting: 0, ["retry", "o-m", "--note", "receiver was in maintenance"])
        try settle(expecting: 0, ["reconcile", "--order", "o-m"])
        XCTAssertEqual(try state("o-m"), "finished")
        XCTAssertEqual(fake.product(token)?.acknowledgementState, .acknowledged)
        XCTAssertEqual(finishes.count, 1)
    }

    /// An endpoint that returns what it was sent names the key in `idempotency_key`, as settle's
    /// request does: that is an echo, not a grant, and Google is never told.
    func testAnEchoOfTheRequest_confirmsNothing_andGoogleIsNeverAcknowledged() throws {
        receiver.echo.withLock { $0 = true }
        let token = scriptProduct("e", product: unlock, orderId: "GPA.E-0001")
        try enqueuePlay("o-e", token: token, product: unlock)
        for attempt in 1...3 {
            try settle(["reconcile", "--order", "o-e"])
            XCTAssertEqual(try attempts("o-e"), attempt)
        }
        let order = try order("o-e")
        XCTAssertEqual(order["state"], .string("needs_attention"))
        XCTAssertEqual(order["reason"], .string("hook_unconfirmed"))
        XCTAssertTrue(order["last_error"]?.looseString?.contains("no \"granted\": \"GPA.E-0001\" in a JSON body") == true, "\(order)")
        XCTAssertTrue(finishes.isEmpty, "Google is not told about an echo")
        XCTAssertEqual(fake.product(token)?.acknowledgementState, .yetToBeAcknowledged)
    }
}

/// The same through the binary on a PostgreSQL ledger.
final class WebhookConfirmationPostgresTests: WebhookConfirmationTests {
    nonisolated(unsafe) var schema = ""
    nonisolated(unsafe) var url = ""

    override func ledgerOverride() throws -> [(String, JSONValue)] {
        let fresh = try TestPostgres.freshSchema()
        (url, schema) = (fresh.url, fresh.schema)
        return [("ledger", .string(url))]
    }

    override func prepareLedger() throws { try settle(expecting: 0, ["migrate"]) }

    override func tearDownWithError() throws {
        TestPostgres.drop(schema: schema)
        try super.tearDownWithError()
    }

    // Linux test discovery lists only the methods a class declares.
    override func testAMaintenancePageAnswering200_isNoDelivery_GoogleIsNeverTold_andTheOrderEndsHookUnconfirmed() throws {
        try super.testAMaintenancePageAnswering200_isNoDelivery_GoogleIsNeverTold_andTheOrderEndsHookUnconfirmed()
    }

    override func testAnEchoOfTheRequest_confirmsNothing_andGoogleIsNeverAcknowledged() throws {
        try super.testAnEchoOfTheRequest_confirmsNothing_andGoogleIsNeverAcknowledged()
    }
}
