import Foundation
import SettleApp
import XCTest
import SettleBase

/// The command line as people who use git, systemctl and swift-argument-parser CLIs expect it.
final class CommandLineTests: EndToEndTestCase {
    func testHelpCommand_printsTheSameHelpAsTheCommandsOwnHelpFlag() throws {
        for command in UsageTests.commands {
            let viaHelp = try settleWithoutConfig(["help", command])
            let viaFlag = try settleWithoutConfig([command, "--help"])
            XCTAssertEqual(viaHelp.status, 0, viaHelp.stderr)
            XCTAssertEqual(viaHelp.stdout, viaFlag.stdout, command)
        }
        let unknown = try settleWithoutConfig(["help", "frobnicate"])
        XCTAssertEqual(unknown.status, 64)
        XCTAssertTrue(unknown.stderr.contains("frobnicate"), unknown.stderr)
    }

    func testShortHelpFlag_aloneAndAfterACommand_printsHelp() throws {
        XCTAssertTrue(try settleWithoutConfig(["-h"]).stdout.contains("Commands:"))
        let status = try settleWithoutConfig(["status", "-h"])
        XCTAssertEqual(status.status, 0)
        XCTAssertTrue(status.stdout.contains("Usage: settle status"), status.stdout)
    }

    func testGlobalConfigOption_worksBeforeOrAfterTheCommand_longOrShort() throws {
        try enqueueValid("o-1", transaction: "2000000000000001")
        for arguments in [["--config", world.configPath, "status", "o-1"], ["-c", world.configPath, "status", "o-1"],
                          ["status", "o-1", "-c", world.configPath], ["--config=\(world.configPath)", "status", "o-1"]] {
            let result = try settleWithoutConfig(arguments)
            XCTAssertEqual(result.status, 0, "\(arguments): \(result.stderr)")
            XCTAssertTrue(result.stdout.contains("order:") && result.stdout.contains("o-1"), "\(arguments): \(result.stdout)")
        }
    }

    func testVersion_namesTheCommitTheLedgerSchemaAndTheLibraries_shortAndLong() throws {
        for flag in ["-V", "--version"] {
            let result = try settleWithoutConfig([flag])
            XCTAssertEqual(result.status, 0)
            let text = lines(result.stdout)
            XCTAssertEqual(text.first, "settle \(SettleVersion.number)")
            XCTAssertTrue(text.contains { $0.hasPrefix("commit: ") }, result.stdout)
            XCTAssertTrue(text.contains { $0.hasPrefix("ledger schema: ") && Int($0.dropFirst(15)) != nil }, result.stdout)
            let libraries = try XCTUnwrap(text.last)
            XCTAssertNotNil(libraries.range(of: #"^SQLite 3\.\d+\.\d+, libcurl \d+\.\d+\.\d+, OpenSSL \d"#, options: .regularExpression),
                            libraries)
        }
    }

    func testGeneratedManualPage_coversEveryCommandAndRendersWithMan() throws {
        let result = try settleWithoutConfig(["--generate-manual"])
        XCTAssertEqual(result.status, 0, result.stderr)
        XCTAssertTrue(result.stdout.hasPrefix(".TH SETTLE 1"))
        for command in UsageTests.commands {
            XCTAssertTrue(result.stdout.contains(".SS \(command)\n"), "the manual has no section for \(command)")
        }
    }

    func testHelpManualAndCompletions_describeEveryStore() throws {
        let help = try settleWithoutConfig(["--help"]).stdout
        let first = help.components(separatedBy: "\n\n").first ?? ""
        XCTAssertTrue(first.contains("App Store, Google Play, Huawei AppGallery and ONE store purchases") && first.contains("Apple, Google, Huawei or ONE store"), first)
        let simulator = try settleWithoutConfig(["help", "simulator"]).stdout
        XCTAssertTrue(simulator.contains("Apple: verifyReceipt") && simulator.contains("Google Play: a fake Google")
                      && simulator.contains("Huawei AppGallery: a fake HarmonyOS IAP Kit") && simulator.contains("ONE store: a fake ONE store API V7"),
                      simulator)
        for command in ["reconcile", "status", "assign", "demo"] {
            let text = try settleWithoutConfig(["help", command]).stdout
            XCTAssertTrue(text.contains("Google Play") && text.contains("Huawei") && text.contains("ONE store"), "settle help \(command): \(text)")
        }
        let manual = try settleWithoutConfig(["--generate-manual"]).stdout
        XCTAssertTrue(manual.contains("settle \\- re-verify App Store, Google Play, Huawei AppGallery and ONE store purchases"), manual)
        let zsh = try settleWithoutConfig(["--generate-completion-script", "zsh"]).stdout
        XCTAssertTrue(zsh.contains("'simulator:local, scripted stand-ins for App Store, Google Play, Huawei AppGallery and ONE store"), zsh)
    }

    func testCompletionScripts_bashParsesAndBothNameEveryCommand() throws {
        for shell in ["bash", "zsh"] {
            let result = try settleWithoutConfig(["--generate-completion-script", shell])
            XCTAssertEqual(result.status, 0, result.stderr)
            for command in UsageTests.commands { XCTAssertTrue(result.stdout.contains(command), "\(shell): \(command)") }
        }
        let bash = try settleWithoutConfig(["--generate-completion-script", "bash"]).stdout
        let script = try world.write("settle.bash", bash + "\nCOMP_WORDS=(settle res); COMP_CWORD=1; _settle; echo \"${COMPREPLY[@]}\"\n")
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/bin/bash")
        process.arguments = [script]
        let out = Pipe()
        process.standardOutput = out
        try process.run()
        let printed = String(decoding: out.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        XCTAssertEqual(process.terminationStatus, 0)
        XCTAssertEqual(printed.trimmingCharacters(in: .whitespacesAndNewlines), "resolve")
        XCTAssertEqual(try settleWithoutConfig(["--generate-completion-script", "fish"]).status, 64)
    }
}
