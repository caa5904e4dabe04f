import Foundation
import SettleTesting
import XCTest
#if canImport(Glibc)
import Glibc
#endif

/// `settle simulator --init DIR`: a backend developer's first day starts from a folder that
/// works. The commands it prints are run as printed, through a shell.
final class SimulatorInitTests: EndToEndTestCase {
    func testInit_writesASetup_whosePrintedCommandsSettleBothPurchases() throws {
        let port = try ShellLines.freePortPair()
        let made = try settleWithoutConfig(["simulator", "--init", "sim", "--listen", "127.0.0.1:\(port)"])
        XCTAssertEqual(made.status, 0, made.stderr)
        let sim = world.folder + "/sim"
        XCTAssertEqual(try mode(sim), 0o700)
        for secret in ["shared-secret", "appstore-key.p8", "play-service-account.json", "play-token.txt"] {
            XCTAssertEqual(try mode(sim + "/" + secret), 0o600, secret)
        }
        XCTAssertTrue(FileManager.default.isExecutableFile(atPath: sim + "/hook.sh"))
        XCTAssertTrue(FileManager.default.fileExists(atPath: sim + "/sim-root.pem"))
        let settleJSON = try String(contentsOfFile: sim + "/settle.json", encoding: .utf8)
        XCTAssertTrue(settleJSON.contains("http://127.0.0.1:\(port)/production/verifyReceipt"), settleJSON)
        XCTAssertTrue(settleJSON.contains("\"api_url\": \"http://127.0.0.1:\(port + 1)\""), settleJSON)
        for secret in ["shared-secret", "play-token.txt"] {
            let value = try String(contentsOfFile: sim + "/" + secret, encoding: .utf8)
                .trimmingCharacters(in: .whitespacesAndNewlines)
            XCTAssertFalse(made.stdout.contains(value), "\(secret)'s value is never printed")
        }

        let lines = made.stdout.split(separator: "\n").map { $0.trimmingCharacters(in: .whitespaces) }
        guard let serve = lines.first(where: { $0.hasPrefix("settle simulator --listen") }) else {
            return XCTFail("no simulator line: \(made.stdout)")
        }
        XCTAssertEqual(serve,
                       "settle simulator --listen 127.0.0.1:\(port) --config sim/settle.json --script sim/plans.json")
        let simulator = try ShellLines.start(serve, in: world.folder)
        defer { if simulator.isRunning { simulator.send(SIGKILL); _ = simulator.wait() } }
        var banner = ""
        XCTAssertTrue(eventually(within: 20) {
            banner = (try? String(contentsOfFile: simulator.stdoutPath, encoding: .utf8)) ?? ""
            return banner.contains("google_play.api_url")
        }, banner)
        XCTAssertTrue(banner.contains("google_play.api_url: http://127.0.0.1:\(port + 1)\n"),
                      "the next port up: \(banner)")

        let enqueues = lines.filter { $0.hasPrefix("settle enqueue") }
        XCTAssertEqual(enqueues.count, 2, made.stdout)
        XCTAssertTrue(enqueues.contains { $0.contains("--receipt-file sim/receipt.b64") }, made.stdout)
        XCTAssertTrue(enqueues.contains { $0.contains("--store google_play") }, made.stdout)
        for line in enqueues + lines.filter({ $0.hasPrefix("settle reconcile") }) {
            let result = try ShellLines.run(line, in: world.folder)
            XCTAssertEqual(result.status, 0, "\(line)\n\(result.stdout)\n\(result.stderr)")
        }
        let statuses = lines.filter { $0.hasPrefix("settle status") }
        XCTAssertEqual(statuses.count, 2, made.stdout)
        for line in statuses {
            let shown = try ShellLines.run(line, in: world.folder)
            XCTAssertEqual(shown.status, 0, shown.stderr)
            let order = try XCTUnwrap(line.split(separator: " ").last).description
            XCTAssertTrue(shown.stdout.contains(order), shown.stdout)
            let finished = shown.stdout.split(separator: "\n")
                .contains { $0.hasPrefix("state:") && $0.hasSuffix(" finished") }
            XCTAssertTrue(finished, "\(line)\n\(shown.stdout)")
        }
        let grants = try String(contentsOfFile: sim + "/grants.jsonl", encoding: .utf8).split(separator: "\n")
        XCTAssertEqual(grants.count, 2, grants.joined(separator: "\n"))
        XCTAssertTrue(grants.contains {
            $0.contains(#""order_id":"o-1001""#) && $0.contains(#""idempotency_key":"1000000000000001""#)
        })
        XCTAssertTrue(grants.contains {
            $0.contains(#""order_id":"o-1002""#) && $0.contains(#""store":"google_play""#)
        })

        simulator.send(SIGTERM)
        let ended = simulator.wait()
        XCTAssertEqual(ended.status, 0, ended.stderr)
    }

    /// A file or symlink planted by any of its names (or the ledger's) stops it before it writes
    /// anything, naming them; the symlink's target is never touched.
    func testInit_refusesPlantedFilesAndSymlinks_writingNothing() throws {
        let sim = world.folder + "/planted"
        try FileManager.default.createDirectory(atPath: sim, withIntermediateDirectories: false)
        let target = try world.write("victim.txt", "keep me\n", mode: 0o644)
        XCTAssertEqual(symlink(target, sim + "/shared-secret"), 0)
        FileManager.default.createFile(atPath: sim + "/ledger.sqlite3", contents: Data("old".utf8))
        let refused = try settleWithoutConfig(["simulator", "--init", sim])
        XCTAssertEqual(refused.status, 74, refused.stderr)
        XCTAssertTrue(refused.stderr.contains("already holds shared-secret, ledger.sqlite3"), refused.stderr)
        XCTAssertEqual(try String(contentsOfFile: target, encoding: .utf8), "keep me\n")
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: sim).sorted(),
                       ["ledger.sqlite3", "shared-secret"])
    }

