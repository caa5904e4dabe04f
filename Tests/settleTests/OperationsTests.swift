import Foundation
import SettleApp
import XCTest

/// What an SRE configures and watches: log levels, one-shot metrics, history retention.
final class OperationsTests: EndToEndTestCase {
    func testOneShotReconcile_writesTheMetricsFileLabelledWithTheBundleId() throws {
        let metricsPath = world.folder + "/settle.prom"
        try world.writeConfig(overrides: [("metrics_file", .string(metricsPath))])
        try enqueueValid("o-1", transaction: "2000000000000001")
        try settle(expecting: 0, ["reconcile"])
        let text = try String(contentsOfFile: metricsPath, encoding: .utf8)
        XCTAssertTrue(text.contains("settle_orders{bundle_id=\"com.example.game\",state=\"finished\"} 1"), text)
        XCTAssertTrue(text.contains("settle_deliveries_total{bundle_id=\"com.example.game\",result=\"delivered\"} 1"), text)
        XCTAssertFalse(text.contains("settle_last_pass_timestamp_seconds{bundle_id=\"com.example.game\"} 0"), text)
    }

    /// A hook that runs past its timeout is counted as `result="timeout"` (issue 36), and every
    /// hook call's duration lands in `settle_hook_duration_seconds`.
    func testHookTimeout_isCountedAsATimeout_andHookDurationsAreAHistogram() throws {
        let metricsPath = world.folder + "/settle.prom"
        let slow = try world.hook("slow.sh", exit: 0, extra: "sleep 5")
        try world.writeConfig(hook: slow, hookTimeout: 1, overrides: [("metrics_file", .string(metricsPath))])
        try enqueueValid("o-1", transaction: "2000000000000001")
        try settle(["reconcile"])
        let text = try String(contentsOfFile: metricsPath, encoding: .utf8)
        let app = "bundle_id=\"com.example.game\""
        XCTAssertTrue(text.contains("settle_deliveries_total{\(app),result=\"timeout\"} 1"), text)
        XCTAssertTrue(text.contains("settle_deliveries_total{\(app),result=\"retry\"} 0"), "a timeout is not counted twice: \(text)")
        XCTAssertTrue(text.contains("# TYPE settle_hook_duration_seconds histogram"), text)
        XCTAssertTrue(text.contains("settle_hook_duration_seconds_count{\(app)} 1"), text)
        XCTAssertTrue(text.contains("settle_hook_duration_seconds_bucket{\(app),le=\"0.5\"} 0"), "it ran about a second: \(text)")
        XCTAssertTrue(text.contains("settle_hook_duration_seconds_bucket{\(app),le=\"+Inf\"} 1"), text)
        // The history names it, and settle status's hook line counts it (issue 36's health at a glance).
        XCTAssertEqual(try history("o-1").last { $0["kind"]?.looseString == "delivery" }?["outcome"]?.looseString, "timed_out")
        let status = try settle(expecting: 0, ["status"]).stdout
        let hookLine = status.split(separator: "\n").first { $0.hasPrefix("hook: ") }.map(String.init) ?? ""
        XCTAssertTrue(hookLine.hasPrefix("hook: 1 call in the last 15 min, 1 failed (1 timed out); last failure "), status)
        XCTAssertTrue(hookLine.contains(" on o-1: hook ran past its 1 s timeout"), hookLine)
        XCTAssertTrue(hookLine.hasSuffix("; none running now"), hookLine)
        let json = try statusJSON([])
        XCTAssertEqual(json["hook"]?["timeouts"], .number(1))
        XCTAssertEqual(json["hook"]?["last_failure"]?["outcome"]?.looseString, "timed_out")
    }

    func testLogLevel_warningHidesInfoEvents_andRejectionsAreLoggedAtWarningUnderTheirOwnName() throws {
        try world.writeConfig(overrides: [("log_level", .string("warning"))])
        try enqueueValid("o-1", transaction: "2000000000000001")
        try enqueueForged("o-2")
        let pass = try settle(expecting: 0, ["reconcile"])
        XCTAssertFalse(pass.stderr.contains(" info "), pass.stderr)
        XCTAssertTrue(lines(pass.stderr).contains { $0.contains(" warning order.rejected ") && $0.contains("order=o-2") }, pass.stderr)
    }

    func testLogLevel_unknown_isAConfigurationErrorNamingTheChoices() throws {
        try world.writeConfig(overrides: [("log_level", .string("verbose"))])
        let result = try settle(["check-config"])
        XCTAssertEqual(result.status, 78)
        XCTAssertTrue(result.stderr.contains("log_level: \"verbose\" is not one of \"debug\", \"info\", \"warning\", \"error\""), result.stderr)
    }

    func testHistoryRetention_prunesOldHistoryOfEndedOrders_butNeverOrdersGrantsOrOpenOrders() throws {
        try world.writeConfig(overrides: [("retention", .object([("history_days", .number(30))]))])
        try enqueueValid("o-1", transaction: "2000000000000001")
        try settle(expecting: 0, ["reconcile"])
        try enqueueForged("o-2")
        try world.hook("grant.sh", exit: 0, extra: "exit 65")
        try enqueueValid("o-3", transaction: "2000000000000003")
        try settle(expecting: 0, ["reconcile"])
        XCTAssertEqual(try state("o-3"), "needs_attention")
        // 31 days later, in-process with the test clock (the ledger's times are the real clock's).
        world.time.advance(by: 31 * 86400)
        let ledger = try world.ledger()
        let pruned = try ledger.pruneHistory(olderThanDays: 30)
        XCTAssertGreaterThan(pruned, 0)
        try ledger.close()
        XCTAssertEqual(try history("o-1"), [])
        XCTAssertEqual(try history("o-2"), [])
        XCTAssertFalse(try history("o-3").isEmpty, "an order still needing a person keeps its story")
        XCTAssertEqual(try ledgerRows(["grants"])["grants"]?.count, 2, "grants are never pruned")
        XCTAssertEqual(try state("o-1"), "finished")
    }

    func testHistoryRetention_runsAtTheStartOfEveryPass() throws {
        try enqueueValid("o-1", transaction: "2000000000000001")
        try settle(expecting: 0, ["reconcile"])
        world.time.advance(by: 2 * 86400)
        try world.writeConfig(overrides: [("retention", .object([("history_days", .number(1))]))])
        let reconciler = try world.reconciler(ledger: try world.ledger())
        _ = try reconciler.runPass()
        XCTAssertEqual(try history("o-1"), [])
    }
}
