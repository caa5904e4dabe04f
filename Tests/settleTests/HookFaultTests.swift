import Foundation
import SettleApp
import SettleTesting
import XCTest

/// A delivery hook that cannot start is a configuration fault, like a wrong shared secret:
/// no attempt is used, the pass stops with 78, and status names it.
final class HookFaultTests: EndToEndTestCase {
    func assertConfigurationFault(hook: String, file: StaticString = #filePath, line: UInt = #line) throws {
        try world.writeConfig(hook: hook)
        try enqueueValid("o-1", transaction: "100", file: file, line: line)
        try enqueueValid("o-2", transaction: "200", file: file, line: line)
        let result = try settle(["reconcile"])
        XCTAssertEqual(result.status, 78, "stdout: \(result.stdout)\nstderr: \(result.stderr)", file: file, line: line)
        XCTAssertTrue(result.stderr.contains("hook could not start"), result.stderr, file: file, line: line)
        for id in ["o-1", "o-2"] {
            let order = try order(id, file: file, line: line)
            XCTAssertEqual(order["state"], .string("pending"), id, file: file, line: line)
            XCTAssertEqual(order["attempts"], .number(0), "\(id) used an attempt", file: file, line: line)
        }
        let apple = try statusJSON(file: file, line: line)["apple"]
        XCTAssertTrue(apple?["last_error"]?.looseString?.contains("hook could not start") == true,
                      "status does not name the fault: \(String(describing: apple))", file: file, line: line)
        // Issue 36, bug 4: a store whose orders never reached the hook is not blamed, and the
        // verdict says only an operator gets past it.
        let play = try statusJSON(file: file, line: line)["health"]?["google_play"]
        XCTAssertEqual(play?["last_error"], .null, "google_play is not at fault: \(String(describing: play))", file: file, line: line)
        let text = try settle(expecting: 0, ["status", "o-1"]).stdout
        XCTAssertTrue(text.contains("fix the delivery hook"), text, file: file, line: line)
        XCTAssertFalse(text.contains("settle tries again"), text, file: file, line: line)
    }

    func testReconcile_withAMissingHook_exits78_usesNoAttempt_andStatusNamesIt() throws {
        try assertConfigurationFault(hook: world.folder + "/no-such-hook.sh")
    }

    func testReconcile_withAHookThatIsADirectory_orNotExecutable_exits78() throws {
        try FileManager.default.createDirectory(atPath: world.folder + "/hook.d", withIntermediateDirectories: false)
        try assertConfigurationFault(hook: world.folder + "/hook.d")
    }

    func testReconcile_withANonExecutableHook_exits78() throws {
        try assertConfigurationFault(hook: try world.write("plain.sh", "#!/bin/sh\nexit 0\n", mode: 0o644))
    }

    func testReconcile_afterTheHookIsFixed_grantsTheOrder() throws {
        try assertConfigurationFault(hook: world.folder + "/later.sh")
        try world.hook("later.sh", exit: 0)
        try settle(expecting: 0, ["reconcile", "--order", "o-1"])
        XCTAssertEqual(try state("o-1"), "finished")
        XCTAssertEqual(try attempts("o-1"), 0)
    }

    func testCheckConfig_refusesADirectoryOrANonExecutableFileAsTheHook_andDevNullAsTheLedger() throws {
        try FileManager.default.createDirectory(atPath: world.folder + "/hook.d", withIntermediateDirectories: false)
        try world.writeConfig(hook: world.folder + "/hook.d")
        XCTAssertTrue(try settle(expecting: 78, ["check-config"]).stderr.contains("is not an executable file"))
        try world.writeConfig(hook: try world.write("plain.sh", "#!/bin/sh\nexit 0\n", mode: 0o644))
        XCTAssertTrue(try settle(expecting: 78, ["check-config"]).stderr.contains("is not an executable file"))
        try world.hook("grant.sh", exit: 0)
        try world.writeConfig(overrides: [("ledger", .string("/dev/null"))])
        XCTAssertTrue(try settle(expecting: 78, ["check-config"]).stderr.contains("is not a regular file"))
        try world.writeConfig()
        try settle(expecting: 0, ["check-config"])
    }
}
