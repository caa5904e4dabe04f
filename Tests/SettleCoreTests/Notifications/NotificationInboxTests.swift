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

/// What Apple's notifications do to orders, revokes and refund-request answers, and how the
/// history catch-up moves, driven through the inbox in process on the test clock, with the
/// simulator as Apple. Every test runs on the SQLite ledger here and on PostgreSQL in
/// `NotificationInboxPostgresTests` (the same tests, the ledger made by `makeLedger`).
class NotificationInboxTests: XCTestCase {
    var world: TestWorld!
    /// The PostgreSQL schema of this test (PostgreSQL runs only).
    var schema: (url: String, schema: String)?
    /// User ids are the buyers' appAccountTokens (`user_binding.app_account_token: "user_id"`).
    let buyer = "6f1e4c2a-5b3d-4e8f-9a0b-1c2d3e4f5a6b"
    let stranger = "9a8b7c6d-5e4f-4a3b-8c2d-1e0f9a8b7c6d"
    var nowMs: Int64 { world.time.unixSeconds * 1000 }

    override func setUpWithError() throws { world = try TestWorld() }
    override func tearDown() {
        schema.map { TestPostgres.drop(schema: $0.schema) }
        world = nil
    }

    /// The ledger under test, on the test clock; every call opens the same one.
    func makeLedger() throws -> any SettleLedger { try world.ledger() }

    /// Runs SQL on the ledger as a backend or an operator would, outside settle.
    func execute(_ sql: String) throws {
        try SQLiteDatabase(path: world.ledgerPath, mode: .readWrite).execute(sql)
    }

    /// A trigger that makes inserting an order about `transaction` fail, as a row a backend broke would.
    func poisonOrders(transaction: String) throws {
        try execute("""
            CREATE TRIGGER poisoned BEFORE INSERT ON orders WHEN NEW.transaction_id = '\(transaction)'
            BEGIN SELECT RAISE(ABORT, 'this row cannot be written'); END
            """)
    }

    /// settle.json with server_api and notifications (the endpoint is not started here).
    func configure(notifications: [(String, JSONValue)] = [], delivery: JSONValue? = nil, serverAPI: JSONValue? = nil,
                   extra: [(String, JSONValue)] = []) throws {
        var overrides: [(String, JSONValue)] = [
            ("notifications", .object([("listen", .string("127.0.0.1:0"))] + notifications)),
            ("user_binding", .object([("app_account_token", .string("user_id"))])),
        ]
        if let delivery { overrides.append(("delivery", delivery)) }
        if let serverAPI { overrides.append(("server_api", serverAPI)) }
        try world.writeConfig(serverAPI: true, overrides: overrides + extra)
    }

    /// A command delivery with a revoke hook that appends "<key> <order>" to revokes.log.
    func revokingDelivery(grant: String? = nil, timeout: Double = 10) throws -> JSONValue {
        let revoke = try world.write("revoke.sh", """
            #!/bin/sh
            cat > /dev/null
            echo "$SETTLE_IDEMPOTENCY_KEY $SETTLE_ORDER_ID" >> "\(world.folder)/revokes.log"
            """, mode: 0o755)
        return .object([("command", .array([.string(grant ?? world.folder + "/grant.sh")])), ("timeout_seconds", .number(timeout)),
                        ("revoke_command", .array([.string(revoke)]))])
    }

    var revokes: [String] {
        ((try? String(contentsOfFile: world.folder + "/revokes.log", encoding: .utf8)) ?? "").split(separator: "\n").map(String.init)
    }

    func settle(_ ledger: any SettleLedger) throws -> (Reconciler, NotificationInbox) {
        let reconciler = try world.reconciler(ledger: ledger)
        return (reconciler, try XCTUnwrap(reconciler.inbox))
    }

    /// A purchase Apple knows (Get Transaction Info finds it), made a few seconds ago.
    func purchase(_ id: String, token: String?, atMs: Int64? = nil, answers: [SimulatedServerAnswer] = []) -> SimulatedSignedTransaction {
        world.scriptTransaction(id, purchaseDateMs: atMs ?? nowMs - 5000, appAccountToken: token, answers: answers)
    }

    func notification(_ type: String, _ transaction: SimulatedSignedTransaction, signedAtMs: Int64? = nil,
                      reason: String? = nil) -> SimulatedNotification {
        SimulatedNotification(type: type, transaction: transaction, bundleId: world.bundleId, consumptionRequestReason: reason,
                              signedDateMs: signedAtMs ?? nowMs - 1000)
    }

    /// Apple tells the endpoint; returns what storing it did.
    @discardableResult
    func tell(_ inbox: NotificationInbox, _ type: String, _ transaction: SimulatedSignedTransaction, reason: String? = nil,
              file: StaticString = #filePath, line: UInt = #line) throws -> IngestResult {
        let signed = try notification(type, transaction, reason: reason).signed()
        guard case let .stored(result) = inbox.receive(signedPayload: signed, source: "endpoint") else {
            XCTFail("not stored", file: file, line: line)
            throw CocoaError(.fileWriteUnknown)
        }
        return result
    }

    func order(_ ledger: any SettleLedger, _ id: String) throws -> Order? { try ledger.orderRecord(id)?.order }

    func history(_ ledger: any SettleLedger, _ id: String) throws -> [HistoryEntry] { try ledger.orderRecord(id)?.history ?? [] }

    /// Rows of the ledger, read in a transaction of their own.
    func rows(_ sql: String) throws -> [any LedgerRow] {
        try makeLedger().reading { try $0.query(sql) }
    }

