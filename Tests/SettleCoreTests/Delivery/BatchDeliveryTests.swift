import SettleTesting
import XCTest
@testable import SettleApp
@testable import SettleModel
@testable import SettleDelivery
@testable import SettleAppStoreSimulator

/// `delivery.batch_size`: one run of the command for several orders, one answer line each, and
/// exactly-once per order as with one process per order.
final class BatchDeliveryTests: XCTestCase {
    var world: TestWorld!

    override func setUpWithError() throws { world = try TestWorld() }
    override func tearDown() { world = nil }

    /// A batch hook: answers per line from the key, counts its runs.
    func batchHook() throws -> String {
        try world.write("batch.sh", """
            #!/bin/sh
            echo run >> "\(world.folder)/runs.log"
            echo "starting a batch of $SETTLE_BATCH" >&2
            while IFS= read -r line; do
              key=$(printf '%s' "$line" | sed 's/.*"idempotency_key":"\\([^"]*\\)".*/\\1/')
              echo "$key" >> "\(world.deliveriesPath)"
              case "$key" in
                T-already) r=already_granted;;
                T-retry) r=retry;;
                T-refused) r=refused;;
                T-silent) continue;;
                *) r=delivered;;
              esac
              printf '{"idempotency_key":"%s","result":"%s","message":"from the batch hook"}\\n' "$key" "$r"
            done
            exit 0
            """, mode: 0o755)
    }

    func item(_ key: String) -> (order: Order, purchase: VerifiedPurchase) {
        let purchase = VerifiedPurchase(transactionId: key, originalTransactionId: key, productId: world.coins, environment: "Production",
                                        quantity: 1, purchaseDateMs: nil, expiresDateMs: nil)
        let order = Order(orderId: "o-\(key)", userId: "u", productId: world.coins, requestedTransactionId: key, receiptSHA256: nil,
                          signedTransaction: nil, state: .delivering, attempts: 0, nextAttemptAt: 0, reason: nil, lastError: nil,
                          environment: nil, verified: purchase, createdAt: 0, updatedAt: 0, finishedAt: nil, lease: nil)
        return (order, purchase)
    }

    func testOneRunForTheBatch_eachOrderGetsItsOwnAnswer_andNoLineMeansUnconfirmed() throws {
        var hook = CommandHook(arguments: [try batchHook()], timeoutSeconds: 10, products: [:], baseEnvironment: [:])
        hook.batchSize = 8
        let reports = hook.deliver(batch: ["T-ok", "T-already", "T-retry", "T-refused", "T-silent"].map(item))
        XCTAssertEqual(reports.map(\.outcome), [
            .delivered,
            .alreadyGranted("hook answered that this purchase was granted before: from the batch hook"),
            .retry("hook asked to try again later: from the batch hook"),
            .refused("hook refused the delivery permanently: from the batch hook"),
            .unconfirmed("hook exited 0 without an answer line for this order"),
        ])
        XCTAssertEqual(try String(contentsOfFile: world.folder + "/runs.log", encoding: .utf8), "run\n", "one process for five orders")
        XCTAssertTrue(reports[0].output.contains("starting a batch of 5"), reports[0].output)
    }

    /// A batch of one, a single order and a re-sent grant get the batch contract too: a batch
    /// hook answers with lines and exits 0 whatever they say, so its exit code alone must never
    /// finish an order (before, a batch of one got the one-order contract, and a `retry` or
    /// `refused` line with exit 0 was taken for `delivered`: an order finished, its goods never granted).
    func testABatchOfOne_aSingleOrderAndAResentGrant_getTheBatchContract_soARetryLineIsNeverADelivery() throws {
        var hook = CommandHook(arguments: [try batchHook()], timeoutSeconds: 10, products: [:], baseEnvironment: [:])
        hook.batchSize = 8
        XCTAssertEqual(hook.deliver(batch: [item("T-retry")]).map(\.outcome),
                       [.retry("hook asked to try again later: from the batch hook")])
        XCTAssertEqual(hook.deliver(batch: [item("T-refused")]).map(\.outcome),
                       [.refused("hook refused the delivery permanently: from the batch hook")])
        XCTAssertEqual(hook.deliver(batch: [item("T-silent")]).map(\.outcome),
                       [.unconfirmed("hook exited 0 without an answer line for this order")])
        XCTAssertEqual(hook.deliver(order: item("T-retry").order, purchase: item("T-retry").purchase).outcome,
                       .retry("hook asked to try again later: from the batch hook"))
        let resent = HookPayload.make(order: item("T-retry").order, purchase: item("T-retry").purchase, product: nil)
        XCTAssertEqual(hook.send(resent, orderId: "o-T-retry", idempotencyKey: "T-retry").outcome,
                       .retry("hook asked to try again later: from the batch hook"))
        XCTAssertEqual(hook.deliver(batch: [item("T-ok")]).map(\.outcome), [.delivered])
        let output = hook.deliver(batch: [item("T-ok")])[0].output
        XCTAssertTrue(output.contains("starting a batch of 1"), output)
        // Without batch_size, the one-order contract: exit 0 is delivered.
        hook.batchSize = 1
        XCTAssertEqual(hook.deliver(batch: [item("T-retry")]).map(\.outcome), [.delivered])
    }

