import SettleTesting
import Synchronization
import XCTest
@testable import SettleApp
@testable import SettleBase
@testable import SettleModel
@testable import SettleConfig
@testable import SettleLedger
@testable import SettleDelivery
@testable import SettleAppStoreSimulator

/// Webhook delivery through whole passes, against a receiver on loopback.
final class WebhookHookTests: XCTestCase {
    final class Receiver: @unchecked Sendable {
        /// How a 2xx answer says the receiver acted on the request.
        enum Confirmation: Sendable {
            /// `{"granted": "<the request's key>"}` (`"revoked"` for a revoke), as the README's receivers answer.
            case body
            /// `Settle-Granted: <the request's key>` (`Settle-Revoked` for a revoke) over a body that says something else.
            case header
            /// The request's own body and `Idempotency-Key` header, as an echo endpoint answers.
            case echo
            /// A JSON body naming a key, whatever the request's was.
            case key(String)
            /// What a maintenance page or a proxy answers: HTML, no key.
            case none
        }

        let statuses = Mutex<[Int]>([])
        let confirmation = Mutex(Confirmation.body)
        let requests = Mutex<[HTTPServerRequest]>([])
        var server: LoopbackHTTPServer!

        func start() throws {
            server = try LoopbackHTTPServer { [unowned self] request in
                requests.withLock { $0.append(request) }
                let status = statuses.withLock { $0.isEmpty ? 200 : $0.removeFirst() }
                let key = request.header("Idempotency-Key") ?? ""
                guard (200...299).contains(status) else { return HTTPServerResponse(status: status, body: Data("receiver says \(status)".utf8)) }
                let revoke = (try? JSONValue.parse(request.body))?["event"]?.looseString == "revoke"
                switch confirmation.withLock({ $0 }) {
                case .body: return .json(status, JSONValue.object([(revoke ? "revoked" : "granted", .string(key))]).data)
                case .header:
                    return HTTPServerResponse(status: status, headers: [HTTPHeader(revoke ? "Settle-Revoked" : "Settle-Granted", key)],
                                              body: Data("granted".utf8))
                case .echo:
                    return HTTPServerResponse(status: status, headers: request.headers.filter { $0.name != "Content-Length" },
                                              body: request.body)
                case let .key(other): return .json(status, JSONValue.object([("granted", .string(other))]).data)
                case .none:
                    return HTTPServerResponse(status: status, headers: [HTTPHeader("Content-Type", "text/html")],
                                              body: Data("<html><body>Down for maintenance</body></html>".utf8))
                }
            }
        }
    }

    var world: TestWorld!
    var receiver: Receiver!
    let webhookSecret = "WEBHOOK-SECRET-0b1c2d3e4f"

    override func setUpWithError() throws {
        world = try TestWorld()
        receiver = Receiver()
        try receiver.start()
        try world.write("webhook-secret", webhookSecret, mode: 0o600)
        try world.writeConfig(overrides: [("delivery", .object([
            ("webhook", .object([("url", .string(receiver.server.baseURL + "/grant")), ("secret_file", .string("webhook-secret"))])),
            ("timeout_seconds", .number(3)),
        ]))])
    }

    override func tearDown() {
        receiver?.server.stop()
        receiver = nil
        world = nil
    }

    func runOrder(statuses: [Int]) throws -> Order {
        receiver.statuses.withLock { $0 = statuses }
        let ledger = try world.ledger()
        let receipt = world.scriptReceipt("r", [SimulatedTransaction(productId: world.coins, transactionId: "700")])
        _ = try ledger.enqueue(NewOrder(orderId: "o-1", userId: "u", productId: world.coins, transactionId: "700", receipt: receipt))
        _ = try world.reconciler(ledger: ledger).runPass()
        return try XCTUnwrap(try ledger.orderRecord("o-1")?.order)
    }

