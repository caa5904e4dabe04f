import SettleTesting
import XCTest
@testable import SettleApp
@testable import SettleModel
@testable import SettleLedger
@testable import SettleDelivery

/// The example delivery hook printed in docs/backend.md ("The delivery hook"), run for real against PostgreSQL: it grants
/// once per key, answers "already granted" (80) the second time, treats a quote in a user id as
/// data, and asks to try again later (75) only when the database is down.
final class ReadmeHookTests: XCTestCase {
    struct MissingExample: Error, CustomStringConvertible {
        var description: String { "docs/backend.md no longer holds the example hook (#!/bin/sh, # /usr/local/bin/grant-goods ...)" }
    }

    func readmeHook(in world: TestWorld) throws -> String {
        let readme = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
            .appendingPathComponent("../../../docs/backend.md").standardized.path
        let text = try String(contentsOfFile: readme, encoding: .utf8)
        guard let start = text.range(of: "#!/bin/sh\n# /usr/local/bin/grant-goods"),
              let end = text.range(of: "\n```", range: start.upperBound..<text.endIndex) else {
            throw MissingExample()
        }
        return try world.write("grant-goods", String(text[start.lowerBound..<end.lowerBound]) + "\n", mode: 0o755)
    }

    func testTheREADMEsExampleHook_grantsOnce_answers80TheSecondTime_andTakesAQuoteAsData() throws {
        XCTAssertTrue(FileManager.default.isExecutableFile(atPath: "/usr/bin/psql"), "psql comes with Debian's postgresql (apt-get install postgresql)")
        let world = try TestWorld()
        let (url, schema) = try TestPostgres.freshSchema()
        defer { TestPostgres.drop(schema: schema) }
        let database = try PostgresConnection(url: url)
        defer { database.close() }
        try database.execute("CREATE TABLE grants (idempotency_key text PRIMARY KEY, user_id text NOT NULL, payload jsonb NOT NULL)")
        let path = ProcessInfo.processInfo.environment["PATH"] ?? CommandHook.defaultPath
        let hook = CommandHook(arguments: [try readmeHook(in: world)], timeoutSeconds: 20, products: [:],
                               baseEnvironment: ["GAME_DB": url, "PATH": path], passedThrough: ["GAME_DB"])
        let user = "o'brien'); DROP TABLE grants; --"
        let purchase = VerifiedPurchase(transactionId: "2000000000000901", originalTransactionId: "2000000000000901", productId: "coins",
                                        environment: "Production", quantity: 1, purchaseDateMs: nil, expiresDateMs: nil)
        let order = Order(orderId: "o-1", userId: user, productId: "coins", requestedTransactionId: nil, receiptSHA256: nil,
                          signedTransaction: nil, state: .delivering, attempts: 0, nextAttemptAt: 0, reason: nil, lastError: nil,
                          environment: nil, verified: purchase, createdAt: 0, updatedAt: 0, finishedAt: nil, lease: nil)
        let first = hook.deliver(order: order, purchase: purchase)
        XCTAssertEqual(first.outcome, .delivered, first.output)
        let second = hook.deliver(order: order, purchase: purchase)
        guard case .alreadyGranted = second.outcome else { return XCTFail("\(second.outcome): \(second.output)") }
        let rows = try database.query("SELECT idempotency_key, user_id FROM grants")
        XCTAssertEqual(rows.count, 1, "granted once, and the table is still there")
        XCTAssertEqual(rows.first?.string("user_id"), user, "the quote is data")

        let down = CommandHook(arguments: hook.arguments, timeoutSeconds: 20, products: [:],
                               baseEnvironment: ["GAME_DB": "postgresql://settle@127.0.0.1:9/none?connect_timeout=2", "PATH": path],
                               passedThrough: ["GAME_DB"])
        XCTAssertEqual(down.deliver(order: order, purchase: purchase).exitCode, 75, "a database that is down: try again later")
    }

    func testTheREADMEsExampleHook_refusesAnEventItDoesNotKnow_andGrantsNothing() throws {
        let world = try TestWorld()
        let (url, schema) = try TestPostgres.freshSchema()
        defer { TestPostgres.drop(schema: schema) }
        let database = try PostgresConnection(url: url)
        defer { database.close() }
        try database.execute("CREATE TABLE grants (idempotency_key text PRIMARY KEY, user_id text NOT NULL, payload jsonb NOT NULL)")
        let path = ProcessInfo.processInfo.environment["PATH"] ?? CommandHook.defaultPath
        let hook = CommandHook(arguments: [try readmeHook(in: world)], timeoutSeconds: 20, products: [:],
                               baseEnvironment: ["GAME_DB": url, "PATH": path], passedThrough: ["GAME_DB"])
        let purchase = VerifiedPurchase(transactionId: "2000000000000902", originalTransactionId: "2000000000000902", productId: "coins",
                                        environment: "Production", quantity: 1, purchaseDateMs: nil, expiresDateMs: nil)
        let order = Order(orderId: "o-2", userId: "u-2", productId: "coins", requestedTransactionId: nil, receiptSHA256: nil,
                          signedTransaction: nil, state: .finished, attempts: 0, nextAttemptAt: 0, reason: nil, lastError: nil,
                          environment: nil, verified: purchase, createdAt: 0, updatedAt: 0, finishedAt: nil, lease: nil)
        let revoke = RevokeHook.command(hook).revoke(order: order, transactionId: purchase.transactionId)
        XCTAssertEqual(revoke.exitCode, 65, revoke.output)
        XCTAssertEqual(try database.query("SELECT idempotency_key FROM grants").count, 0, "a revoke is never granted")
        XCTAssertEqual(hook.deliver(order: order, purchase: purchase).outcome, .delivered, "a grant still is")
    }
}