    func rowCount(_ table: String) throws -> Int64 {
        try rows("SELECT count(*) AS n FROM \(table)").first?.int("n") ?? -1
    }

    /// The catch-up has run before (settle started `ago` seconds back): later windows overlap from there.
    func startedHistory(_ ledger: any SettleLedger, secondsAgo ago: Int64) throws {
        let start = nowMs - ago * 1000
        for environment: AppleEnvironment in [.production, .sandbox] {
            try ledger.saveNotificationCursor(NotificationCursor(syncedUntilMs: start, startedAtMs: start), environment: environment)
        }
    }

    /// Runs passes, each after the order's backoff, until the order leaves `pending`.
    func passUntilSettled(_ reconciler: Reconciler, _ ledger: any SettleLedger, _ id: String) throws {
        for _ in 0..<5 where try order(ledger, id)?.state == .pending {
            _ = try reconciler.runPass()
            world.time.advance(by: 3600)
        }
    }

    // MARK: - Which order a purchase notification belongs to (item 6)

    func testPurchaseNotification_whileAStrangersOrderNamesItsTransaction_createsTheBuyersOwnOrder_andOnlyTheBuyerIsGranted() throws {
        try configure()
        let ledger = try makeLedger()
        let (reconciler, inbox) = try settle(ledger)
        _ = try ledger.enqueue(NewOrder(orderId: "o-squat", userId: stranger, productId: world.coins, transactionId: "900"))
        let result = try tell(inbox, "ONE_TIME_CHARGE", purchase("900", token: buyer))
        XCTAssertEqual(result.outcome, "order_created", "a stranger's order naming the id does not swallow the buyer's purchase")
        XCTAssertEqual(result.orderId, "apple-900")
        _ = try reconciler.runPass()
        XCTAssertEqual(world.deliveries, ["900 apple-900"])
        XCTAssertEqual(try order(ledger, "apple-900")?.userId, buyer)
        XCTAssertEqual(try order(ledger, "o-squat")?.state, .rejected)
    }

    func testPurchaseNotification_forTheBuyersOrderRejectedNotFound_requeuesItWithApplesSignedTransaction_andDeliversItOnce() throws {
        try configure(extra: [("accept_sandbox", .bool(false))])
        let ledger = try makeLedger()
        let (reconciler, inbox) = try settle(ledger)
        // Apple did not find the purchase yet when the order was first verified (a delay on its side).
        purchase("901", token: buyer, answers: Array(repeating: .notFound, count: 20))
        _ = try ledger.enqueue(NewOrder(orderId: "o-late", userId: buyer, productId: world.coins, transactionId: "901"))
        try passUntilSettled(reconciler, ledger, "o-late")
        let bought = purchase("901", token: buyer)  // now Apple has it
        XCTAssertEqual(try order(ledger, "o-late")?.reason, "transaction_not_found")
        let charge = notification("ONE_TIME_CHARGE", bought)
        guard case let .stored(result) = inbox.receive(signedPayload: try charge.signed(), source: "endpoint") else { return XCTFail() }
        XCTAssertEqual(result.outcome, "requeued")
        XCTAssertEqual(result.orderId, "o-late")
        let requeued = try XCTUnwrap(try order(ledger, "o-late"))
        XCTAssertEqual(requeued.state, .pending)
        XCTAssertNotNil(requeued.signedTransaction, "Apple's signed transaction is the order's new proof")
        _ = try reconciler.runPass()
        XCTAssertEqual(try order(ledger, "o-late")?.state, .finished)
        XCTAssertNil(try order(ledger, "apple-901"), "no second order")
        XCTAssertEqual(world.deliveries, ["901 o-late"])
    }

    func testPurchaseNotification_forAnotherUsersRejectedOrder_isNotRequeued_theBuyerGetsItsOwnOrder() throws {
        try configure(extra: [("accept_sandbox", .bool(false))])
        let ledger = try makeLedger()
        let (reconciler, inbox) = try settle(ledger)
        purchase("902", token: buyer, answers: Array(repeating: .notFound, count: 20))
        _ = try ledger.enqueue(NewOrder(orderId: "o-guess", userId: stranger, productId: world.coins, transactionId: "902"))
        try passUntilSettled(reconciler, ledger, "o-guess")
        let bought = purchase("902", token: buyer)  // now Apple has it
        XCTAssertEqual(try order(ledger, "o-guess")?.reason, "transaction_not_found")
        XCTAssertEqual(try tell(inbox, "ONE_TIME_CHARGE", bought).outcome, "order_created")
        XCTAssertEqual(try order(ledger, "o-guess")?.state, .rejected, "a stranger's guess is not given Apple's proof")
        _ = try reconciler.runPass()
        XCTAssertEqual(world.deliveries, ["902 apple-902"])
    }

    func testPurchaseNotification_forABackendRowWhoseOnlyProofIsItsSignedTransaction_isAttachedToIt_andGrantedOnce() throws {
        try configure()
        let ledger = try makeLedger()
        let (reconciler, inbox) = try settle(ledger)
        let bought = purchase("903", token: buyer)
        // A row as a backend writes it: the signed transaction, no transaction_id.
        _ = try ledger.enqueue(NewOrder(orderId: "o-jws", userId: buyer, productId: world.coins, signedTransaction: try bought.signed(at: nowMs)))
        let result = try tell(inbox, "ONE_TIME_CHARGE", bought)
        XCTAssertEqual(result.outcome, "attached")
        XCTAssertEqual(result.orderId, "o-jws")
        _ = try reconciler.runPass()
        XCTAssertNil(try order(ledger, "apple-903"), "no second order")
        XCTAssertEqual(world.deliveries, ["903 o-jws"])
    }

