import Foundation
import SettleApp
import XCTest
import SettleBase
#if canImport(Glibc)
import Glibc
#endif

/// A crash or kill at any instant loses no order and never leaves one stuck: an order killed
/// while its hook ran is delivered again with the same idempotency key (SPEC sections 3, 5).
final class CrashRecoveryTests: EndToEndTestCase {
    var hookPidPath: String { world.folder + "/hook.pid" }

    override func tearDownWithError() throws {
        // Whatever happened, leave no hook (nor its `sleep`) running.
        if let world, let text = try? String(contentsOfFile: world.folder + "/hook.pid", encoding: .utf8),
           let pid = Int32(text.trimmingCharacters(in: .whitespacesAndNewlines)), pid > 1 {
            _ = kill(-pid, SIGKILL)
            _ = kill(pid, SIGKILL)
        }
        try super.tearDownWithError()
    }

    func testReconcile_killedWith9WhileTheHookRuns_nextPassDeliversAgainWithTheSameIdempotencyKey() throws {
        // The first call records itself, publishes its pid (it leads its own process group),
        // then hangs; later calls succeed at once.
        try world.hook("grant.sh", exit: 0, extra: """
            if [ ! -e "\(world.folder)/first-call" ]; then
                : > "\(world.folder)/first-call"
                cp "\(world.folder)/payload-$SETTLE_ORDER_ID.json" "\(world.folder)/first-payload.json"
                echo $$ > "\(hookPidPath).tmp" && mv "\(hookPidPath).tmp" "\(hookPidPath)"
                sleep 30
            fi
            """)
        try world.writeConfig(hookTimeout: 120)
        try enqueueValid("o-1", transaction: "2000000000000001", withTransactionId: false)

        let running = try SettleBinary.start(["reconcile", "--config", world.configPath], workingDirectory: world.folder,
                                             outputFolder: world.folder)
        let hookStarted = eventually(within: 20) { FileManager.default.fileExists(atPath: hookPidPath) || !running.isRunning }
        XCTAssertTrue(hookStarted, "the hook did not start within 20 s")
        XCTAssertTrue(running.isRunning, "settle ended before it could be killed: \(running.wait())")
        running.send(SIGKILL)
        let killed = running.wait()
        XCTAssertTrue(running.wasKilledBySignal, "settle was not killed: \(killed)")
        XCTAssertEqual(killed.status, SIGKILL)

        // Now kill the orphaned hook and its sleep, as an operator's reboot would.
        let hookPid = try XCTUnwrap(Int32(String(contentsOfFile: hookPidPath, encoding: .utf8)
            .trimmingCharacters(in: .whitespacesAndNewlines)))
        XCTAssertEqual(kill(-hookPid, SIGKILL), 0, "the hook should lead its own process group")
        _ = kill(hookPid, SIGKILL)

        XCTAssertEqual(world.deliveries, ["2000000000000001 o-1"])
        let interrupted = try order("o-1")
        XCTAssertEqual(interrupted["state"], .string("delivering"), "killed mid-delivery, the order is still delivering")
        XCTAssertEqual(interrupted["transaction_id"], .string("2000000000000001"))

        let result = try settle(expecting: 0, ["reconcile"])
        XCTAssertEqual(result.stdout, "reconciled 1: 1 finished, 0 rejected, 0 retrying, 0 needs attention\n")

        XCTAssertEqual(try state("o-1"), "finished")
        XCTAssertEqual(world.deliveries, ["2000000000000001 o-1", "2000000000000001 o-1"],
                       "the hook was called twice, both times with Apple's transaction id as the key")
        let first = try JSONValue.parse(XCTUnwrap(bytes(world.folder + "/first-payload.json")))
        let second = try JSONValue.parse(XCTUnwrap(bytes(world.folder + "/payload-o-1.json")))
        XCTAssertEqual(first, second, "the re-delivery sends the same document")
        XCTAssertEqual(second["idempotency_key"], .string("2000000000000001"))

        let entries = try history("o-1")
        XCTAssertTrue(entries.contains { $0["kind"] == .string("rescue") }, "no rescue entry in \(entries)")
        XCTAssertEqual(entries.filter { $0["kind"] == .string("verification") }.count, 1,
                       "a delivering order is not verified again after a crash")
        XCTAssertEqual(world.simulator.requests.count, 1)
        XCTAssertEqual(entries.last?["kind"], .string("delivery"))
        XCTAssertEqual(entries.last?["hook_exit"], .number(0))
    }
}
