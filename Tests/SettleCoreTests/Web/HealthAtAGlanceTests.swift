import Foundation
import SettleTesting
import XCTest
@testable import SettleApp
@testable import SettleBase
@testable import SettleModel
@testable import SettleLedger

/// Issue 36, health at a glance: the hook's last 15 minutes (calls, failures, timeouts, the
/// last failure, the calls running now) in `settle status`, `--json`, the overview's card and
/// `--check`; and a banner on every console page while settle needs a person.
final class HealthAtAGlanceTests: WebConsoleTestCase {
    /// o-1 delivered, o-2 failed then timed out, o-3 a store's finish entry (not a hook call),
    /// o-4 an old failure outside the window, o-5 delivering now for 12 s.
    private func seedHookHistory(_ engine: Engine) throws {
        let now = world.time.unixSeconds
        for id in ["o-1", "o-2", "o-3", "o-4", "o-5"] { try enqueue(engine.ledger, id, user: "u-1", transaction: nil) }
        try engine.execute("""
            UPDATE orders SET updated_at = \(now - 30) WHERE order_id IN ('o-1', 'o-2', 'o-3');
            UPDATE orders SET updated_at = \(now - 3600) WHERE order_id = 'o-4';
            UPDATE orders SET state = 'delivering', updated_at = \(now - 12), lease_host = 'h', lease_pid = 1, lease_start = '1', lease_expires_at = \(now + 100),
                verified_transaction_id = '5', original_transaction_id = '5', environment = 'Production'
                WHERE order_id = 'o-5';
            INSERT INTO history(order_id, at, kind, outcome, duration_ms, detail) VALUES
                ('o-1', \(now - 40), 'delivery', 'delivered', 20, NULL),
                ('o-2', \(now - 200), 'delivery', 'failed', 30, 'hook failed (exit 1)'),
                ('o-2', \(now - 30), 'delivery', 'timed_out', 1000, 'hook ran past its 1 s timeout and was killed with its process group'),
                ('o-3', \(now - 30), 'delivery', 'acknowledged', NULL, 'told the store'),
                ('o-4', \(now - 3600), 'delivery', 'failed', 10, 'an old failure');
            """)
    }

    func testHookActivity_countsTheWindowsCalls_andTheOnesRunningNow_onBothEngines() throws {
        try onEachEngine { engine in
            try seedHookHistory(engine)
            let now = world.time.unixSeconds
            let activity = try engine.ledger.hookActivity(since: now - 900)
            XCTAssertEqual(activity.calls, 3, engine.name)
            XCTAssertEqual(activity.failures, 2, engine.name)
            XCTAssertEqual(activity.timeouts, 1, engine.name)
            XCTAssertEqual(activity.lastFailure?.orderId, "o-2", engine.name)
            XCTAssertEqual(activity.lastFailure?.outcome, "timed_out", engine.name)
            XCTAssertEqual(activity.lastOutcome, "timed_out", engine.name)
            XCTAssertEqual(activity.running, [.init(orderId: "o-5", since: now - 12)], engine.name)
            XCTAssertFalse(activity.capped, engine.name)
            // A window with more calls than a view reads says so, and counts the newest.
            let capped = try engine.ledger.hookActivity(since: now - 900, callsCap: 2)
            XCTAssertTrue(capped.capped, engine.name)
            XCTAssertEqual(capped.calls, 2, engine.name)
            let report = try StatusReport.read(engine.ledger, filter: OrderFilter(limit: 5), configuration: try world.configuration(),
                                               time: world.time, lookups: .localOnly)
            let line = report.text(now: now).split(separator: "\n").first { $0.hasPrefix("hook: ") }.map(String.init)
            XCTAssertEqual(line, "hook: 3 calls in the last 15 min, 2 failed (1 timed out); last failure 30s ago on o-2: hook ran past "
                           + "its 1 s timeout and was killed with its process group; running now: o-5 for 12s of its "
                           + "\(Int(report.hookTimeoutSeconds)) s timeout", engine.name)
            XCTAssertEqual(report.json["hook"]?["calls"], .number(3), engine.name)
            XCTAssertEqual(report.json["hook"]?["running"]?.arrayValue?.first?["order_id"], .string("o-5"), engine.name)
            // The overview's card says the same.
            let page = text(try get(try start(engine.ledger), "/"))
            XCTAssertTrue(page.contains("<section class=\"card\" id=\"hook\"><h2>Delivery hook</h2>"), engine.name)
            XCTAssertTrue(page.contains("<td class=\"num\">3</td><td class=\"num\">2</td><td class=\"num\">1</td>"), engine.name)
            XCTAssertTrue(page.contains("last failure 30s ago on <a href=\"/orders/o-2\">o-2</a> (timed_out)"), engine.name)
            XCTAssertTrue(page.contains("<td><a href=\"/orders/o-5\">o-5</a></td><td>12s</td>"), engine.name)
        }
    }