    // MARK: - Refund requests are answered only from evidence (item 3)

    func testConsumptionRequest_forAPurchaseSettleCannotShowDelivered_sendsNoAnswer_andRecordsWhy() throws {
        try configure(extra: [("consumption", .object([("respond", .bool(true)), ("customer_consented", .bool(true))]))])
        let ledger = try makeLedger()
        let (reconciler, inbox) = try settle(ledger)
        // A purchase no backend enqueued and nothing maps to a user: settle never delivered it,
        // but the app's own flow may have.
        let unclaimed = purchase("910", token: nil)
        XCTAssertEqual(try tell(inbox, "ONE_TIME_CHARGE", unclaimed).outcome, "unclaimed")
        XCTAssertEqual(try tell(inbox, "CONSUMPTION_REQUEST", unclaimed, reason: "UNINTENDED_PURCHASE").outcome, "answer_queued")
        // And one settle holds nothing about at all.
        XCTAssertEqual(try tell(inbox, "CONSUMPTION_REQUEST", purchase("911", token: buyer)).outcome, "answer_queued")
        _ = try reconciler.runPass()
        XCTAssertEqual(world.simulator.consumptionRequests.count, 0, "nothing is sent to Apple from absence of evidence")
        let answers = try rows("SELECT transaction_id, state, last_error FROM consumption_answers ORDER BY transaction_id")
        XCTAssertEqual(answers.map { $0.string("state") }, ["failed", "failed"])
        XCTAssertTrue(answers.allSatisfy { $0.string("last_error")?.hasPrefix("no answer sent: ") == true }, "\(answers.map { $0.string("last_error") })")
        let entry = try XCTUnwrap(try history(ledger, "apple-910").last { $0.kind == .consumption })
        XCTAssertEqual(entry.outcome, "not_answered")
        XCTAssertTrue(entry.detail?.contains("no answer sent") == true, entry.detail ?? "")
    }

    func testConsumptionRequest_forAGrantRecordedOutsideSettle_isAnsweredDelivered() throws {
        try configure(extra: [("consumption", .object([("respond", .bool(true)), ("customer_consented", .bool(true))]))])
        let ledger = try makeLedger()
        let (reconciler, inbox) = try settle(ledger)
        _ = try ledger.recordOutsideGrant(transactionId: "912", grantKey: "912", note: "granted by the app's own flow")
        XCTAssertEqual(try tell(inbox, "CONSUMPTION_REQUEST", purchase("912", token: buyer)).outcome, "answer_queued")
        _ = try reconciler.runPass()
        XCTAssertEqual(world.simulator.consumptionRequests.map(\.transactionId), ["912"])
        XCTAssertEqual(world.simulator.consumptionRequests.first?.body?["deliveryStatus"], .string("DELIVERED"))
        XCTAssertNil(world.simulator.consumptionRequests.first?.body?["consumptionPercentage"])
    }

    func testConsumptionAnswer_isSentBeforeThePassClaimsItsDueOrders() throws {
        // A backlog drained at Apple's rate can outlast the answer's 12-hour deadline: the answer
        // goes first, not after the last due order.
        try configure(extra: [("consumption", .object([("respond", .bool(true)), ("customer_consented", .bool(true))]))])
        let ledger = try makeLedger()
        let (reconciler, inbox) = try settle(ledger)
        _ = try ledger.recordOutsideGrant(transactionId: "917", grantKey: "917", note: "granted by the app's own flow")
        XCTAssertEqual(try tell(inbox, "CONSUMPTION_REQUEST", purchase("917", token: buyer)).outcome, "answer_queued")
        purchase("918", token: buyer)
        _ = try ledger.enqueue(NewOrder(orderId: "o-918", userId: buyer, productId: world.coins, transactionId: "918"))
        let report = try reconciler.runPass()
        XCTAssertEqual(report.refundRequestsAnswered, 1)
        XCTAssertEqual(try order(ledger, "o-918")?.state, .finished)
        let arrivals = world.simulator.arrivals
        let answer = try XCTUnwrap(arrivals.firstIndex { $0.hasPrefix("PUT ") && $0.hasSuffix("/transactions/consumption/917") }, "\(arrivals)")
        let lookup = try XCTUnwrap(arrivals.firstIndex { $0.hasPrefix("GET ") && $0.hasSuffix("/transactions/918") }, "\(arrivals)")
        XCTAssertLessThan(answer, lookup, "the answer reaches Apple before the due order is looked up: \(arrivals)")
    }

    func testConsumptionAnswer_refusedWith4000185ForAFamilyMembersTransaction_isRecordedFinal_andNeverSentAgain() throws {
        try configure(extra: [("consumption", .object([("respond", .bool(true)), ("customer_consented", .bool(true))]))])
        let ledger = try makeLedger()
        let (reconciler, inbox) = try settle(ledger)
        _ = try ledger.recordOutsideGrant(transactionId: "913", grantKey: "913", note: "granted by the app's own flow")
        world.simulator.script(consumption: [.error(status: 400, code: 4000185)])
        XCTAssertEqual(try tell(inbox, "CONSUMPTION_REQUEST", purchase("913", token: buyer)).outcome, "answer_queued")
        _ = try reconciler.runPass()
        let answer = try XCTUnwrap(try rows("SELECT state, last_error FROM consumption_answers WHERE transaction_id = '913'").first)
        XCTAssertEqual(answer.string("state"), "failed")
        XCTAssertTrue(answer.string("last_error")?.contains("4000185") == true, answer.string("last_error") ?? "")
        for _ in 0..<3 {
            world.time.advance(by: 1800)
            _ = try reconciler.runPass()
        }
        XCTAssertEqual(world.simulator.consumptionRequests.map(\.transactionId), ["913"], "Apple is asked once")
    }

