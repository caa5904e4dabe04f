import XCTest
#if canImport(Glibc)
import Glibc
#endif
@testable import SettleModel

/// Who a support action is recorded as (issue 26).
final class OperatorTests: XCTestCase {
    func testCommandLine_prefersSudoUser_thenUser_thenLogname() {
        XCTAssertEqual(Operator.commandLine(environment: ["SUDO_USER": "alice", "USER": "root", "LOGNAME": "root"]).label, "alice via cli")
        XCTAssertEqual(Operator.commandLine(environment: ["USER": "bob", "LOGNAME": "robert"]).label, "bob via cli")
        XCTAssertEqual(Operator.commandLine(environment: ["LOGNAME": "carol"]).label, "carol via cli")
        XCTAssertEqual(Operator.commandLine(environment: ["SUDO_USER": "", "USER": "dave"]).name, "dave", "an empty name is no name")
    }

    func testCommandLine_withoutNamesInTheEnvironment_usesTheUidsName() {
        let person = Operator.commandLine(environment: [:])
        XCTAssertEqual(person.channel, .cli)
        let expected = getpwuid(getuid()).flatMap { $0.pointee.pw_name.map { String(cString: $0) } } ?? "uid \(getuid())"
        XCTAssertEqual(person.name, expected)
    }

    func testControlCharacters_areStripped_soANameCannotForgeAHistoryLine() {
        let person = Operator(name: "eve\n2026-01-01 retry retried\u{1B}[31m", channel: .web)
        XCTAssertEqual(person.name, "eve2026-01-01 retry retried[31m")
        XCTAssertEqual(Operator.commandLine(environment: ["SUDO_USER": "\u{7}\u{85}", "USER": "frank"]).name, "frank")
        XCTAssertEqual(person.attributed("ticket 7"), "by eve2026-01-01 retry retried[31m via web: ticket 7")
        XCTAssertEqual(Operator.attributed("ticket 7", to: nil), "ticket 7")
    }
}
