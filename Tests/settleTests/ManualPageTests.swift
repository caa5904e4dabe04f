import Foundation
import SettleTesting
import XCTest

/// settle(1)'s ENVIRONMENT names every variable settle reads (found in the sources, so a new
/// one cannot be left out) and its EXAMPLES run commands settle has; man renders both.
final class ManualPageTests: EndToEndTestCase {
    private var sources: URL {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("../../Sources").standardized
    }

    /// The page's text between `.SH NAME` and the next `.SH`.
    private func section(_ name: String, of page: String) -> String {
        guard let start = page.range(of: ".SH \(name)\n") else { return "" }
        let rest = page[start.upperBound...]
        return String(rest[..<(rest.range(of: "\n.SH ")?.lowerBound ?? rest.endIndex)])
    }

    func testEnvironment_namesEveryVariableTheSourcesRead() throws {
        let page = try settleWithoutConfig(["--generate-manual"]).stdout
        let environment = section("ENVIRONMENT", of: page)
        XCTAssertFalse(environment.isEmpty, page)
        var read: Set<String> = ["SUDO_USER", "USER", "LOGNAME"]  // Operator's list, read in a loop
        let files = FileManager.default.enumerator(at: sources, includingPropertiesForKeys: nil)?
            .compactMap { $0 as? URL }.filter { $0.pathExtension == "swift" } ?? []
        XCTAssertGreaterThan(files.count, 100)
        let pattern = try NSRegularExpression(pattern: #"environment\["([A-Z][A-Z0-9_]*)"\]"#)
        for file in files {
            let text = try String(contentsOf: file, encoding: .utf8)
            for match in pattern.matches(in: text, range: NSRange(text.startIndex..., in: text)) {
                read.insert(String(text[Range(match.range(at: 1), in: text)!]))
            }
        }
        XCTAssertTrue(read.contains("SETTLE_CONFIG") && read.contains("CREDENTIALS_DIRECTORY"), "\(read)")
        for name in read.sorted() {
            XCTAssertNotNil(environment.range(of: #"(^|[^A-Z_])\#(name)([^A-Z_]|$)"#, options: .regularExpression),
                            "settle(1) ENVIRONMENT does not name \(name)")
        }
    }

    func testExamples_useRealCommands_andManRendersBothSections() throws {
        let page = try settleWithoutConfig(["--generate-manual"]).stdout
        let examples = section("EXAMPLES", of: page)
        let commands = examples.replacingOccurrences(of: "\\-", with: "-").split(separator: "\n")
            .compactMap { line -> String? in
                guard let range = line.range(of: #"settle [a-z-]+"#, options: .regularExpression) else { return nil }
                return String(line[range].dropFirst("settle ".count))
            }
        XCTAssertGreaterThanOrEqual(Set(commands).count, 6, examples)
        for command in commands {
            XCTAssertTrue(page.contains("\n.SS \(command)\n"), "EXAMPLES runs settle \(command), not on the page")
        }

        let file = try world.write("settle.1", page)
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["man", "-l", file]
        process.environment = SettleBinary.environment(["MANWIDTH": "120", "MANPAGER": "cat", "PAGER": "cat"])
        let out = Pipe()
        process.standardOutput = out
        try process.run()
        let shown = String(decoding: out.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        XCTAssertEqual(process.terminationStatus, 0, "man -l (apt-get install man-db)")
        XCTAssertTrue(shown.contains("\nENVIRONMENT\n") && shown.contains("\nEXAMPLES\n"), shown)
        XCTAssertTrue(shown.contains("settle simulator --init ./sim"), shown)
        XCTAssertTrue(shown.contains(#"printf '%s\n' "$PASSWORD" | settle web-passwd alice"#), shown)
    }
}