    func testConsumptionAnswer_whoseStoredEnvironmentIsNotApplesSpelling_isSentNowhere_andTheTextStaysVisible() throws {
        try configure(extra: [("consumption", .object([("respond", .bool(true)), ("customer_consented", .bool(true))]))])
        let ledger = try makeLedger()
        let (reconciler, inbox) = try settle(ledger)
        _ = try ledger.enqueue(NewOrder(orderId: "o-914", userId: buyer, productId: world.coins, transactionId: "914"))
        _ = try ledger.recordOutsideGrant(transactionId: "914", grantKey: "914", note: "granted by the app's own flow")
        XCTAssertEqual(try tell(inbox, "CONSUMPTION_REQUEST", purchase("914", token: buyer)).outcome, "answer_queued")
        // Only a verified notification writes the row; text that is not Apple's came from elsewhere.
        try execute("UPDATE consumption_answers SET environment = 'production' WHERE transaction_id = '914'")
        _ = try reconciler.runPass()
        XCTAssertEqual(world.simulator.consumptionRequests.map(\.environment), [], "neither production nor sandbox is guessed")
        let answer = try XCTUnwrap(try rows("SELECT state, last_error, environment FROM consumption_answers WHERE transaction_id = '914'").first)
        XCTAssertEqual(answer.string("state"), "failed")
        XCTAssertEqual(answer.string("environment"), "production", "the row keeps its text")
        XCTAssertTrue(answer.string("last_error")?.contains("'production'") == true, answer.string("last_error") ?? "")
        let entry = try XCTUnwrap(try history(ledger, "o-914").last { $0.kind == .consumption })
        XCTAssertEqual(entry.outcome, "not_answered")
        XCTAssertEqual(entry.environment, "production")
    }

    func testConsumptionRequest_whileItsOrderIsStillBeingSettled_waits_andIsAnsweredDeliveredOnceItIs() throws {
        try configure(extra: [("consumption", .object([("respond", .bool(true)), ("customer_consented", .bool(true))]))])
        let ledger = try makeLedger()
        let (reconciler, inbox) = try settle(ledger)
        let bought = purchase("913", token: buyer, answers: [.error(status: 500, code: 5000001)])
        _ = try ledger.enqueue(NewOrder(orderId: "o-wait", userId: buyer, productId: world.coins, transactionId: "913"))
        try tell(inbox, "CONSUMPTION_REQUEST", bought)
        _ = try reconciler.runPass()
        XCTAssertEqual(try order(ledger, "o-wait")?.state, .pending)
        XCTAssertEqual(world.simulator.consumptionRequests.count, 0, "not known yet: nothing sent")
        world.time.advance(by: 3600)
        _ = try reconciler.runPass()
        XCTAssertEqual(try order(ledger, "o-wait")?.state, .finished)
        _ = try reconciler.runPass()
        XCTAssertEqual(world.simulator.consumptionRequests.map { $0.body?["deliveryStatus"] }, [.string("DELIVERED")])
    }

    // MARK: - Refunds and revokes (item 14)

    func testSecondRefund_afterAReversalOfARevokedOne_isRevokedAgain_underAKeyOfItsOwn() throws {
        try configure(delivery: try revokingDelivery())
        let ledger = try makeLedger()
        let (reconciler, inbox) = try settle(ledger)
        let bought = purchase("920", token: buyer)
        try tell(inbox, "ONE_TIME_CHARGE", bought)
        _ = try reconciler.runPass()
        XCTAssertEqual(try tell(inbox, "REFUND", bought).outcome, "revoke_queued")
        _ = try reconciler.runPass()
        XCTAssertEqual(revokes, ["revoke:920 apple-920"])
        XCTAssertEqual(try tell(inbox, "REFUND_REVERSED", bought).outcome, "regrant_needed")
        XCTAssertEqual(try tell(inbox, "REFUND", bought).outcome, "revoke_queued", "the goods granted again by hand are owed back again")
        _ = try reconciler.runPass()
        XCTAssertEqual(revokes, ["revoke:920 apple-920", "revoke:920:2 apple-920"])
        _ = try reconciler.runPass()
        XCTAssertEqual(revokes.count, 2)
    }

