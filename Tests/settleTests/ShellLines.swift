import Foundation
import SettleTesting
import XCTest
#if canImport(Glibc)
import Glibc
#endif

/// Runs command lines as an operator pastes them into a shell: `/bin/sh -c LINE` with the
/// built `settle` first on PATH and no `SETTLE_CONFIG`, so a printed or documented walkthrough
/// is tested as written, quoting and all.
enum ShellLines {
    static var environment: [String: String] {
        let folder = SettleBinary.url.deletingLastPathComponent().path
        let path = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin"
        return SettleBinary.environment(["PATH": folder + ":" + path])
    }

    /// Runs `line` to completion in `folder`.
    static func run(_ line: String, in folder: String) throws -> SettleBinary.Result {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/bin/sh")
        process.arguments = ["-c", line]
        process.environment = environment
        process.currentDirectoryURL = URL(fileURLWithPath: folder)
        let out = folder + "/.line-\(UUID().uuidString).out", err = out + ".err"
        FileManager.default.createFile(atPath: out, contents: nil)
        FileManager.default.createFile(atPath: err, contents: nil)
        defer { try? FileManager.default.removeItem(atPath: out); try? FileManager.default.removeItem(atPath: err) }
        process.standardOutput = try FileHandle(forWritingTo: URL(fileURLWithPath: out))
        process.standardError = try FileHandle(forWritingTo: URL(fileURLWithPath: err))
        process.standardInput = FileHandle.nullDevice
        try process.run()
        process.waitUntilExit()
        return SettleBinary.Result(status: process.terminationStatus,
                                   stdout: (try? String(contentsOfFile: out, encoding: .utf8)) ?? "",
                                   stderr: (try? String(contentsOfFile: err, encoding: .utf8)) ?? "")
    }

    /// Starts `line` (a long-running command, e.g. the simulator) with `exec`, so the process
    /// is the command itself and a signal reaches it; output in files of `folder`.
    static func start(_ line: String, in folder: String) throws -> SettleBinary.Running {
        let out = folder + "/.started-\(UUID().uuidString).out", err = out + ".err"
        FileManager.default.createFile(atPath: out, contents: nil)
        FileManager.default.createFile(atPath: err, contents: nil)
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/bin/sh")
        process.arguments = ["-c", "exec " + line]
        process.environment = environment
        process.currentDirectoryURL = URL(fileURLWithPath: folder)
        process.standardOutput = try FileHandle(forWritingTo: URL(fileURLWithPath: out))
        process.standardError = try FileHandle(forWritingTo: URL(fileURLWithPath: err))
        process.standardInput = FileHandle.nullDevice
        try process.run()
        return SettleBinary.Running(process: process, stdoutPath: out, stderrPath: err)
    }

    /// A port whose next one up is free too: `settle simulator --init`'s stores listen on both.
    static func freePortPair() throws -> Int {
        for _ in 0..<50 {
            let port = try KernelListeners.freePort()
            guard port < 65_000 else { continue }
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_addr.s_addr = inet_addr("127.0.0.1")
            address.sin_port = UInt16(port + 1).bigEndian
            let probe = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            defer { close(probe) }
            let bound = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    bind(probe, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
                }
            }
            if bound == 0 { return port }
        }
        throw POSIXError(.EADDRINUSE)
    }
}
