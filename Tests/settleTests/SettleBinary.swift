import Foundation
import XCTest
#if canImport(Glibc)
import Glibc
#endif

/// Runs the built `settle` executable, as an operator would.
enum SettleBinary {
    struct Result {
        var status: Int32
        var stdout: String
        var stderr: String
    }

    /// The executable sits next to the test bundle in SwiftPM's build folder, unless
    /// `SETTLE_TEST_BINARY` names another build of it (`.ci/run` runs some tests against the
    /// release binary, whose faults the debug build can hide).
    static var url: URL {
        if let other = ProcessInfo.processInfo.environment["SETTLE_TEST_BINARY"], !other.isEmpty {
            return URL(fileURLWithPath: other)
        }
        var folder = Bundle(for: Marker.self).bundleURL
        while !FileManager.default.isExecutableFile(atPath: folder.appendingPathComponent("settle").path) && folder.path != "/" {
            folder.deleteLastPathComponent()
        }
        return folder.appendingPathComponent("settle")
    }

    private final class Marker {}

    /// The test process's environment without `SETTLE_CONFIG`, plus `environment`.
    static func environment(_ environment: [String: String]) -> [String: String] {
        var env = ProcessInfo.processInfo.environment
        env["SETTLE_CONFIG"] = nil
        for (k, v) in environment { env[k] = v }
        return env
    }

    /// Runs settle to completion with `arguments`, optional stdin and extra environment,
    /// in `workingDirectory` when given.
    static func run(_ arguments: [String], stdin: Data? = nil, environment: [String: String] = [:],
                    workingDirectory: String? = nil) throws -> Result {
        let process = Process()
        process.executableURL = url
        process.arguments = arguments
        process.environment = Self.environment(environment)
        if let workingDirectory { process.currentDirectoryURL = URL(fileURLWithPath: workingDirectory) }
        let out = Pipe(), err = Pipe(), input = Pipe()
        process.standardOutput = out
        process.standardError = err
        process.standardInput = input
        try process.run()
        if let stdin { input.fileHandleForWriting.write(stdin) }
        try input.fileHandleForWriting.close()
        // Read both pipes concurrently so a chatty child never blocks on a full pipe.
        let group = DispatchGroup()
        nonisolated(unsafe) var errData = Data()
        group.enter()
        DispatchQueue.global().async {
            errData = err.fileHandleForReading.readDataToEndOfFile()
            group.leave()
        }
        let outData = out.fileHandleForReading.readDataToEndOfFile()
        group.wait()
        process.waitUntilExit()
        return Result(status: process.terminationStatus, stdout: String(decoding: outData, as: UTF8.self),
                      stderr: String(decoding: errData, as: UTF8.self))
    }

    /// Starts settle without waiting for it. Its output goes to files in `outputFolder` (not
    /// pipes, so a process it leaves behind can never hold the test up), stdin is /dev/null.
    /// With `stderrIsJournal`, `$JOURNAL_STREAM` names the stderr file, as systemd sets it
    /// when stderr is the journal.
    static func start(_ arguments: [String], environment: [String: String] = [:], workingDirectory: String? = nil,
                      outputFolder: String, stderrIsJournal: Bool = false) throws -> Running {
        let name = "settle-\(UUID().uuidString)"
        let stdoutPath = outputFolder + "/\(name).out", stderrPath = outputFolder + "/\(name).err"
        for path in [stdoutPath, stderrPath] {
            guard FileManager.default.createFile(atPath: path, contents: nil) else { throw CocoaError(.fileWriteUnknown) }
        }
        var environment = environment
        if stderrIsJournal {
            var info = stat()
            guard stat(stderrPath, &info) == 0 else { throw CocoaError(.fileReadUnknown) }
            environment["JOURNAL_STREAM"] = "\(info.st_dev):\(info.st_ino)"
        }
        let process = Process()
        process.executableURL = url
        process.arguments = arguments
        process.environment = Self.environment(environment)
        if let workingDirectory { process.currentDirectoryURL = URL(fileURLWithPath: workingDirectory) }
        process.standardOutput = try FileHandle(forWritingTo: URL(fileURLWithPath: stdoutPath))
        process.standardError = try FileHandle(forWritingTo: URL(fileURLWithPath: stderrPath))
        process.standardInput = FileHandle.nullDevice
        try process.run()
        return Running(process: process, stdoutPath: stdoutPath, stderrPath: stderrPath)
    }

    /// A settle process started with `start`.
    final class Running: @unchecked Sendable {
        let process: Process
        let stdoutPath: String
        let stderrPath: String

        init(process: Process, stdoutPath: String, stderrPath: String) {
            self.process = process
            self.stdoutPath = stdoutPath
            self.stderrPath = stderrPath
        }

        var pid: Int32 { process.processIdentifier }
        var isRunning: Bool { process.isRunning }

        /// Sends `signal` to the settle process only (not to its hooks).
        func send(_ signal: Int32) {
            _ = kill(process.processIdentifier, signal)
        }

        /// Waits for the process to end (and reaps it) and returns what it printed.
        /// `status` is the exit code, or the signal number when it was killed by one.
        func wait() -> Result {
            process.waitUntilExit()
            let out = (try? String(contentsOfFile: stdoutPath, encoding: .utf8)) ?? ""
            let err = (try? String(contentsOfFile: stderrPath, encoding: .utf8)) ?? ""
            return Result(status: process.terminationStatus, stdout: out, stderr: err)
        }

        var wasKilledBySignal: Bool { !process.isRunning && process.terminationReason == .uncaughtSignal }
    }
}