    func testProratedRefund_revokeCarriesApplesRevocationTypeAndPercentage_andARefundWithoutOneSaysREFUND_FULL() throws {
        let revoke = try world.write("revoke-payloads.sh", """
            #!/bin/sh
            cat >> "\(world.folder)/revoke-payloads.jsonl"
            echo >> "\(world.folder)/revoke-payloads.jsonl"
            """, mode: 0o755)
        try configure(delivery: .object([("command", .array([.string(world.folder + "/grant.sh")])),
                                         ("revoke_command", .array([.string(revoke)]))]))
        let ledger = try makeLedger()
        let (reconciler, inbox) = try settle(ledger)
        var prorated = purchase("960", token: buyer)
        var full = purchase("961", token: buyer)
        var family = purchase("962", token: buyer)
        for bought in [prorated, full, family] { try tell(inbox, "ONE_TIME_CHARGE", bought) }
        _ = try reconciler.runPass()
        prorated.revocationDateMs = nowMs
        prorated.revocationType = "REFUND_PRORATED"
        prorated.revocationPercentage = 50_000
        full.revocationDateMs = nowMs
        family.revocationDateMs = nowMs
        family.revocationType = "FAMILY_REVOKE"
        XCTAssertEqual(try tell(inbox, "REFUND", prorated).outcome, "revoke_queued")
        XCTAssertEqual(try tell(inbox, "REFUND", full).outcome, "revoke_queued")
        XCTAssertEqual(try tell(inbox, "REVOKE", family).outcome, "revoke_queued")
        _ = try reconciler.runPass()
        let text = try String(contentsOfFile: world.folder + "/revoke-payloads.jsonl", encoding: .utf8)
        var byTransaction: [String: JSONValue] = [:]
        for line in text.split(separator: "\n") where !line.trimmingCharacters(in: .whitespaces).isEmpty {
            let payload = try JSONValue.parse(Data(line.utf8))
            byTransaction[payload["transaction_id"]?.looseString ?? ""] = payload
        }
        XCTAssertEqual(byTransaction["960"]?["revocation_type"], .string("REFUND_PRORATED"))
        XCTAssertEqual(byTransaction["960"]?["revocation_percentage"]?.looseInt64, 50_000)
        XCTAssertEqual(byTransaction["961"]?["revocation_type"], .string("REFUND_FULL"), "Apple gave no type: all of it")
        XCTAssertEqual(byTransaction["961"]?["revocation_percentage"], .null)
        XCTAssertEqual(byTransaction["962"]?["revocation_type"], .string("FAMILY_REVOKE"))
        XCTAssertEqual(byTransaction["962"]?["revocation_percentage"], .null)
        XCTAssertTrue(try history(ledger, "apple-960").contains { $0.detail?.contains("REFUND_PRORATED 50000 milliunits") == true })
    }

    func testSecondRefund_afterAReversalBeforeTheRevokeRan_isRevokedOnce() throws {
        try configure(delivery: try revokingDelivery())
        let ledger = try makeLedger()
        let (reconciler, inbox) = try settle(ledger)
        let bought = purchase("921", token: buyer)
        try tell(inbox, "ONE_TIME_CHARGE", bought)
        _ = try reconciler.runPass()
        XCTAssertEqual(try tell(inbox, "REFUND", bought).outcome, "revoke_queued")
        XCTAssertEqual(try tell(inbox, "REFUND_REVERSED", bought).outcome, "revoke_cancelled")
        XCTAssertEqual(try tell(inbox, "REFUND", bought).outcome, "revoke_queued")
        _ = try reconciler.runPass()
        XCTAssertEqual(revokes, ["revoke:921 apple-921"])
    }

    func testRefund_ofAnOrderWhoseHookTimedOut_isStillRevoked_andNeverDeliveredAgain() throws {
        let slow = try world.hook("slow.sh", exit: 0, extra: "sleep 30")
        try configure(delivery: try revokingDelivery(grant: slow, timeout: 0.5))
        let ledger = try makeLedger()
        let (reconciler, inbox) = try settle(ledger)
        let bought = purchase("922", token: buyer)
        try tell(inbox, "ONE_TIME_CHARGE", bought)
        _ = try reconciler.runPass()
        XCTAssertEqual(try order(ledger, "apple-922")?.state, .pending, "the hook timed out: its outcome is unknown")
        XCTAssertEqual(world.deliveries, ["922 apple-922"], "the hook did run")
        XCTAssertEqual(try tell(inbox, "REFUND", bought).outcome, "revoke_queued")
        XCTAssertEqual(try order(ledger, "apple-922")?.reason, "refunded")
        world.time.advance(by: 7200)
        _ = try reconciler.runPass()
        XCTAssertEqual(revokes, ["revoke:922 apple-922"], "the goods the hook may have granted are taken back")
        XCTAssertEqual(world.deliveries, ["922 apple-922"], "never delivered again")
        XCTAssertEqual(try ledger.revocation(orderId: "apple-922")?.state, "revoked")
    }

    // MARK: - History catch-up (item 11)

    func testFirstCatchUp_withoutBackfillSince_startsAtNow_andAPurchaseFromBeforeIsReportedNotDelivered() throws {
        try configure()
        let ledger = try makeLedger()
        let (reconciler, inbox) = try settle(ledger)
        let before = purchase("930", token: buyer, atMs: nowMs - 5000)
        world.simulator.record(signedPayload: try notification("ONE_TIME_CHARGE", before, signedAtMs: nowMs - 4000).signed(),
                               environment: "Production", signedDateMs: nowMs - 4000)
        let started = nowMs
        let first = try inbox.syncHistory()
        XCTAssertEqual(first.pages, 0, "the first start reads nothing from before it")
        XCTAssertEqual(world.simulator.notificationHistoryRequests.count, 0)
        let cursor = try ledger.notificationCursor(environment: .production)
        XCTAssertEqual(cursor.syncedUntilMs, started)
        XCTAssertEqual(cursor.startedAtMs, started)
        // Later windows overlap a little: what they find from before the start is a person's call.
        world.time.advance(by: 60)
        let after = purchase("931", token: buyer)
        world.simulator.record(signedPayload: try notification("ONE_TIME_CHARGE", after).signed(), environment: "Production",
                               signedDateMs: nowMs - 1000)
        let second = try inbox.syncHistory()
        XCTAssertEqual(second.stored, 2)
        let backfilled = try XCTUnwrap(try order(ledger, "apple-930"))
        XCTAssertEqual(backfilled.state, .needsAttention)
        XCTAssertEqual(backfilled.reason, "backfilled_purchase")
        XCTAssertTrue(backfilled.lastError?.contains("settle retry apple-930") == true, backfilled.lastError ?? "")
        _ = try reconciler.runPass()
        XCTAssertEqual(world.deliveries, ["931 apple-931"], "only the purchase made after the start is delivered")
    }

