import Foundation
import SettleApp
import XCTest

/// Output whose reader went away (`settle demo | head -4`, `settle reconcile | true`, journald
/// restarting) ends settle's printing, never its work.
final class ClosedPipeTests: EndToEndTestCase {
    /// Runs settle with stdout (and stderr, when `closeStderr`) into a pipe whose reader is
    /// already gone, and returns how it ended.
    func runWithReaderGone(_ arguments: [String], environment: [String: String] = [:], closeStderr: Bool,
                           workingDirectory: String) throws -> (status: Int32, killedBySignal: Bool, stderr: String) {
        let process = Process()
        process.executableURL = SettleBinary.url
        process.arguments = arguments
        process.environment = SettleBinary.environment(environment)
        process.currentDirectoryURL = URL(fileURLWithPath: workingDirectory)
        let closed = Pipe()
        let errPath = world.folder + "/closed-pipe-\(UUID().uuidString).err"
        _ = FileManager.default.createFile(atPath: errPath, contents: nil)
        process.standardOutput = closed
        process.standardError = closeStderr ? closed : try FileHandle(forWritingTo: URL(fileURLWithPath: errPath))
        process.standardInput = FileHandle.nullDevice
        try process.run()
        try closed.fileHandleForReading.close()
        try closed.fileHandleForWriting.close()
        process.waitUntilExit()
        return (process.terminationStatus, process.terminationReason == .uncaughtSignal,
                (try? String(contentsOfFile: errPath, encoding: .utf8)) ?? "")
    }

    func testDemo_withStdoutClosed_exitsWithoutACrash_andLeavesNoFolderBehind() throws {
        let tmp = world.folder + "/tmp"
        try FileManager.default.createDirectory(atPath: tmp, withIntermediateDirectories: false)
        let ended = try runWithReaderGone(["demo"], environment: ["TMPDIR": tmp], closeStderr: false, workingDirectory: tmp)
        XCTAssertFalse(ended.killedBySignal, "settle demo died of signal \(ended.status); stderr: \(ended.stderr)")
        XCTAssertEqual(ended.status, 0, ended.stderr)
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: tmp), [], "the demo's folder (key, secret) was left behind")
    }

    func testReconcile_withStdoutAndStderrClosed_stillFinishesItsOrders() throws {
        try enqueueValid("o-1", transaction: "100")
        try enqueueForged("o-2")
        let ended = try runWithReaderGone(["reconcile", "--config", world.configPath], closeStderr: true,
                                          workingDirectory: world.folder)
        XCTAssertFalse(ended.killedBySignal, "settle reconcile died of signal \(ended.status)")
        XCTAssertEqual(ended.status, 0)
        XCTAssertEqual(try state("o-1"), "finished")
        XCTAssertEqual(try state("o-2"), "rejected")
        XCTAssertEqual(world.deliveries, ["100 o-1"])
    }
}
