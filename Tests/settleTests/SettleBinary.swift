import Foundation
import XCTest

/// Runs the built `settle` executable, as an operator would.
enum SettleBinary {
    struct Result {
        var status: Int32
        var stdout: String
        var stderr: String
    }

    /// The executable sits next to the test bundle in SwiftPM's build folder.
    static var url: URL {
        var folder = Bundle(for: Marker.self).bundleURL
        while !FileManager.default.isExecutableFile(atPath: folder.appendingPathComponent("settle").path) && folder.path != "/" {
            folder.deleteLastPathComponent()
        }
        return folder.appendingPathComponent("settle")
    }

    private final class Marker {}

    /// Runs settle to completion with `arguments`, optional stdin and extra environment.
    static func run(_ arguments: [String], stdin: Data? = nil, environment: [String: String] = [:]) throws -> Result {
        let process = Process()
        process.executableURL = url
        process.arguments = arguments
        var env = ProcessInfo.processInfo.environment
        env["SETTLE_CONFIG"] = nil
        for (k, v) in environment { env[k] = v }
        process.environment = env
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
}
