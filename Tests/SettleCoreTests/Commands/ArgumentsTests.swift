import XCTest
@testable import SettleApp

final class ArgumentsTests: XCTestCase {
    let spec = ArgumentSpec(command: "status", options: [
        .init(name: "--state", takesValue: true), .init(name: "--json", takesValue: false),
        .init(name: "--order", takesValue: true, repeatable: true),
    ], positionals: 0...1)

    func testParsesValuesFlagsAndPositionals() throws {
        let parsed = try ParsedArguments(["o-1", "--state=pending", "--json", "--order", "a", "--order", "b", "--config", "/x"], spec: spec)
        XCTAssertEqual(parsed.positionals, ["o-1"])
        XCTAssertEqual(parsed.value("--state"), "pending")
        XCTAssertTrue(parsed.has("--json"))
        XCTAssertEqual(parsed.all("--order"), ["a", "b"])
        XCTAssertEqual(parsed.value("--config"), "/x")
    }

    func testDoubleDashEndsOptions() throws {
        XCTAssertEqual(try ParsedArguments(["--", "--json"], spec: spec).positionals, ["--json"])
    }

    func testUsageErrors() {
        for (arguments, expected) in [(["--bogus"], "unknown option '--bogus'"), (["--state"], "needs a value"),
                                      (["a", "b"], "unexpected argument 'b'"), (["--json=yes"], "takes no value"),
                                      (["--state", "a", "--state", "b"], "more than once")] {
            XCTAssertThrowsError(try ParsedArguments(arguments, spec: spec)) { error in
                let text = (error as? UsageError)?.text ?? ""
                XCTAssertTrue(text.contains(expected), text)
                XCTAssertTrue(text.contains("settle status --help"), text)
            }
        }
    }
}
