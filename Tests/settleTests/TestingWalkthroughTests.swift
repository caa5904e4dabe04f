import Foundation
import SettleTesting
import XCTest
#if canImport(Glibc)
import Glibc
#endif

/// docs/testing.md's walkthrough ("Your first orders, step by step"), run as written through a
/// shell: the first block in one process (its simulator line left running), the second line by
/// line, as two terminals would. The documented port 8700 is swapped for a free one, the only
/// change; the walkthrough's commands must be those `--init` prints.
final class TestingWalkthroughTests: EndToEndTestCase {
    static let heading = "Your first orders, step by step"

    func testWalkthrough_runsAsWritten_andBothOrdersFinish() throws {
        let first = try ReadmeCommandTests.block("sh", in: Self.heading, nth: 1).filter { !$0.isEmpty }
        let second = try ReadmeCommandTests.block("sh", in: Self.heading, nth: 2).map(Self.withoutComment)
            .filter { !$0.isEmpty }
        XCTAssertEqual(first.first, "settle simulator --init ./sim")
        XCTAssertEqual(first.count, 2, "--init, then the simulator")
        let port = try ShellLines.freePortPair()
        func here(_ line: String) -> String {
            line.replacingOccurrences(of: "127.0.0.1:8700", with: "127.0.0.1:\(port)")
        }

        let made = try ShellLines.run(first[0] + " --listen 127.0.0.1:\(port)", in: world.folder)
        XCTAssertEqual(made.status, 0, made.stderr)
        let printed = Set(made.stdout.split(separator: "\n").map {
            Self.withoutComment(String($0)).trimmingCharacters(in: .whitespaces)
        })
        for line in [here(first[1])] + second.filter({ $0.hasPrefix("settle ") || $0.hasPrefix("cat ") }) {
            XCTAssertTrue(printed.contains(line), "the doc's line is not what --init prints: \(line)\n\(made.stdout)")
        }

        let simulator = try ShellLines.start(here(first[1]), in: world.folder)
        defer { if simulator.isRunning { simulator.send(SIGKILL); _ = simulator.wait() } }
        XCTAssertTrue(eventually(within: 20) {
            ((try? String(contentsOfFile: simulator.stdoutPath, encoding: .utf8)) ?? "").contains("google_play.api_url")
        }, "the simulator line did not start")

        var outputs: [String: String] = [:]
        for line in second {
            let result = try ShellLines.run(line, in: world.folder)
            XCTAssertEqual(result.status, 0, "\(line)\n\(result.stdout)\n\(result.stderr)")
            outputs[line] = result.stdout
        }
        let statuses = second.filter { $0.hasPrefix("settle status") }
        XCTAssertEqual(statuses.count, 2)
        for line in statuses {
            let state = outputs[line]?.split(separator: "\n").first { $0.hasPrefix("state:") }
            XCTAssertEqual(state?.split(separator: " ").last, "finished", "\(line)\n\(outputs[line] ?? "")")
        }
        let grants = try XCTUnwrap(second.first { $0.hasPrefix("cat ") }.flatMap { outputs[$0] })
        XCTAssertEqual(grants.split(separator: "\n").count, 2, grants)
        XCTAssertTrue(grants.contains("\"order_id\":\"o-1001\"") && grants.contains("\"order_id\":\"o-1002\""), grants)

        simulator.send(SIGTERM)
        XCTAssertEqual(simulator.wait().status, 0)
    }

    /// A line without its trailing `# comment`, as scripts/readme-commands reads it.
    static func withoutComment(_ line: String) -> String {
        line.range(of: #"\s+#[^"]*$"#, options: .regularExpression).map { String(line[..<$0.lowerBound]) } ?? line
    }
}
