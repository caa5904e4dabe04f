import Foundation
import SettleApp
import SettleBase
import XCTest

/// `settle audit` (issue 36): a `settle retry` from the shell is in the audit log as the person
/// behind sudo, channel cli, source local; `--json` prints one parseable object a line, oldest
/// first; the filters and a bad `--since` behave.
final class AuditCommandTests: EndToEndTestCase {
    func testRetryFromTheShell_isAudited_andAuditJSONLinesParse_oldestFirst() throws {
        try enqueueForged("o-1")
        try enqueueForged("o-2")
        try settle(expecting: 0, ["reconcile"])
        for (order, person) in [("o-1", "alice"), ("o-2", "bob")] {
            let retry = try settle(["retry", order, "--note", "ticket \(order.suffix(1))"],
                                   environment: ["SUDO_USER": person, "USER": "root"])
            XCTAssertEqual(retry.status, 0, retry.stderr)
        }

        let lines = try settle(expecting: 0, ["audit", "--json"]).stdout.split(separator: "\n").map(String.init)
        XCTAssertEqual(lines.count, 2, lines.joined(separator: "\n"))
        let objects = try lines.map { try JSONValue.parse($0) }
        XCTAssertEqual(objects.map { $0["subject"] }, [.string("o-1"), .string("o-2")], "oldest first")
        let first = objects[0]
        XCTAssertEqual(first["actor"], .string("alice"))
        XCTAssertEqual(first["channel"], .string("cli"))
        XCTAssertEqual(first["source"], .string("local"))
        XCTAssertEqual(first["action"], .string("retry"))
        XCTAssertEqual(first["outcome"], .string("ok"))
        XCTAssertEqual(first["detail"], .string("ticket 1"))
        XCTAssertEqual(first["role"], .null)

        let table = try settle(expecting: 0, ["audit"]).stdout
        let rows = table.split(separator: "\n")
        XCTAssertTrue(rows.first?.hasPrefix("time") == true, table)
        XCTAssertTrue(rows[1].contains("bob") && rows[1].contains("o-2"), "newest first: \(table)")
        let bob = try settle(expecting: 0, ["audit", "--user", "bob", "--json"]).stdout
        XCTAssertEqual(bob.split(separator: "\n").count, 1, bob)
        func count(_ arguments: [String]) throws -> Int {
            try settle(expecting: 0, ["audit", "--json"] + arguments).stdout.split(separator: "\n").count
        }
        XCTAssertEqual(try count(["--limit", "1"]), 1)
        XCTAssertEqual(try count(["--since", "1d"]), 2)
        XCTAssertEqual(try settle(expecting: 0, ["audit", "--since", "2999-01-01"]).stdout, "no audit entries\n")
        let bad = try settle(expecting: 64, ["audit", "--since", "yesterday"])
        XCTAssertTrue(bad.stderr.contains("--since takes"), bad.stderr)
        XCTAssertEqual(try settle(expecting: 64, ["audit", "--limit", "0"]).status, 64)
    }
}