    func testFirstCatchUp_withBackfillSince_readsFromThere_andReportsThePurchasesItFindsForAPerson() throws {
        let since = nowMs - 2 * 86_400_000
        try configure(notifications: [("backfill_since", .string(Timestamp.rfc3339(milliseconds: since)))])
        let ledger = try makeLedger()
        let (reconciler, inbox) = try settle(ledger)
        let old = purchase("932", token: buyer, atMs: nowMs - 86_400_000)
        world.simulator.record(signedPayload: try notification("ONE_TIME_CHARGE", old, signedAtMs: nowMs - 86_400_000).signed(),
                               environment: "Production", signedDateMs: nowMs - 86_400_000)
        let report = try inbox.syncHistory()
        XCTAssertEqual(report.stored, 1)
        XCTAssertEqual(world.simulator.notificationHistoryRequests.first?.startDate, since)
        XCTAssertEqual(try order(ledger, "apple-932")?.reason, "backfilled_purchase")
        _ = try reconciler.runPass()
        XCTAssertEqual(world.deliveries, [], "a back-filled purchase is never delivered without a person")
        XCTAssertEqual(try statusReason(ledger, "apple-932"), "backfilled_purchase")
    }

    func statusReason(_ ledger: any SettleLedger, _ id: String) throws -> String? {
        try ledger.orderRecord(id)?.order.reason
    }

    func testHistoryNotificationOurVerifierRefuses_stopsTheCatchUp_keepsItsPlace_andIsReadOnceTheVerifierIsFixed() throws {
        guard case var .object(api) = world.serverAPIConfig else { return XCTFail() }
        api = TestWorld.merge(api, [("root_certificates", .array([.string("AppleRootCA-G3.pem")]))])
        try configure(serverAPI: .object(api))
        let ledger = try makeLedger()
        try startedHistory(ledger, secondsAgo: 60)
        let before = try ledger.notificationCursor(environment: .production)
        let missed = purchase("940", token: buyer)
        world.simulator.record(signedPayload: try notification("ONE_TIME_CHARGE", missed).signed(), environment: "Production",
                               signedDateMs: nowMs - 1000)
        let broken = try XCTUnwrap(try world.reconciler(ledger: ledger).inbox)
        let report = try broken.syncHistory()
        XCTAssertTrue(report.stoppedBecause?.contains("refused a notification from Apple's history") == true, report.stoppedBecause ?? "")
        XCTAssertEqual(try ledger.notificationCursor(environment: .production).syncedUntilMs, before.syncedUntilMs, "its place is kept")
        XCTAssertNil(try order(ledger, "apple-940"))
        try configure()
        let (reconciler, fixed) = try settle(ledger)
        XCTAssertEqual(try fixed.syncHistory().stored, 1)
        _ = try reconciler.runPass()
        XCTAssertEqual(world.deliveries, ["940 apple-940"])
    }

    func testHistoryNotificationWhoseEffectCannotBeWritten_isKeptNotApplied_andTheCatchUpMovesOn() throws {
        try configure()
        let ledger = try makeLedger()
        try startedHistory(ledger, secondsAgo: 60)
        // A ledger that refuses this purchase's order (as a row a backend broke would).
        try poisonOrders(transaction: "941")
        let (reconciler, inbox) = try settle(ledger)
        let bad = notification("ONE_TIME_CHARGE", purchase("941", token: buyer))
        let good = notification("ONE_TIME_CHARGE", purchase("942", token: buyer))
        for n in [bad, good] {
            world.simulator.record(signedPayload: try n.signed(), environment: "Production", signedDateMs: n.signedDateMs)
        }
        let report = try inbox.syncHistory()
        XCTAssertNil(report.stoppedBecause)
        XCTAssertEqual(report.stored, 2)
        XCTAssertEqual(try ledger.notification(uuid: bad.uuid)?.outcome, "not_applied")
        XCTAssertTrue(try ledger.notification(uuid: bad.uuid)?.detail?.contains("this row cannot be written") == true)
        XCTAssertGreaterThan(try ledger.notificationCursor(environment: .production).syncedUntilMs ?? 0, nowMs - 60_000,
                             "the cursor moved past it")
        _ = try reconciler.runPass()
        XCTAssertEqual(world.deliveries, ["942 apple-942"])
    }

    func testSyncHistory_reportsProgressAfterEveryPage() throws {
        try configure(extra: [("accept_sandbox", .bool(false))])
        let ledger = try makeLedger()
        try startedHistory(ledger, secondsAgo: 60)
        let inbox = try XCTUnwrap(try world.reconciler(ledger: ledger).inbox)
        for i in 0..<(AppleSimulator.notificationPageSize + 5) {
            let n = notification("TEST", purchase("95\(i)", token: buyer))
            world.simulator.record(signedPayload: try n.signed(), environment: "Production", signedDateMs: n.signedDateMs)
        }
        var kicks = 0
        let report = try inbox.syncHistory(progress: { kicks += 1 })
        XCTAssertEqual(report.pages, 2)
        XCTAssertEqual(kicks, 2, "one kick per page: a long catch-up keeps the watchdog fed")
    }