    func testDelivered_withIdempotencyKeyAndAValidSignature() throws {
        let order = try runOrder(statuses: [200])
        XCTAssertEqual(order.state, .finished)
        let request = try XCTUnwrap(receiver.requests.withLock { $0.first })
        XCTAssertEqual(request.method, "POST")
        XCTAssertEqual(request.path, "/grant")
        XCTAssertEqual(request.header("Idempotency-Key"), "700")
        XCTAssertEqual(request.header("Content-Type"), "application/json")
        let signature = try XCTUnwrap(request.header("Settle-Signature"))
        let timestamp = try XCTUnwrap(Int64(signature.split(separator: ",")[0].dropFirst(2)))
        XCTAssertEqual(signature, WebhookHook.signature(body: request.body, timestamp: timestamp, secret: Secret(webhookSecret)))
        // Independently computed: HMAC-SHA256 of "<t>.<body>" with the secret.
        let expected = HMACSHA256.hex(key: Data(webhookSecret.utf8), message: Data("\(timestamp).".utf8) + request.body)
        XCTAssertTrue(signature.hasSuffix(",v1=\(expected)"))
        XCTAssertEqual(try JSONValue.parse(request.body)["idempotency_key"], .string("700"))
        XCTAssertEqual(try JSONValue.parse(request.body)["event"], .string("grant"), "every delivery says what it is")
        XCTAssertEqual(try JSONValue.parse(request.body)["refunds_90d"], .number(0),
                       "the buyer's refunds, counted by the pass")
        XCTAssertFalse(String(decoding: request.body, as: UTF8.self).contains(webhookSecret))
    }

    func testA2xxThatConfirmsWithTheSettleGrantedHeader_isDelivered() throws {
        receiver.confirmation.withLock { $0 = .header }
        let order = try runOrder(statuses: [200])
        XCTAssertEqual(order.state, .finished)
    }

    func testA2xxThatDoesNotConfirm_isNoDelivery_retriedWithAnAttempt_andEndsHookUnconfirmed() throws {
        // A maintenance page, a 204 with nothing, and a receiver echoing another request's key.
        // An endpoint that returns what it was sent: the request's key is in it, as settle sent it.
        for (status, confirmation) in [(200, Receiver.Confirmation.none), (204, .none), (200, .key("699")), (200, .echo)] {
            tearDown()
            try setUpWithError()
            receiver.confirmation.withLock { $0 = confirmation }
            let order = try runOrder(statuses: [status])
            XCTAssertEqual(order.state, .pending, "\(status) \(confirmation): not delivered")
            XCTAssertEqual(order.attempts, 1, "counts an attempt")
            XCTAssertEqual(order.lastError, "webhook answered HTTP \(status) without confirming the grant "
                           + "(no \"granted\": \"700\" in a JSON body, no Settle-Granted: 700 header)")
            let ledger = try world.ledger()
            XCTAssertEqual(try ledger.orderRecord("o-1")?.history.last?.outcome, "unconfirmed")
            let reconciler = try world.reconciler(ledger: ledger)
            let maxAttempts = 3   // TestWorld's schedule.max_attempts
            for _ in 1..<maxAttempts {
                world.time.advance(by: 86_400)
                _ = try reconciler.runPass()
            }
            let exhausted = try XCTUnwrap(try ledger.orderRecord("o-1")?.order)
            XCTAssertEqual(exhausted.state, .needsAttention)
            XCTAssertEqual(exhausted.reason, "hook_unconfirmed")
            XCTAssertEqual(receiver.requests.withLock { $0.count }, maxAttempts, "one POST an attempt")
            XCTAssertTrue(Verdict.why(exhausted)?.hasPrefix("your delivery hook answered success without confirming the grant") == true,
                          Verdict.why(exhausted) ?? "")
        }
    }

    func testConflict409_meansAlreadyGranted_andAnOrderNamingItsTransactionFinishesAsAlreadyDelivered() throws {
        let order = try runOrder(statuses: [409])
        XCTAssertEqual(order.state, .finished)
        XCTAssertEqual(order.reason, "already_delivered")
    }

    /// Writes a webhook configuration with notifications' rules (user ids are tokens), with or without a revoke URL.
    func writeRefundConfig(revokeURL: String?) throws {
        var webhook: [(String, JSONValue)] = [("url", .string(receiver.server.baseURL + "/grant")), ("secret_file", .string("webhook-secret"))]
        if let revokeURL { webhook.append(("revoke_url", .string(revokeURL))) }
        try world.writeConfig(serverAPI: true, overrides: [
            ("delivery", .object([("webhook", .object(webhook)), ("timeout_seconds", .number(3))])),
            ("user_binding", .object([("app_account_token", .string("user_id"))])),
        ])
    }

