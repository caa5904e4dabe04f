import Foundation
import XCTest
import SettleBase
import SettleLedger
import SettleTesting
#if canImport(Glibc)
import Glibc
#endif

/// `settle status --check` (issue 36, health at a glance): OK and exit 0 only while a daemon
/// passes on schedule and no store's breaker is open; otherwise each thing wrong, exit 69.
final class StatusCheckTests: EndToEndTestCase {
    var daemon: SettleBinary.Running?

    override func tearDownWithError() throws {
        if let daemon, daemon.isRunning {
            daemon.send(SIGKILL)
            _ = daemon.wait()
        }
        try super.tearDownWithError()
    }

    func testCheck_saysWhatIsWrong_andExits69_untilEverythingIsWell() throws {
        let never = try settle(["status", "--check"])
        XCTAssertNotEqual(never.status, 0)
        XCTAssertTrue(never.stderr.contains("no ledger at"), never.stderr)
        try settle(expecting: 0, ["migrate"])
        let idle = try settle(["status", "--check"])
        XCTAssertEqual(idle.status, 69)
        XCTAssertTrue(idle.stderr.contains("daemon: not running"), idle.stderr)

        try world.writeConfig(schedule: [("interval_seconds", .number(3600))])
        let daemon = try SettleBinary.start(["run", "--config", world.configPath], outputFolder: world.folder)
        self.daemon = daemon
        XCTAssertTrue(eventually(within: 20) {
            ((try? String(contentsOfFile: daemon.stderrPath, encoding: .utf8)) ?? "").contains("pass.finished")
        })
        let well = try settle(["status", "--check"])
        XCTAssertEqual(well.status, 0, well.stderr)
        XCTAssertTrue(well.stdout.hasPrefix("OK"), well.stdout)

        // The App Store's breaker opens (Apple down): named, with its next probe and why.
        let now = Int64(Date().timeIntervalSince1970)
        try world.ledger().writing { db in
            try db.query("""
                UPDATE store_breakers SET state = 'open', retry_at = ?, consecutive_failures = 5, cooldown_seconds = 60,
                       last_error = 'Apple verifyReceipt answered HTTP 503' WHERE store = 'app_store'
                """, [.integer(now + 600)])
        }
        let open = try settle(["status", "--check"])
        XCTAssertEqual(open.status, 69)
        XCTAssertTrue(open.stderr.contains("apple: breaker open (next probe at") && open.stderr.contains("HTTP 503"), open.stderr)
        XCTAssertFalse(open.stderr.contains("daemon:"), "the daemon passes on schedule: \(open.stderr)")

        // The daemon's last pass is far behind its schedule (a hung pass, a stopped timer).
        try world.ledger().writing { db in
            try db.query("UPDATE store_breakers SET state = 'closed', retry_at = NULL, consecutive_failures = 0")
            try db.query("UPDATE daemon SET last_pass_at = ? WHERE id = 1", [.integer(now - 4 * 3600 - 120)])
        }
        let late = try settle(["status", "--check"])
        XCTAssertEqual(late.status, 69)
        XCTAssertTrue(late.stderr.contains("daemon: the last pass ended 4h2m ago; passes run every 3600 s"), late.stderr)
    }
}
