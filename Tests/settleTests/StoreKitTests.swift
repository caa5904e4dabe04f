import Foundation
import SettleApp
import SettleBase
import SettleTesting
import XCTest

/// StoreKit 2 through the binary: configuration checks, enqueue of a signed transaction,
/// and a pass against the simulated App Store Server API.
final class StoreKitTests: EndToEndTestCase {
    override func setUpWithError() throws {
        try super.setUpWithError()
        try world.writeConfig(receiptAPI: false, serverAPI: true)
    }

    func testCheckConfig_acceptsTheServerAPISection_withoutPrintingTheKey() throws {
        let result = try settle(expecting: 0, ["check-config"])
        XCTAssertTrue(result.stdout.contains("server_api.private_key_file: \(world.folder)/appstore-key.p8 (contents redacted)"), result.stdout)
        let key = try String(contentsOfFile: world.folder + "/appstore-key.p8", encoding: .utf8)
        let body = key.split(separator: "\n").filter { !$0.hasPrefix("-----") }.joined()
        XCTAssertFalse((result.stdout + result.stderr).contains(String(body.prefix(30))))
    }

    /// The server_api section with `rateLimits` as its `rate_limits`.
    func writeRateLimits(_ rateLimits: JSONValue) throws {
        let serverAPI = TestWorld.merge(world.serverAPIConfig.objectMembers ?? [], [("rate_limits", rateLimits)])
        try world.writeConfig(receiptAPI: false, serverAPI: true, overrides: [("server_api", .object(serverAPI))])
    }

    func testCheckConfig_showsApplesPublishedRateLimits_andAConfiguredOneInstead() throws {
        var result = try settle(expecting: 0, ["check-config"])
        XCTAssertTrue(result.stdout.contains("server_api.rate_limits: app_account_token 20, app_transaction_info 50, consumption 50, "
                                             + "extend_renewal_date 20, finish_transaction 50, notification_history 50, order_lookup 10, "
                                             + "refund_history 10, subscription_statuses 50, transaction_history 50, transaction_info 50 "
                                             + "(requests a second in production; sandbox at 10 %)"), result.stdout)
        try writeRateLimits(.object([("order_lookup", .number(30))]))
        result = try settle(expecting: 0, ["check-config"])
        XCTAssertTrue(result.stdout.contains("order_lookup 30 (configured), refund_history 10"), result.stdout)
    }

    func testCheckConfig_refusesABadRateLimit_namingItsKey_andExits78() throws {
        try writeRateLimits(.object([("order_lookup", .string("fast"))]))
        var result = try settle(expecting: 78, ["check-config"])
        XCTAssertTrue(result.stderr.contains("server_api.rate_limits.order_lookup: expected a number, got string"), result.stderr)
        try writeRateLimits(.object([("transaction_info", .number(0))]))
        result = try settle(expecting: 78, ["check-config"])
        XCTAssertTrue(result.stderr.contains("server_api.rate_limits.transaction_info: 0 is out of range"), result.stderr)
        try writeRateLimits(.object([("verify_receipt", .number(5))]))
        result = try settle(expecting: 78, ["check-config"])
        XCTAssertTrue(result.stderr.contains("server_api.rate_limits.verify_receipt: unknown endpoint group (expected one of app_account_token,"),
                      result.stderr)
        try writeRateLimits(.number(50))
        result = try settle(expecting: 78, ["check-config"])
        XCTAssertTrue(result.stderr.contains("server_api.rate_limits: expected an object"), result.stderr)
    }

    func testCheckConfig_refusesAKeyThatIsNotP256_aReadableKey_andABadRoot() throws {
        try world.write("appstore-key.p8", "-----BEGIN PRIVATE KEY-----\nnot a key\n-----END PRIVATE KEY-----\n", mode: 0o600)
        var result = try settle(expecting: 78, ["check-config"])
        XCTAssertTrue(result.stderr.contains("server_api.private_key_file"), result.stderr)

        try world.write("appstore-key.p8", try String(contentsOfFile: TestWorld.fixture("apple/test-chain/testSigningKey.p8"), encoding: .utf8),
                        mode: 0o644)
        result = try settle(expecting: 78, ["check-config"])
        XCTAssertTrue(result.stderr.contains("readable by group or others"), result.stderr)

        try world.write("appstore-key.p8", try String(contentsOfFile: TestWorld.fixture("apple/test-chain/testSigningKey.p8"), encoding: .utf8),
                        mode: 0o600)
        try world.write("simulator-root.pem", "not a certificate")
        result = try settle(expecting: 78, ["check-config"])
        XCTAssertTrue(result.stderr.contains("server_api.root_certificates"), result.stderr)
        try settle(expecting: 78, ["reconcile"])
    }

    func testCheckConfig_reportsTheReceiptRoots_andRefusesAMissingOneWithoutReceiptAPI() throws {
        var result = try settle(expecting: 0, ["check-config"])
        XCTAssertTrue(result.stdout.contains("server_api.receipt_root_certificates: \(world.folder)/receipt-root.pem"), result.stdout)
        XCTAssertTrue(result.stdout.contains("receipt roots loaded: "), result.stdout)

        try FileManager.default.removeItem(atPath: world.folder + "/receipt-root.pem")
        result = try settle(expecting: 78, ["check-config"])
        XCTAssertTrue(result.stderr.contains("server_api.receipt_root_certificates"), result.stderr)
        try settle(expecting: 78, ["reconcile"])

        try world.writeConfig(receiptAPI: true, serverAPI: true)
        result = try settle(expecting: 0, ["check-config"])
        XCTAssertTrue(result.stdout.contains("receipt roots not loaded (not needed"), result.stdout)
    }

    func testEnqueue_refusesASignedTransactionThatIsNotACompactJWS() throws {
        let path = try world.write("not-a-jws.txt", "eyJhbGciOiJFUzI1NiJ9.only-two")
        let result = try settle(expecting: 65, ["enqueue", "--order", "o-1", "--user", "u", "--product", world.coins,
                                                "--signed-transaction-file", path])
        XCTAssertTrue(result.stderr.contains("not a compact JWS"), result.stderr)
    }

    func testSignedTransaction_enqueuedAndReconciledThroughTheBinary_isFinished() throws {
        let transaction = world.scriptTransaction("2000000950000001")
        let path = try world.write("signed.jws", try transaction.signed(at: Int64(Date().timeIntervalSince1970) * 1000) + "\n")
        try settle(expecting: 0, ["enqueue", "--order", "o-sk2", "--user", "u-9", "--product", world.coins,
                                  "--signed-transaction-file", path])
        let token = "6f1e4c2a-5b3d-4e8f-9a0b-1c2d3e4f5a6b"
        try settle(expecting: 0, ["enqueue", "--order", "o-id", "--user", "u-9", "--product", world.coins,
                                  "--transaction", "2000000950000002", "--app-account-token", token])
        world.scriptTransaction("2000000950000002", environment: "Sandbox", appAccountToken: token)
        let result = try settle(expecting: 0, ["reconcile"])
        XCTAssertEqual(lines(result.stdout).last, "reconciled 2: 2 finished, 0 rejected, 0 retrying, 0 needs attention")
        XCTAssertEqual(try state("o-sk2"), "finished")
        XCTAssertEqual(try order("o-id")["environment"], .string("Sandbox"))
        XCTAssertEqual(Set(world.deliveries), ["2000000950000001 o-sk2", "2000000950000002 o-id"])
        XCTAssertTrue(world.simulator.serverRequests.allSatisfy { $0.tokenProblem == nil })
        XCTAssertEqual(try order("o-sk2")["proof"], .string("signed_transaction"))
    }
}
