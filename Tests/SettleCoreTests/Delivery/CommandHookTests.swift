import SettleTesting
import XCTest
@testable import SettleCore

final class CommandHookTests: XCTestCase {
    func testHookEnvironment_hasTheOrderAndKey_butNotSystemdsNotifySocket() throws {
        let world = try TestWorld()
        let script = try world.write("env.sh", "#!/bin/sh\ncat >/dev/null\nenv > \(world.folder)/env.txt\n", mode: 0o755)
        let hook = CommandHook(arguments: [script], timeoutSeconds: 5, products: [:],
                               baseEnvironment: ["PATH": "/usr/bin:/bin", "NOTIFY_SOCKET": "/run/systemd/notify",
                                                 "WATCHDOG_USEC": "1000", "KEEP_ME": "yes"])
        let order = Order(orderId: "o-7", userId: "u", productId: "p", requestedTransactionId: nil, receiptSHA256: nil,
                          signedTransaction: nil, state: .delivering, attempts: 0, nextAttemptAt: 0, reason: nil, lastError: nil,
                          environment: nil, verified: nil, createdAt: 0, updatedAt: 0, finishedAt: nil, lease: nil)
        let purchase = VerifiedPurchase(transactionId: "42", originalTransactionId: "42", productId: "p", environment: "Production",
                                        quantity: 1, purchaseDateMs: nil, expiresDateMs: nil)
        XCTAssertEqual(hook.deliver(order: order, purchase: purchase).outcome, .delivered)
        let env = try String(contentsOfFile: world.folder + "/env.txt", encoding: .utf8).split(separator: "\n").map(String.init)
        XCTAssertTrue(env.contains("SETTLE_ORDER_ID=o-7"))
        XCTAssertTrue(env.contains("SETTLE_IDEMPOTENCY_KEY=42"))
        XCTAssertTrue(env.contains("KEEP_ME=yes"))
        XCTAssertFalse(env.contains { $0.hasPrefix("NOTIFY_SOCKET=") || $0.hasPrefix("WATCHDOG_USEC=") })
    }
}
