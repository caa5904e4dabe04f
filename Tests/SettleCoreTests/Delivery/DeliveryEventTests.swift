import SettleTesting
import XCTest
@testable import SettleApp
@testable import SettleBase
@testable import SettleModel
@testable import SettleDelivery

/// Every document a delivery hook receives says what it is, so a receiver can refuse events it
/// does not know instead of granting them (a revoke must never read as a grant).
final class DeliveryEventTests: XCTestCase {
    var world: TestWorld!

    override func setUpWithError() throws { world = try TestWorld() }
    override func tearDown() { world = nil }

    func item(_ key: String) -> (order: Order, purchase: VerifiedPurchase) {
        let purchase = VerifiedPurchase(transactionId: key, originalTransactionId: key, productId: world.coins, environment: "Production",
                                        quantity: 1, purchaseDateMs: nil, expiresDateMs: nil)
        let order = Order(orderId: "o-\(key)", userId: "u", productId: world.coins, requestedTransactionId: key, receiptSHA256: nil,
                          signedTransaction: nil, state: .delivering, attempts: 0, nextAttemptAt: 0, reason: nil, lastError: nil,
                          environment: nil, verified: purchase, createdAt: 0, updatedAt: 0, finishedAt: nil, lease: nil)
        return (order, purchase)
    }

    func testCommandHookStdin_saysEventGrant() throws {
        let hook = CommandHook(arguments: [world.folder + "/grant.sh"], timeoutSeconds: 10, products: [:], baseEnvironment: [:])
        let (order, purchase) = item("801")
        XCTAssertEqual(hook.deliver(order: order, purchase: purchase).outcome, .delivered)
        let payload = try JSONValue.parse(Data(contentsOf: URL(fileURLWithPath: world.folder + "/payload-o-801.json")))
        XCTAssertEqual(payload["event"], .string("grant"))
        XCTAssertEqual(payload["idempotency_key"], .string("801"))
    }

    func testBatchLines_eachSayEventGrant() throws {
        let script = try world.write("batch.sh", """
            #!/bin/sh
            while IFS= read -r line; do
              printf '%s\\n' "$line" >> "\(world.folder)/lines.log"
              key=$(printf '%s' "$line" | sed 's/.*"idempotency_key":"\\([^"]*\\)".*/\\1/')
              printf '{"idempotency_key":"%s","result":"delivered"}\\n' "$key"
            done
            """, mode: 0o755)
        var hook = CommandHook(arguments: [script], timeoutSeconds: 10, products: [:], baseEnvironment: [:])
        hook.batchSize = 4
        let reports = hook.deliver(batch: ["802", "803"].map(item))
        XCTAssertEqual(reports.map(\.outcome), [.delivered, .delivered])
        let lines = try String(contentsOfFile: world.folder + "/lines.log", encoding: .utf8).split(separator: "\n")
        XCTAssertEqual(lines.count, 2)
        XCTAssertEqual(try lines.map { try JSONValue.parse(Data($0.utf8))["event"] }, [.string("grant"), .string("grant")])
    }

    /// Issue 37: `refunds_90d` is on each line of a batch with the count the pass made for its
    /// order, and absent where nothing counted (a document built outside a pass).
    func testBatchLines_carryEachOrdersRefunds90d_onlyWhenCounted() throws {
        let script = try world.write("batch-refunds.sh", """
            #!/bin/sh
            while IFS= read -r line; do
              printf '%s\\n' "$line" >> "\(world.folder)/refund-lines.log"
              key=$(printf '%s' "$line" | sed 's/.*"idempotency_key":"\\([^"]*\\)".*/\\1/')
              printf '{"idempotency_key":"%s","result":"delivered"}\\n' "$key"
            done
            """, mode: 0o755)
        var hook = CommandHook(arguments: [script], timeoutSeconds: 10, products: [:], baseEnvironment: [:])
        hook.batchSize = 4
        var items = ["804", "805", "806"].map(item)
        items[0].order.refunds90d = 4
        items[1].order.refunds90d = 0
        XCTAssertEqual(hook.deliver(batch: items).map(\.outcome), [.delivered, .delivered, .delivered])
        let lines = try String(contentsOfFile: world.folder + "/refund-lines.log", encoding: .utf8)
            .split(separator: "\n")
        XCTAssertEqual(try lines.map { try JSONValue.parse(Data($0.utf8))["refunds_90d"] },
                       [.number(4), .number(0), nil])
    }
}