    // MARK: - Ids settle keeps for Apple's purchases (item 11)

    func testBackendRowWithAnAppleOrderId_isQuarantinedRowInvalid_andNeverDelivered() throws {
        try configure()
        let ledger = try makeLedger()
        let (reconciler, _) = try settle(ledger)
        purchase("960", token: buyer)
        _ = try ledger.enqueue(NewOrder(orderId: "apple-960", userId: buyer, productId: world.coins, transactionId: "960"))
        _ = try reconciler.runPass()
        let squatted = try XCTUnwrap(try order(ledger, "apple-960"))
        XCTAssertEqual(squatted.state, .needsAttention)
        XCTAssertEqual(squatted.reason, "row_invalid")
        XCTAssertEqual(world.deliveries, [])
    }

    // MARK: - Numbers from outside (issue 32, item 16; NotificationInboxTests+Numbers.swift)

    func testAppleDatesOfAnySize_inSignedNotificationsAndTheHistoryCursor_neverTrap_andEachPurchaseIsSettledOnce() throws { try checkAppleDatesOfAnySize() }

    // MARK: - Configuration

    func testRevokeURL_equalToTheGrantURL_isRefused() throws {
        try world.write("webhook-secret", "secret", mode: 0o600)
        try world.writeConfig(overrides: [("delivery", .object([("webhook", .object([
            ("url", .string("https://grants.example.com/settle")), ("secret_file", .string("webhook-secret")),
            ("revoke_url", .string("https://grants.example.com/settle")),
        ]))]))])
        XCTAssertThrowsError(try world.configuration()) { error in
            XCTAssertTrue("\(error)".contains("revoke_url"), "\(error)")
        }
    }

    func testBackfillSince_mustBeAnRFC3339Time() throws {
        try configure(notifications: [("backfill_since", .string("last tuesday"))])
        XCTAssertThrowsError(try world.configuration()) { error in
            XCTAssertTrue("\(error)".contains("backfill_since"), "\(error)")
        }
        try configure(notifications: [("backfill_since", .string("2026-01-31T00:00:00Z"))])
        XCTAssertEqual(try world.configuration().notifications?.backfillSinceMs, 1_769_817_600_000)
    }

    // MARK: - Metrics (item 14)

    // MARK: - Notifications settle does not use never stall it (issue 24, item 1)

    /// Apple's RESCIND_CONSENT (`appData`, no `data`) and EXTERNAL_PURCHASE_TOKEN
    /// (`externalPurchaseToken`, no environment), shaped as Apple's library's test payloads.
    func shapesSettleDoesNotUse() -> [SimulatedNotification] {
        [SimulatedNotification(type: "RESCIND_CONSENT", transaction: nil, bundleId: world.bundleId, signedDateMs: nowMs - 3000, body: .appData),
         SimulatedNotification(type: "EXTERNAL_PURCHASE_TOKEN", subtype: "UNREPORTED", transaction: nil, bundleId: world.bundleId,
                               environment: "Sandbox", signedDateMs: nowMs - 2000,
                               body: .externalPurchaseToken(externalPurchaseId: "SANDBOX_b2158121-7af9-49d4-9561-1f588205523e")),
         SimulatedNotification(type: "EXTERNAL_PURCHASE_TOKEN", subtype: "UNREPORTED", transaction: nil, bundleId: world.bundleId,
                               signedDateMs: nowMs - 1500,
                               body: .externalPurchaseToken(externalPurchaseId: "b2158121-7af9-49d4-9561-1f588205523e"))]
    }

    func testRescindConsentAndExternalPurchaseToken_atTheEndpoint_areStoredAsRecorded_andAnswered200() throws {
        try configure()
        let ledger = try makeLedger()
        let (_, inbox) = try settle(ledger)
        for n in shapesSettleDoesNotUse() {
            let body = JSONValue.object([("signedPayload", .string(try n.signed()))]).data
            let (response, needsPass) = inbox.answer(body)
            XCTAssertEqual(response.status, 200, "\(n.type): \(String(decoding: response.body, as: UTF8.self))")
            XCTAssertFalse(needsPass)
            let stored = try XCTUnwrap(try ledger.notification(uuid: n.uuid), n.type)
            XCTAssertEqual(stored.outcome, "recorded")
            XCTAssertEqual(stored.type, n.type)
            XCTAssertEqual(stored.environment, n.environment, "an externalPurchaseId starting with SANDBOX is Sandbox")
        }
        XCTAssertEqual(try rowCount("notifications"), 3)
        XCTAssertEqual(try rowCount("orders"), 0)
    }