    func testAHookThatCannotStart_isAProblemForCheck_untilACallRunsAgain() throws {
        let engine = try sqlite()
        let now = world.time.unixSeconds
        try enqueue(engine.ledger, "o-1", user: "u-1", transaction: nil)
        try engine.execute("""
            UPDATE orders SET updated_at = \(now - 5) WHERE order_id = 'o-1';
            INSERT INTO history(order_id, at, kind, outcome, duration_ms, detail)
                VALUES ('o-1', \(now - 5), 'delivery', 'cannot_start', 0, 'hook could not start: /opt/grant: No such file or directory');
            """)
        try engine.ledger.recordDaemonStarted(.current)
        try engine.ledger.recordDaemonPass(.current, summary: "1 pending")
        let configuration = try world.configuration()
        var check = try StatusCheck.read(engine.ledger, configuration: configuration, now: now)
        XCTAssertEqual(check.problems, ["hook: it cannot start (hook could not start: /opt/grant: No such file or directory); run "
                                        + "settle check-config, then settle reconcile: nothing is delivered until it is fixed"])
        // The banner on every page says so, escaped.
        let base = try start(engine.ledger)
        for path in ["/", "/search", "/orders/o-1", "/nowhere"] {
            let page = text(try get(base, path))
            XCTAssertTrue(page.contains("<div class=\"banner\" id=\"health-banner\" role=\"alert\">"), path)
            XCTAssertTrue(page.contains("<li>hook: it cannot start (hook could not start: /opt/grant"), path)
        }
        // A later call that started (it failed otherwise) clears it: the fault is fixed.
        try engine.execute("""
            INSERT INTO history(order_id, at, kind, outcome, duration_ms, detail)
                VALUES ('o-1', \(now - 1), 'delivery', 'failed', 40, 'hook failed (exit 1)');
            """)
        check = try StatusCheck.read(engine.ledger, configuration: configuration, now: now)
        XCTAssertEqual(check.problems, [])
        XCTAssertFalse(text(try get(base, "/")).contains("health-banner"), "a healthy settle shows no banner")
    }

    func testAFailedReload_isAProblemAndOnTheBanner_untilAReloadWorks_onBothEngines() throws {
        try onEachEngine { engine in
            let now = world.time.unixSeconds
            try engine.ledger.recordDaemonStarted(.current)
            try engine.ledger.recordDaemonPass(.current, summary: "ok")
            let configuration = try world.configuration()
            XCTAssertEqual(try StatusCheck.read(engine.ledger, configuration: configuration, now: now).problems, [], engine.name)
            try engine.ledger.recordDaemonReload(.current, error: "settle.json: unknown key \"bogus\"")
            let problems = try StatusCheck.read(engine.ledger, configuration: configuration, now: now).problems
            XCTAssertEqual(problems, ["daemon: its last reload failed at \(Timestamp.rfc3339(unixSeconds: now)), so it runs with the "
                                      + "previous configuration: settle.json: unknown key \"bogus\"; fix it (settle check-config), then "
                                      + "reload again"], engine.name)
            XCTAssertTrue(text(try get(try start(engine.ledger), "/")).contains("<li>daemon: its last reload failed at "), engine.name)
            try engine.ledger.recordDaemonReload(.current, error: nil)
            XCTAssertEqual(try StatusCheck.read(engine.ledger, configuration: configuration, now: now).problems, [], engine.name)
        }
    }

    func testAnOpenBreaker_putsTheBannerOnEveryPage() throws {
        let engine = try sqlite()
        _ = try WebSeed(self, engine)
        let now = world.time.unixSeconds
        try engine.ledger.recordDaemonStarted(.current)
        try engine.ledger.recordDaemonPass(.current, summary: "ok")
        let base = try start(engine.ledger)
        XCTAssertFalse(text(try get(base, "/orders/o-finished")).contains("health-banner"))
        try engine.ledger.saveBreaker(StoreBreaker(state: .open, consecutiveFailures: 5, cooldownSeconds: 60, retryAt: now + 60,
                                                   lastError: "<b>HTTP 503</b>", lastErrorAt: now), of: .googlePlay)
        for path in ["/", "/orders/o-finished", "/search?q=u-1", "/notifications/\(WebSeed.notification)"] {
            let page = text(try get(base, path))
            XCTAssertTrue(page.contains("<li>google_play: breaker open (next probe at "), path)
            XCTAssertTrue(page.contains("&lt;b&gt;HTTP 503&lt;/b&gt;"), "escaped: \(path)")
        }
    }
}
