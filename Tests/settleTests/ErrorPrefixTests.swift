import Foundation
import SettleTesting
import XCTest

/// An error's line names its command once: "settle run: stopped ...", never
/// "settle run: settle run stopped ..." (SettleCommand prefixes every failure with the command).
final class ErrorPrefixTests: EndToEndTestCase {
    private func assertNamedOnce(_ stderr: String, file: StaticString = #filePath, line: UInt = #line) {
        XCTAssertNil(stderr.range(of: #"settle ([a-z-]+): settle \1"#, options: .regularExpression),
                     "the command named twice: \(stderr)", file: file, line: line)
    }

    func testARunThatStopsWithAnError_endsWithOneExactLine() throws {
        let result = try settleWithoutConfig(["run", "--config", world.folder + "/missing.json"])
        XCTAssertEqual(result.status, 78, result.stderr)
        let lines = result.stderr.split(separator: "\n").map(String.init)
        XCTAssertEqual(lines.last, "settle run: stopped with an error (see the log above)", result.stderr)
        assertNamedOnce(result.stderr)
    }

    func testBackupOfAPostgreSQLLedger_namesTheCommandOnce() throws {
        try world.writeConfig(overrides: [("ledger", .string("postgresql://settle@127.0.0.1:1/settle"))])
        let result = try settle(["backup", world.folder + "/copy.sqlite3"])
        XCTAssertEqual(result.status, 78, result.stderr)
        let expected = "settle backup: it copies an SQLite ledger only; back a PostgreSQL ledger up with pg_dump"
        XCTAssertTrue(result.stderr.hasPrefix(expected), result.stderr)
        assertNamedOnce(result.stderr)
    }
}