    /// Apple's changes after API 1.21 / the 2026-04-27 notifications (docs/store-changes.md): a
    /// transaction with fields settle does not know, and a notification type and subtype Apple
    /// adds later, are verified, stored and recorded, never refused; a purchase carrying them is delivered.
    func testTypesSubtypesAndTransactionFieldsAppleAddsLater_areStoredAndRecorded_andTheirPurchaseDelivered() throws {
        try configure()
        let ledger = try makeLedger()
        let (reconciler, inbox) = try settle(ledger)
        var later = purchase("930", token: buyer)
        later.laterFields = ["billingPlanType": .string("MONTHLY_WITH_TWELVE_MONTH_COMMITMENT"),
                             "commitmentInfo": .object([("commitmentPrice", .number(119_880))]),
                             "aFieldOfAVersionNotWrittenYet": .array([.number(1), .null])]
        world.simulator.script(transaction: "930", TransactionScript(transaction: later))
        let bought = try tell(inbox, "ONE_TIME_CHARGE", later)
        XCTAssertEqual(bought.outcome, "order_created")
        _ = try reconciler.runPass()
        XCTAssertEqual(try order(ledger, "apple-930")?.state, .finished)
        let future = SimulatedNotification(type: "A_TYPE_APPLE_ADDS_LATER", subtype: "A_NEW_SUBTYPE", transaction: later,
                                           bundleId: world.bundleId, signedDateMs: nowMs - 500)
        let body = JSONValue.object([("signedPayload", .string(try future.signed()))]).data
        let (response, _) = inbox.answer(body)
        XCTAssertEqual(response.status, 200, String(decoding: response.body, as: UTF8.self))
        let stored = try XCTUnwrap(try ledger.notification(uuid: future.uuid))
        XCTAssertEqual(stored.type, "A_TYPE_APPLE_ADDS_LATER")
        XCTAssertEqual(stored.outcome, "recorded")
        XCTAssertEqual(world.deliveries, ["930 apple-930"], "nothing is delivered twice for a type settle does not act on")
    }

    func testNewShapes_whoseBundleOrEnvironmentFails_areStillRefused() throws {
        try configure()
        let ledger = try makeLedger()
        let (_, inbox) = try settle(ledger)
        var foreign = shapesSettleDoesNotUse()[0]
        foreign.bundleId = "com.example.other"
        var local = shapesSettleDoesNotUse()[0]
        local.environment = "LocalTesting"
        var token = shapesSettleDoesNotUse()[2]
        token.bundleId = "com.example.other"
        for (n, code) in [(foreign, "bundle_mismatch"), (local, "environment_mismatch"), (token, "bundle_mismatch")] {
            let (response, _) = inbox.answer(JSONValue.object([("signedPayload", .string(try n.signed()))]).data)
            XCTAssertEqual(response.status, 403)
            XCTAssertTrue(String(decoding: response.body, as: UTF8.self).contains(code), String(decoding: response.body, as: UTF8.self))
        }
        XCTAssertEqual(try rowCount("notifications"), 0)
    }

    func testHistoryCatchUp_readsOnPastNotificationsSettleDoesNotUse_andDeliversThePurchaseAfterThem() throws {
        try configure()
        let ledger = try makeLedger()
        try startedHistory(ledger, secondsAgo: 60)
        let (reconciler, inbox) = try settle(ledger)
        let after = notification("ONE_TIME_CHARGE", purchase("950", token: buyer))
        for n in shapesSettleDoesNotUse() + [after] {
            world.simulator.record(signedPayload: try n.signed(), environment: n.environment, signedDateMs: n.signedDateMs)
        }
        let report = try inbox.syncHistory()
        XCTAssertNil(report.stoppedBecause)
        XCTAssertEqual(report.stored, 4)
        XCTAssertGreaterThan(try ledger.notificationCursor(environment: .production).syncedUntilMs ?? 0, nowMs - 60_000)
        XCTAssertGreaterThan(try ledger.notificationCursor(environment: .sandbox).syncedUntilMs ?? 0, nowMs - 60_000)
        _ = try reconciler.runPass()
        XCTAssertEqual(world.deliveries, ["950 apple-950"])
    }

    func testNotificationWhoseSignedTransactionSettleCannotRead_isKeptNotApplied_answered200_andTheCatchUpMovesOn() throws {
        try configure()
        let ledger = try makeLedger()
        try startedHistory(ledger, secondsAgo: 60)
        let (reconciler, inbox) = try settle(ledger)
        // Signed by Apple for this app, but without a productId settle needs.
        var odd = purchase("951", token: buyer)
        odd.productId = ""
        let unreadable = notification("REFUND", odd)
        let (response, _) = inbox.answer(JSONValue.object([("signedPayload", .string(try unreadable.signed()))]).data)
        XCTAssertEqual(response.status, 200)
        XCTAssertEqual(try ledger.notification(uuid: unreadable.uuid)?.outcome, "not_applied")
        XCTAssertTrue(try ledger.notification(uuid: unreadable.uuid)?.detail?.contains("cannot be read") == true)
        let again = notification("REFUND", odd)
        let after = notification("ONE_TIME_CHARGE", purchase("952", token: buyer))
        for n in [again, after] {
            world.simulator.record(signedPayload: try n.signed(), environment: "Production", signedDateMs: n.signedDateMs)
        }
        XCTAssertNil(try inbox.syncHistory().stoppedBecause)
        _ = try reconciler.runPass()
        XCTAssertEqual(world.deliveries, ["952 apple-952"])
    }

    func testNotificationTypeWithoutLetters_isCountedUnderANameOfItsOwn_andTheMetricsRender() {
        let metrics = Metrics()
        metrics.observeNotification(type: "---", outcome: "payload_invalid", at: nil)
        metrics.observeNotification(type: "", outcome: "recorded", at: nil)
        let text = metrics.render(summary: LedgerSummary(counts: [:], oldestUndeliveredSeconds: nil, orders: []), bundleId: "b", now: 0)
        XCTAssertTrue(text.contains("type=\"unnamed\",outcome=\"payload_invalid\"} 1"), text)
        XCTAssertTrue(text.contains("type=\"unnamed\",outcome=\"recorded\"} 1"), text)
    }
}