    /// A purchase Apple reports, delivered by a pass, then refunded: returns the ledger.
    func deliverThenRefund(_ id: String) throws -> SQLiteLedger {
        let ledger = try world.ledger()
        let reconciler = try world.reconciler(ledger: ledger)
        let inbox = try XCTUnwrap(reconciler.inbox)
        let buyer = "6f1e4c2a-5b3d-4e8f-9a0b-1c2d3e4f5a6b"
        let now = world.time.unixSeconds * 1000
        var purchase = SimulatedSignedTransaction(transactionId: id, productId: world.coins, bundleId: world.bundleId,
                                                  purchaseDateMs: now - 60_000, appAccountToken: buyer)
        world.simulator.script(transaction: purchase.transactionId, TransactionScript(transaction: purchase))
        let bought = SimulatedNotification(type: "ONE_TIME_CHARGE", transaction: purchase, bundleId: world.bundleId, signedDateMs: now)
        guard case .stored = inbox.receive(signedPayload: try bought.signed(), source: "endpoint") else { XCTFail(); return ledger }
        _ = try reconciler.runPass()
        purchase.revocationDateMs = now
        let refund = SimulatedNotification(type: "REFUND", transaction: purchase, bundleId: world.bundleId, signedDateMs: now)
        guard case .stored = inbox.receive(signedPayload: try refund.signed(), source: "endpoint") else { XCTFail(); return ledger }
        _ = try reconciler.runPass()
        return ledger
    }

    func testRefundAfterDelivery_isPostedToTheRevokeURLOnly_withEventRevokeAndItsOwnKey() throws {
        try writeRefundConfig(revokeURL: receiver.server.baseURL + "/revoke")
        let ledger = try deliverThenRefund("2000000000000711")
        let requests = receiver.requests.withLock { $0 }
        XCTAssertEqual(requests.map(\.path), ["/grant", "/revoke"], "one grant to the grant URL, one revoke to the revoke URL")
        let bodies = requests.compactMap { try? JSONValue.parse($0.body) }
        XCTAssertEqual(bodies.map { $0["event"]?.looseString }, ["grant", "revoke"])
        XCTAssertEqual(bodies.last?["idempotency_key"]?.looseString, "revoke:2000000000000711")
        XCTAssertEqual(requests.last?.header("Idempotency-Key"), "revoke:2000000000000711")
        let signature = try XCTUnwrap(requests.last?.header("Settle-Signature"))
        let timestamp = try XCTUnwrap(Int64(signature.split(separator: ",")[0].dropFirst(2)))
        XCTAssertEqual(signature, WebhookHook.signature(body: requests[1].body, timestamp: timestamp, secret: Secret(webhookSecret)))
        _ = try world.reconciler(ledger: ledger).runPass()
        XCTAssertEqual(receiver.requests.withLock { $0.count }, 2, "a revoke that succeeded is not sent again")
    }

