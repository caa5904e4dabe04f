import Foundation
import SettleApp
import XCTest
import SettleBase

/// The command line itself: wrong calls exit 64 with a short hint, `--help` and `--version` work
/// everywhere (SPEC sections 1 and 7).
final class UsageTests: EndToEndTestCase {
    static let commands = ["run", "reconcile", "status", "enqueue", "retry", "resolve", "check-config", "migrate", "backup",
                           "verify-backup", "demo"]

    /// A wrong call prints a message and a hint pointing at --help on stderr, nothing on stdout.
    func assertUsageError(_ result: SettleBinary.Result, file: StaticString = #filePath, line: UInt = #line) {
        XCTAssertEqual(result.status, 64, "stderr: \(result.stderr)", file: file, line: line)
        XCTAssertEqual(result.stdout, "", file: file, line: line)
        let errorLines = lines(result.stderr)
        XCTAssertFalse(errorLines.isEmpty, "no message on stderr", file: file, line: line)
        XCTAssertLessThanOrEqual(errorLines.count, 2, "a usage error is a message and a one-line hint, got:\n\(result.stderr)",
                                 file: file, line: line)
        XCTAssertTrue(errorLines.last?.contains("--help") ?? false, "the hint does not mention --help:\n\(result.stderr)",
                      file: file, line: line)
    }

    func testUnknownCommand_exits64WithAOneLineHintMentioningHelp() throws {
        let result = try settleWithoutConfig(["frobnicate"])
        assertUsageError(result)
        XCTAssertTrue(result.stderr.contains("frobnicate"), "the message should name the unknown command: \(result.stderr)")
    }

    func testNoCommandAtAll_printsTheHelpAndExits0() throws {
        let result = try settleWithoutConfig([])
        XCTAssertEqual(result.status, 0, result.stderr)
        XCTAssertTrue(result.stdout.contains("Usage: settle"), result.stdout)
        XCTAssertEqual(result.stderr, "")
    }

    func testUnknownFlag_exits64WithAOneLineHintMentioningHelp() throws {
        let result = try settleWithoutConfig(["status", "--bogus"])
        assertUsageError(result)
        XCTAssertTrue(result.stderr.contains("--bogus"), "the message should name the unknown option: \(result.stderr)")
    }

    func testUnknownFlag_isAUsageErrorEvenWithAValidConfiguration() throws {
        let result = try settle(["reconcile", "--bogus"])
        assertUsageError(result)
        XCTAssertTrue(world.deliveries.isEmpty)
        XCTAssertFalse(FileManager.default.fileExists(atPath: world.ledgerPath), "a wrong call must do nothing")
    }

    func testMissingOptionValue_exits64WithAOneLineHintMentioningHelp() throws {
        for arguments in [["status", "--limit"], ["reconcile", "--order"], ["enqueue", "--order"], ["status", "--config"]] {
            let result = try settleWithoutConfig(arguments)
            assertUsageError(result)
            XCTAssertTrue(result.stderr.contains(arguments[1]), "\(arguments): the message should name the option: \(result.stderr)")
        }
    }

    func testHelpOnEveryCommand_exits0AndPrintsUsage() throws {
        for command in Self.commands {
            // No configuration exists at the default path: help must not need one.
            let result = try settleWithoutConfig([command, "--help"], environment: ["SETTLE_CONFIG": world.folder + "/missing.json"])
            XCTAssertEqual(result.status, 0, "\(command) --help: \(result.stderr)")
            XCTAssertTrue(result.stdout.contains("Usage:"), "\(command) --help printed:\n\(result.stdout)")
            XCTAssertTrue(result.stdout.contains(command), "\(command) --help should name the command:\n\(result.stdout)")
        }
    }

    func testTopLevelHelp_exits0AndListsEveryCommand() throws {
        let result = try settleWithoutConfig(["--help"])
        XCTAssertEqual(result.status, 0)
        XCTAssertTrue(result.stdout.contains("Usage:"))
        for command in Self.commands {
            XCTAssertTrue(result.stdout.contains(command), "settle --help does not list \(command)")
        }
    }

    func testVersion_printsTheVersionAndExits0() throws {
        let result = try settleWithoutConfig(["--version"])
        XCTAssertEqual(result.status, 0)
        XCTAssertEqual(lines(result.stdout).first, "settle \(SettleVersion.number)")
        XCTAssertTrue(SettleVersion.number.range(of: #"^\d+\.\d+\.\d+"#, options: .regularExpression) != nil)
    }
}
