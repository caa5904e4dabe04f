import Foundation
import SettleBase
import SettleTesting
import XCTest

/// Every server the `settle` binary starts listens on exactly the address configured, on fixed
/// ports as an operator configures them, checked in the kernel's own table. `.ci/run` runs these
/// against the release binary too (`SETTLE_TEST_BINARY`): the fault they guard was a release-only
/// one (the listener on 0.0.0.0 at a random port).
final class ListenerBindingTests: NotificationTestCase {
    func testSettleRun_onAFixedIPv4Port_listensOnExactlyThatAddress_andLogsWhatTheKernelBound() throws {
        try checkDaemonListens(on: "127.0.0.1")
    }

    func testSettleRun_onAFixedIPv6LoopbackPort_listensOnExactlyThatAddress() throws {
        try checkDaemonListens(on: "[::1]")
    }

    func testSettleRun_whoseAddressIsTaken_refusesToStart_namingTheAddress() throws {
        let port = try KernelListeners.freePort()
        let holder = try LoopbackHTTPServer(port: UInt16(port)) { _ in HTTPServerResponse(status: 200) }
        defer { holder.stop() }
        try writeNotificationConfig(extra: [("notifications", .object([("listen", .string("127.0.0.1:\(port)"))]))])
        // Started, not run to completion: a daemon that wrongly listens elsewhere never exits.
        let daemon = try SettleBinary.start(["run", "--config", world.configPath], outputFolder: world.folder)
        daemons.append(daemon)
        XCTAssertTrue(eventually(within: 20) { !daemon.isRunning }, "settle run started although its address is taken: \(log(daemon))")
        guard !daemon.isRunning else { return }
        let result = daemon.wait()
        XCTAssertEqual(result.status, 69, result.stderr)
        XCTAssertTrue(result.stderr.contains("cannot listen on 127.0.0.1:\(port)"), result.stderr)
    }

    func testSimulator_onAFixedPort_listensOn127001Only_andSoDoesItsGooglePlay() throws {
        // A port found free may be taken before the simulator binds it (another process's
        // outgoing connection draws from the same range): then it exits at once, and another
        // free port is tried. Any other early exit fails the test with what it said.
        var port = 0
        var simulator: SettleBinary.Running?
        var out = ""
        for _ in 0..<3 {
            port = try KernelListeners.freePort()
            let started = try SettleBinary.start(["simulator", "--listen", "127.0.0.1:\(port)", "--google-key", world.folder + "/sa.json"],
                                                 outputFolder: world.folder)
            simulator = started
            XCTAssertTrue(eventually(within: 20) {
                out = (try? String(contentsOfFile: started.stdoutPath, encoding: .utf8)) ?? ""
                return (out.contains("scripted:") && out.contains("google_play")) || !started.isRunning
            }, out + ((try? String(contentsOfFile: started.stderrPath, encoding: .utf8)) ?? ""))
            let said = (try? String(contentsOfFile: started.stderrPath, encoding: .utf8)) ?? ""
            guard !started.isRunning, said.contains("in use") else { break }
        }
        guard let simulator else { return XCTFail("the simulator did not start") }
        defer { if simulator.isRunning { simulator.send(SIGKILL); _ = simulator.wait() } }
        XCTAssertTrue(simulator.isRunning, (try? String(contentsOfFile: simulator.stderrPath, encoding: .utf8)) ?? "")
        XCTAssertTrue(out.hasPrefix("settle simulator listening on http://127.0.0.1:\(port)\n"), out)
        XCTAssertEqual(KernelListeners.addresses(onPort: port), ["127.0.0.1:\(port)"])
        let googlePorts = out.split(separator: "\n").compactMap { line -> Int? in
            guard let range = line.range(of: "http://127.0.0.1:") else { return nil }
            return Int(line[range.upperBound...].prefix { $0.isNumber })
        }.filter { $0 != port }
        XCTAssertFalse(googlePorts.isEmpty, out)
        for googlePort in Set(googlePorts) {
            XCTAssertEqual(KernelListeners.addresses(onPort: googlePort), ["127.0.0.1:\(googlePort)"], "Google Play's fake")
        }
    }

    private func checkDaemonListens(on host: String, file: StaticString = #filePath, line: UInt = #line) throws {
        let port = try KernelListeners.freePort()
        try writeNotificationConfig(extra: [("notifications", .object([("listen", .string("\(host):\(port)"))]))])
        let daemon = try SettleBinary.start(["run", "--config", world.configPath], outputFolder: world.folder)
        daemons.append(daemon)
        var listening = ""
        XCTAssertTrue(eventually(within: 20) {
            listening = log(daemon).split(separator: "\n").first { $0.contains("notifications.listening") }.map(String.init) ?? ""
            return !listening.isEmpty
        }, log(daemon), file: file, line: line)
        XCTAssertTrue(listening.contains(" address=\(host):\(port) "), listening, file: file, line: line)
        XCTAssertTrue(listening.contains(" port=\(port) "), listening, file: file, line: line)
        XCTAssertEqual(KernelListeners.addresses(onPort: port, ipv6: host.hasPrefix("[")), ["\(host):\(port)"], "the kernel's table", file: file, line: line)
        daemon.send(SIGTERM)
        XCTAssertEqual(daemon.wait().status, 0, file: file, line: line)
    }
}