    func testABatchThatCannotStart_isAConfigurationFaultForEveryOrder() {
        var hook = CommandHook(arguments: [world.folder + "/missing.sh"], timeoutSeconds: 10, products: [:], baseEnvironment: [:])
        hook.batchSize = 8
        let reports = hook.deliver(batch: ["T-1", "T-2"].map(item))
        XCTAssertEqual(reports.count, 2)
        for report in reports {
            guard case .cannotStart = report.outcome else { return XCTFail("\(report.outcome)") }
        }
    }

    func testAPassWithBatches_finishesEveryOrderOnce_inFewerRunsThanOrders() throws {
        try world.writeConfig(hook: try batchHook(), schedule: [("concurrency", .number(8))],
                              overrides: [("delivery", .object([("command", .array([.string(world.folder + "/batch.sh")])),
                                                                ("batch_size", .number(16))]))])
        let ledger = try world.ledger()
        for i in 0..<40 {
            let txn = String(2_000_000_740_000_000 + i)
            let receipt = world.scriptReceipt("r\(i)", [SimulatedTransaction(productId: world.coins, transactionId: txn)])
            _ = try ledger.enqueue(NewOrder(orderId: "o-\(i)", userId: "u", productId: world.coins, transactionId: txn, receipt: receipt))
        }
        let report = try world.reconciler(ledger: ledger).runPass()
        XCTAssertEqual(report.finished, 40)
        XCTAssertEqual(Set(world.deliveries).count, 40)
        XCTAssertEqual(world.deliveries.count, 40, "every order delivered once")
        let runs = try String(contentsOfFile: world.folder + "/runs.log", encoding: .utf8).split(separator: "\n").count
        XCTAssertLessThanOrEqual(runs, 40)
        XCTAssertGreaterThanOrEqual(runs, 3, "at most 16 a run")
    }

    /// A batch's answers are recorded each as its own: the plain deliveries finish together (one
    /// commit), a retry and a refusal in the same batch end where they would alone.
    func testAPassWithMixedAnswersInOneBatch_finishesTheDelivered_andRecordsEachOtherAnswerAsItsOwn() throws {
        let hook = try world.write("mixed.sh", """
            #!/bin/sh
            while IFS= read -r line; do
              key=$(printf '%s' "$line" | sed 's/.*"idempotency_key":"\\([^"]*\\)".*/\\1/')
              echo "$key" >> "\(world.deliveriesPath)"
              case "$key" in
                *000003|*000011|*000019) r=retry;;
                *000005|*000013|*000021) r=refused;;
                *) r=delivered;;
              esac
              printf '{"idempotency_key":"%s","result":"%s","message":"from the batch hook"}\\n' "$key" "$r"
            done
            """, mode: 0o755)
        try world.writeConfig(hook: hook, schedule: [("concurrency", .number(8))],
                              overrides: [("delivery", .object([("command", .array([.string(hook)])),
                                                                ("batch_size", .number(8))]))])
        let ledger = try world.ledger()
        for i in 0..<24 {
            let txn = String(2_000_000_750_000_000 + i)
            let receipt = world.scriptReceipt("r\(i)", [SimulatedTransaction(productId: world.coins, transactionId: txn)])
            _ = try ledger.enqueue(NewOrder(orderId: "o-\(i)", userId: "u", productId: world.coins, transactionId: txn, receipt: receipt))
        }
        let report = try world.reconciler(ledger: ledger).runPass()
        XCTAssertEqual(report.finished, 18)
        XCTAssertEqual(world.deliveries.count, 24, "every order's hook ran once")
        for i in 0..<24 {
            let record = try XCTUnwrap(try ledger.orderRecord("o-\(i)"))
            switch i {
            case 3, 11, 19:
                XCTAssertEqual(record.order.state, .pending, "o-\(i)")
                XCTAssertEqual(record.order.attempts, 1, "o-\(i)")
            case 5, 13, 21:
                XCTAssertEqual(record.order.state, .needsAttention, "o-\(i)")
            default:
                XCTAssertEqual(record.order.state, .finished, "o-\(i)")
                XCTAssertEqual(record.history.filter { $0.outcome == "delivered" }.count, 1, "o-\(i)")
                XCTAssertEqual(record.history.last?.outcome, "delivered", "o-\(i)")
                XCTAssertNil(record.order.lease, "o-\(i)")
            }
        }
    }

    func testBatchSize_isForCommandsOnly() throws {
        try world.write("webhook-secret", "s", mode: 0o600)
        try world.writeConfig(overrides: [("delivery", .object([
            ("webhook", .object([("url", .string("http://127.0.0.1:9/grant")), ("secret_file", .string("webhook-secret"))])),
            ("batch_size", .number(8))]))])
        XCTAssertThrowsError(try world.configuration()) { error in
            XCTAssertTrue("\(error)".contains("delivery.batch_size"), "\(error)")
        }
    }
}
