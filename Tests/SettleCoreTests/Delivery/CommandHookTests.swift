import SettleTesting
import XCTest
@testable import SettleApp
@testable import SettleModel
@testable import SettleDelivery

final class CommandHookTests: XCTestCase {
    func testHookEnvironment_isClean_pathLangTZTheSettleVariablesAndOnlyTheNamedOnes() throws {
        let world = try TestWorld()
        let script = try world.write("env.sh", "#!/bin/sh\ncat >/dev/null\nenv > \(world.folder)/env.txt\n", mode: 0o755)
        let hook = CommandHook(arguments: [script], timeoutSeconds: 5, products: [:],
                               baseEnvironment: ["PATH": "/usr/bin:/bin", "NOTIFY_SOCKET": "/run/systemd/notify",
                                                 "WATCHDOG_USEC": "1000", "KEEP_ME": "yes", "LANG": "C.UTF-8", "TZ": "UTC",
                                                 "CREDENTIALS_DIRECTORY": "/run/credentials/settle.service",
                                                 "https_proxy": "http://user:pass@proxy:3128"],
                               passedThrough: ["KEEP_ME", "NOT_SET"])
        let order = Order(orderId: "o-7", userId: "u", productId: "p", requestedTransactionId: nil, receiptSHA256: nil,
                          signedTransaction: nil, state: .delivering, attempts: 0, nextAttemptAt: 0, reason: nil, lastError: nil,
                          environment: nil, verified: nil, createdAt: 0, updatedAt: 0, finishedAt: nil, lease: nil)
        let purchase = VerifiedPurchase(transactionId: "42", originalTransactionId: "42", productId: "p", environment: "Production",
                                        quantity: 1, purchaseDateMs: nil, expiresDateMs: nil)
        XCTAssertEqual(hook.deliver(order: order, purchase: purchase).outcome, .delivered)
        let env = try String(contentsOfFile: world.folder + "/env.txt", encoding: .utf8).split(separator: "\n").map(String.init)
        // /bin/sh itself adds PWD (and dash nothing else); everything else must be what settle chose.
        XCTAssertEqual(Set(env.filter { !$0.hasPrefix("PWD=") && !$0.hasPrefix("SHLVL=") && !$0.hasPrefix("_=") && !$0.hasPrefix("OLDPWD=") }),
                       ["PATH=/usr/bin:/bin", "LANG=C.UTF-8", "TZ=UTC", "KEEP_ME=yes",
                        "SETTLE_ORDER_ID=o-7", "SETTLE_IDEMPOTENCY_KEY=42", "SETTLE_EXIT_ALREADY_GRANTED=80"])
    }

    func testHookEnvironment_withoutAPathInSettles_getsASafeDefault() {
        let hook = CommandHook(arguments: ["/bin/true"], timeoutSeconds: 5, products: [:], baseEnvironment: [:])
        XCTAssertEqual(hook.environment(orderId: "o", idempotencyKey: "k"),
                       ["PATH": CommandHook.defaultPath, "SETTLE_ORDER_ID": "o", "SETTLE_IDEMPOTENCY_KEY": "k",
                        "SETTLE_EXIT_ALREADY_GRANTED": "80"])
    }
}