    /// A folder others may write in could have its hook swapped after the fact: refused.
    func testInit_refusesAFolderOthersMayWriteIn() throws {
        let shared = world.folder + "/shared"
        try FileManager.default.createDirectory(atPath: shared, withIntermediateDirectories: false)
        XCTAssertEqual(chmod(shared, 0o777), 0)
        let refused = try settleWithoutConfig(["simulator", "--init", shared])
        XCTAssertEqual(refused.status, 74, refused.stderr)
        XCTAssertTrue(refused.stderr.contains("is not yours alone"), refused.stderr)
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: shared), [])
    }

    func testInit_needsAFixedLoopbackPort_andNothingElseToServe() throws {
        for listen in ["127.0.0.1:0", "0.0.0.0:8700"] {
            let refused = try settleWithoutConfig(["simulator", "--init", "sim", "--listen", listen])
            XCTAssertEqual(refused.status, 64, refused.stderr)
        }
        let mixed = try settleWithoutConfig(["simulator", "--init", "sim", "--script", "plans.json"])
        XCTAssertEqual(mixed.status, 64, mixed.stderr)
        XCTAssertFalse(FileManager.default.fileExists(atPath: world.folder + "/sim"))
    }

    /// The example hook keeps the contract and never evaluates what it is sent.
    func testExampleHook_grantsOnce_refusesOtherEvents_neverEvaluatesItsInput() throws {
        let port = try ShellLines.freePortPair()
        let made = try settleWithoutConfig(["simulator", "--init", "sim", "--listen", "127.0.0.1:\(port)"])
        XCTAssertEqual(made.status, 0, made.stderr)
        let hook = world.folder + "/sim/hook.sh", marker = world.folder + "/evaluated"
        let hostile = #"{"event":"grant","user_id":"$(touch \#(marker))`touch \#(marker)`","idempotency_key":"k-1"}"#
        XCTAssertEqual(try runHook(hook, hostile, key: "k-1").status, 0)
        XCTAssertEqual(try runHook(hook, hostile, key: "k-1").status, 80, "the same key again: already granted")
        XCTAssertEqual(try runHook(hook, #"{"event":"revoke","idempotency_key":"k-2"}"#, key: "k-2").status, 65)
        let keyed = try runHook(hook, #"{"event":"grant","idempotency_key":"$(touch x)"}"#, key: "$(touch \(marker))")
        XCTAssertEqual(keyed.status, 0)
        XCTAssertFalse(FileManager.default.fileExists(atPath: marker), "the hook evaluated its input")
        let grants = try String(contentsOfFile: world.folder + "/sim/grants.jsonl", encoding: .utf8)
        XCTAssertEqual(grants.split(separator: "\n").count, 2)
        XCTAssertTrue(grants.hasPrefix(hostile + "\n"), grants)
    }

    private func runHook(_ hook: String, _ payload: String, key: String) throws -> SettleBinary.Result {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: hook)
        process.environment = ["PATH": "/usr/bin:/bin", "SETTLE_IDEMPOTENCY_KEY": key,
                               "SETTLE_EXIT_ALREADY_GRANTED": "80"]
        let input = Pipe(), output = Pipe()
        process.standardInput = input
        process.standardOutput = output
        process.standardError = output
        try process.run()
        input.fileHandleForWriting.write(Data((payload + "\n").utf8))
        try input.fileHandleForWriting.close()
        let said = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        return SettleBinary.Result(status: process.terminationStatus, stdout: said, stderr: "")
    }

    private func mode(_ path: String) throws -> Int {
        var info = stat()
        guard lstat(path, &info) == 0 else { throw POSIXError(.ENOENT) }
        return Int(info.st_mode & 0o7777)
    }
}