    func testRevokeAnswered2xxWithoutConfirmation_isRetried_andDoneOnceTheReceiverConfirms() throws {
        try writeRefundConfig(revokeURL: receiver.server.baseURL + "/revoke")
        // The grant is confirmed; the revoke's first answer is a maintenance page.
        receiver.statuses.withLock { $0 = [200] }
        let ledger = try world.ledger()
        let reconciler = try world.reconciler(ledger: ledger)
        let inbox = try XCTUnwrap(reconciler.inbox)
        let buyer = "6f1e4c2a-5b3d-4e8f-9a0b-1c2d3e4f5a6b"
        let now = world.time.unixSeconds * 1000
        var purchase = SimulatedSignedTransaction(transactionId: "2000000000000713", productId: world.coins, bundleId: world.bundleId,
                                                  purchaseDateMs: now - 60_000, appAccountToken: buyer)
        world.simulator.script(transaction: purchase.transactionId, TransactionScript(transaction: purchase))
        let bought = SimulatedNotification(type: "ONE_TIME_CHARGE", transaction: purchase, bundleId: world.bundleId, signedDateMs: now)
        guard case .stored = inbox.receive(signedPayload: try bought.signed(), source: "endpoint") else { return XCTFail() }
        _ = try reconciler.runPass()
        // An echo of the revoke's own document (which names its key in idempotency_key) is no revoke.
        receiver.confirmation.withLock { $0 = .echo }
        purchase.revocationDateMs = now
        let refund = SimulatedNotification(type: "REFUND", transaction: purchase, bundleId: world.bundleId, signedDateMs: now)
        guard case .stored = inbox.receive(signedPayload: try refund.signed(), source: "endpoint") else { return XCTFail() }
        _ = try reconciler.runPass()
        let (state, job) = try XCTUnwrap(try ledger.revocation(orderId: "apple-2000000000000713"))
        XCTAssertEqual(state, "pending", "an echo of the request is no revoke")
        XCTAssertEqual(job.attempts, 1)
        XCTAssertTrue(job.lastError?.contains("without confirming the revoke") == true, job.lastError ?? "")
        XCTAssertTrue(job.lastError?.contains("revoke:2000000000000713") == true, job.lastError ?? "")
        receiver.confirmation.withLock { $0 = .header }
        world.time.advance(by: 86_400)
        _ = try reconciler.runPass()
        XCTAssertEqual(try ledger.revocation(orderId: "apple-2000000000000713")?.state, "revoked")
        XCTAssertEqual(receiver.requests.withLock { $0.map(\.path) }, ["/grant", "/revoke", "/revoke"])
    }

    func testRefundAfterDelivery_withoutARevokeURL_postsNothing_andTheRevokeWaitsUntilOneIsConfigured() throws {
        try writeRefundConfig(revokeURL: nil)
        let ledger = try deliverThenRefund("2000000000000712")
        XCTAssertEqual(receiver.requests.withLock { $0.map(\.path) }, ["/grant"], "a revoke is never posted to the grant URL")
        let (state, job) = try XCTUnwrap(try ledger.revocation(orderId: "apple-2000000000000712"))
        XCTAssertEqual(state, "pending")
        XCTAssertEqual(job.attempts, 0, "waiting for a route uses no attempt")
        XCTAssertTrue(job.lastError?.contains("no revoke route configured") == true, job.lastError ?? "")
        let history = try XCTUnwrap(try ledger.orderRecord("apple-2000000000000712")?.history)
        XCTAssertEqual(history.filter { $0.kind == .revoke }.map(\.outcome), ["waiting"])
        _ = try world.reconciler(ledger: ledger).runPass()
        XCTAssertEqual(try ledger.orderRecord("apple-2000000000000712")?.history.filter { $0.kind == .revoke }.count, 1,
                       "said once, not every pass")
        try writeRefundConfig(revokeURL: receiver.server.baseURL + "/revoke")
        _ = try world.reconciler(ledger: ledger).runPass()
        XCTAssertEqual(receiver.requests.withLock { $0.map(\.path) }, ["/grant", "/revoke"])
        XCTAssertEqual(try ledger.revocation(orderId: "apple-2000000000000712")?.state, "revoked")
    }

    func testTemporaryStatuses_areRetriedWithAnAttempt() throws {
        for status in [408, 429, 500, 503] {
            tearDown()
            try setUpWithError()   // a fresh ledger and receiver for each status
            let order = try runOrder(statuses: [status])
            XCTAssertEqual(order.state, .pending, "\(status)")
            XCTAssertEqual(order.attempts, 1)
            XCTAssertEqual(order.lastError, "webhook answered HTTP \(status)")
        }
    }

    func testOtherClientErrors_needAttentionAtOnce() throws {
        let order = try runOrder(statuses: [422])
        XCTAssertEqual(order.state, .needsAttention)
        XCTAssertEqual(order.reason, "hook_refused")
    }

    func testUnreachableReceiver_isRetried() throws {
        receiver.server.stop()
        let order = try runOrder(statuses: [])
        XCTAssertEqual(order.state, .pending)
        XCTAssertEqual(order.attempts, 1)
        XCTAssertTrue(order.lastError?.hasPrefix("webhook: ") == true, order.lastError ?? "")
    }
}
