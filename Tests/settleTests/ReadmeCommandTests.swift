import Foundation
import SettleApp
import SettleTesting
import XCTest

/// The guide "Testing your integration" (docs/testing.md), run as written against the built
/// binary: the command lines of "The simulator" (its first ```sh block) and its plans.json (its
/// first ```json block); the walkthrough above it by `TestingWalkthroughTests`. The operations
/// guide's install section is run as written by scripts/package-test.sh
/// in a fresh Debian root, the README's quick start by .ci/run.
final class ReadmeCommandTests: EndToEndTestCase {
    static var readme: String {
        get throws {
            let path = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("../../docs/testing.md").standardized.path
            return try String(contentsOfFile: path, encoding: .utf8)
        }
    }

    /// The lines of the `nth` fenced block of `language` in the section headed `heading`, as
    /// scripts/readme-commands reads them: for sh, trailing `# comments` and blank lines dropped.
    static func block(_ language: String, in heading: String, nth: Int = 1) throws -> [String] {
        var inside = false, inBlock = false, seen = 0
        var lines: [String] = []
        for line in try readme.components(separatedBy: "\n") {
            if inBlock {
                if line == "```" { return lines }
                lines.append(line)
            } else if line.hasPrefix("#"), let space = line.firstIndex(of: " "), line[..<space].allSatisfy({ $0 == "#" }) {
                inside = line[line.index(after: space)...] == heading
            } else if inside && line == "```" + language {
                seen += 1
                inBlock = seen == nth
            }
        }
        XCTFail("docs/testing.md: no ```\(language) block \(nth) under '\(heading)'")
        return []
    }

    static func commands(in heading: String) throws -> [String] {
        try block("sh", in: heading).compactMap { line in
            let command = line.range(of: #"\s+#[^"]*$"#, options: .regularExpression).map { String(line[..<$0.lowerBound]) } ?? line
            return command.trimmingCharacters(in: .whitespaces).isEmpty ? nil : command
        }
    }

    /// Starts one documented line (`settle ...`) in the world's folder and waits for what it prints
    /// before it serves: the URL and the secrets it accepts.
    func startReadmeLine(_ line: String) throws -> (running: SettleBinary.Running, base: String, banner: String) {
        let words = line.split(separator: " ").map(String.init)
        XCTAssertEqual(words.first, "settle", line)
        let running = try SettleBinary.start(Array(words.dropFirst()), workingDirectory: world.folder, outputFolder: world.folder)
        var banner = ""
        let started = eventually(within: 20) {
            banner = (try? String(contentsOfFile: running.stdoutPath, encoding: .utf8)) ?? ""
            return banner.contains("\naccepts: ")
        }
        if !started {
            if running.isRunning { running.send(SIGKILL) }
            let ended = running.wait()
            XCTFail("docs/testing.md line '\(line)' did not start: exit \(ended.status)\nstdout: \(ended.stdout)\nstderr: \(ended.stderr)")
            throw NotStarted(line: line)
        }
        let first = banner.split(separator: "\n").first.map(String.init) ?? ""
        XCTAssertTrue(first.hasPrefix("settle simulator listening on http://127.0.0.1:"), banner)
        return (running, String(first.dropFirst("settle simulator listening on ".count)), banner)
    }

    /// A configuration of the world's pointed at a simulator's verifyReceipt, with this shared secret.
    func pointConfig(at base: String, sharedSecret: String) throws {
        _ = try world.write("integration-secret", sharedSecret, mode: 0o600)
        try world.writeConfig(overrides: [
            ("receipt_api", .object([("production_url", .string(base + "/production/verifyReceipt")),
                                     ("sandbox_url", .string(base + "/sandbox/verifyReceipt")),
                                     ("shared_secret_file", .string("integration-secret"))])),
        ])
    }

    func testTestingYourIntegration_commandsRunAsWritten_theBareSimulatorStartsWithItsDocumentedDefaultsAndAcceptsItsSecret() throws {
        let lines = try Self.commands(in: "The simulator")
        XCTAssertEqual(lines.first, "settle simulator", "the newcomer's first try, the bare command, comes first")
        // The files the lines name: the guide's plans.json, and a test configuration with a Server API key.
        _ = try world.write("plans.json", try Self.block("json", in: "The simulator").joined(separator: "\n"))
        try world.writeConfig(serverAPI: true)
        _ = try world.write("test-settle.json", try String(contentsOfFile: world.configPath, encoding: .utf8))
        let receipt = Data("a newcomer's receipt".utf8).base64EncodedString()
        try enqueue("o-1", receipt: receipt)
        try enqueue("o-2", receipt: receipt)

        for line in lines {
            let (running, base, banner) = try startReadmeLine(line)
            defer { if running.isRunning { running.send(SIGKILL); _ = running.wait() } }
            if !line.contains("--config") {
                XCTAssertTrue(banner.contains("no configuration (--config or $SETTLE_CONFIG): the defaults"), banner)
                XCTAssertTrue(banner.contains("bundle_id: com.example.game"), banner)
                XCTAssertTrue(banner.contains(#"accepts: the shared secret "simulator-shared-secret" (verifyReceipt); no Server API key"#), banner)
                // The secret it says it accepts is accepted (an unknown receipt: 21003, rejected); any other is 21004 (78).
                try pointConfig(at: base, sharedSecret: "an integrator's guess")
                let refused = try settle(["reconcile", "--order", "o-1"])
                XCTAssertEqual(refused.status, 78, refused.stderr)
                XCTAssertTrue(refused.stderr.contains("21004"), refused.stderr)
                try pointConfig(at: base, sharedSecret: "simulator-shared-secret")
                try settle(expecting: 0, ["reconcile", "--order", "o-2"])
                XCTAssertEqual(try state("o-2"), "rejected")
                XCTAssertEqual(try order("o-2")["reason"]?.looseString, "receipt_invalid")
            } else {
                XCTAssertTrue(banner.contains("scripted: 1 receipt, 1 transaction, 1 customer, 1 Apple order\n"),
                              banner)
                XCTAssertTrue(banner.contains("configuration: test-settle.json"), banner)
                XCTAssertTrue(banner.contains("accepts: the shared secret in \(world.folder)/shared-secret (verifyReceipt); Server API tokens signed by key \(world.keyId)"), banner)
                XCTAssertFalse(banner.contains(world.sharedSecret), "never the secret itself")
                if line.contains("--write-root sim-root.pem") {
                    let root = try String(contentsOfFile: world.folder + "/sim-root.pem", encoding: .utf8)
                    XCTAssertTrue(root.hasPrefix("-----BEGIN CERTIFICATE-----"), root)
                }
            }
            running.send(SIGTERM)
            let ended = running.wait()
            XCTAssertEqual(ended.status, 0, "\(line): \(ended.stderr)")
            XCTAssertTrue(ended.stdout.contains("settle simulator stopped after"), ended.stdout)
        }
    }
}

private struct NotStarted: Error { var line: String }
