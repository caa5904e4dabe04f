import Foundation
import SettleApp
import SettleTesting
import XCTest
import SettleAppStoreSimulator

/// When Apple as a whole fails, or refuses our shared secret, the pass stops without using up
/// any order's attempts (SPEC sections 3, 4, 7).
final class AppleFailureTests: EndToEndTestCase {
    let outage: [SimulatedAnswer] = Array(repeating: .http(503), count: 20)

    func assertUntouched(_ ids: [String], file: StaticString = #filePath, line: UInt = #line) throws {
        for id in ids {
            let order = try order(id, file: file, line: line)
            XCTAssertEqual(order["state"], .string("pending"), "\(id)", file: file, line: line)
            XCTAssertEqual(order["attempts"], .number(0), "\(id) used an attempt", file: file, line: line)
        }
        XCTAssertTrue(world.deliveries.isEmpty, "no hook may run", file: file, line: line)
    }

    func testReconcile_whenAppleAnswers503ForTheWholePass_exits69AndUsesNoAttempts() throws {
        try enqueueValid("o-1", transaction: "2000000000000001", answers: outage)
        try enqueueValid("o-2", transaction: "2000000000000002", answers: outage)
        try enqueueValid("o-3", transaction: "2000000000000003", withTransactionId: false, answers: outage)

        let result = try settle(["reconcile"])
        XCTAssertEqual(result.status, 69, "stdout: \(result.stdout)\nstderr: \(result.stderr)")
        XCTAssertFalse(result.stderr.isEmpty, "the operator is told why")
        try assertUntouched(["o-1", "o-2", "o-3"])
        XCTAssertFalse(world.simulator.requests.isEmpty, "settle did ask Apple")
    }

    func testReconcile_whenAppleIsUnreachableForTheWholePass_exits69AndUsesNoAttempts() throws {
        // A simulator that is stopped again: its port on loopback refuses connections.
        let gone = try AppleSimulator(sharedSecret: world.sharedSecret)
        let productionURL = gone.productionURL, sandboxURL = gone.sandboxURL
        gone.stop()
        try world.writeConfig(overrides: [("receipt_api", .object([
            ("production_url", .string(productionURL)),
            ("sandbox_url", .string(sandboxURL)),
            ("shared_secret_file", .string("shared-secret")),
        ]))])
        try enqueueValid("o-1", transaction: "2000000000000001")
        try enqueueValid("o-2", transaction: "2000000000000002")

        let result = try settle(["reconcile"])
        XCTAssertEqual(result.status, 69, "stdout: \(result.stdout)\nstderr: \(result.stderr)")
        try assertUntouched(["o-1", "o-2"])
    }

    func testReconcile_whenAppleSends21005ForTheWholePass_exits69AndUsesNoAttempts() throws {
        try enqueueValid("o-1", transaction: "2000000000000001", answers: Array(repeating: .status(21005), count: 5))
        let result = try settle(["reconcile"])
        XCTAssertEqual(result.status, 69, "stdout: \(result.stdout)\nstderr: \(result.stderr)")
        try assertUntouched(["o-1"])
    }

    func testReconcile_afterTheOutage_grantsTheOrders() throws {
        try enqueueValid("o-1", transaction: "2000000000000001", answers: [.http(503)])
        XCTAssertEqual(try settle(["reconcile"]).status, 69)
        // Apple is back; the order is due again once its (no-attempt) backoff passed, or at once when named.
        let result = try settle(expecting: 0, ["reconcile", "--order", "o-1"])
        XCTAssertEqual(result.stdout, "reconciled 1: 1 finished, 0 rejected, 0 retrying, 0 needs attention\n")
        XCTAssertEqual(try attempts("o-1"), 0)
        XCTAssertEqual(world.deliveries, ["2000000000000001 o-1"])
    }

    func testReconcile_withAWrongSharedSecret_exits78AndTheOrderKeepsItsAttempts() throws {
        let wrongSecret = "WRONG-0123456789abcdef0123456789abcdef"
        try world.write("shared-secret", wrongSecret, mode: 0o600)
        try enqueueValid("o-1", transaction: "2000000000000001")
        try enqueueValid("o-2", transaction: "2000000000000002")

        let result = try settle(["reconcile"])
        XCTAssertEqual(result.status, 78, "stdout: \(result.stdout)\nstderr: \(result.stderr)")
        XCTAssertTrue(result.stderr.contains("21004"), result.stderr)
        XCTAssertFalse((result.stdout + result.stderr).contains(wrongSecret), "the (wrong) secret must not be printed")
        XCTAssertTrue(world.simulator.requests.allSatisfy { !$0.passwordMatched })
        try assertUntouched(["o-1", "o-2"])
        for id in ["o-1", "o-2"] {
            XCTAssertEqual(try order(id)["reason"], .null, "\(id) must not be marked as failed")
        }
    }

    func testReconcile_whenAppleAnswers429WithRetryAfter1e22_exits69_andTheOrderIsBackToPending() throws {
        try enqueueValid("o-1", transaction: "2000000000000001", answers: Array(repeating: .http(429, retryAfter: "1e22"), count: 4))
        let result = try settle(["reconcile"])
        XCTAssertEqual(result.status, 69, "stdout: \(result.stdout)\nstderr: \(result.stderr)")
        try assertUntouched(["o-1"])
        let breaker = try statusJSON()["apple"]
        XCTAssertEqual(breaker?["breaker"], .string("open"), "\(String(describing: breaker))")
    }
}
