import Foundation
import SettleApp
import SettleTesting
import XCTest
import SettleBase

/// Outside text (order ids, hook output) reaches a terminal or a log line escaped: an ESC or CR
/// in it is shown, never obeyed.
final class ControlCharacterTests: EndToEndTestCase {
    let hostileId = "o-\u{1B}[31mred\rX"

    func testOrderIdAndHookOutput_withEscapeAndCarriageReturn_appearEscapedInStatusAndInTheLog() throws {
        let hook = try world.write("hostile.sh", "#!/bin/sh\ncat > /dev/null\nprintf 'out \\033[31mred\\rforged\\n'\n", mode: 0o755)
        try world.writeConfig(hook: hook)
        try enqueueValid(hostileId, transaction: "100")
        let reconcile = try settle(["reconcile"])
        XCTAssertEqual(reconcile.status, 0, reconcile.stderr)
        let list = try settle(expecting: 0, ["status"])
        let detail = try settle(expecting: 0, ["status", hostileId])
        for (what, text) in [("reconcile's log", reconcile.stderr), ("status", list.stdout), ("status ORDER", detail.stdout)] {
            XCTAssertFalse(text.unicodeScalars.contains { $0 == "\u{1B}" || $0 == "\r" }, "\(what) printed a raw ESC or CR:\n\(text)")
        }
        XCTAssertTrue(list.stdout.contains(#"o-\u{1B}[31mred\rX"#), list.stdout)
        XCTAssertTrue(detail.stdout.contains(#"o-\u{1B}[31mred\rX"#), detail.stdout)
        XCTAssertTrue(detail.stdout.contains(#"out \u{1B}[31mred\rforged"#), "hook output not shown escaped:\n\(detail.stdout)")
        XCTAssertTrue(reconcile.stderr.contains(#"order="o-\u{1B}[31mred\rX""#), reconcile.stderr)
        XCTAssertEqual(try JSONValue.parse(try settle(expecting: 0, ["status", hostileId, "--json"]).stdout)["order_id"],
                       .string(hostileId), "JSON output keeps the id exact")
    }

    func testStatusJSON_ofEveryView_parsesStrictly_whenIdsAndHookOutputHoldControlCharactersDelC1AndInvalidUTF8() throws {
        // The hook's words: a C0 control, DEL, C1 (U+0085 as UTF-8), bytes that are not UTF-8.
        let hook = try world.write("binary.sh", """
            #!/bin/sh
            cat > /dev/null
            printf 'out \\001\\177\\302\\205\\377\\376 end\\n'
            printf 'err \\033[31m\\177\\n' >&2
            exit 65
            """, mode: 0o755)
        try world.writeConfig(hook: hook)
        let id = "o-\u{7F}\u{85}\u{1B}[31m\u{1}", user = "u-\u{7F}\u{9B}"
        try enqueueValid(id, transaction: "100", user: user)
        XCTAssertEqual(try settle(["reconcile"]).status, 0)
        let views: [[String]] = [
            ["status"], ["status", id], ["status", "--user", user], ["status", "--transaction", "100"],
            ["status", "--state", "needs_attention"], ["status", "--refunded"], ["status", "--limit", "1"],
        ]
        for view in views {
            let output = try settle(expecting: 0, view + ["--json"]).stdout
            XCTAssertFalse(output.contains(#"\u{"#), "\(view): Swift-style escape in JSON:\n\(output)")
            // Foundation's parser refuses what RFC 8259 refuses (unknown escapes, invalid UTF-8).
            XCTAssertNoThrow(try JSONSerialization.jsonObject(with: Data(output.utf8)), "\(view) is not JSON:\n\(output)")
            XCTAssertNoThrow(try JSONValue.parse(Data(output.utf8)), "\(view)")
        }
        let order = try JSONSerialization.jsonObject(with: Data(try settle(expecting: 0, ["status", id, "--json"]).stdout.utf8))
        let object = try XCTUnwrap(order as? [String: Any])
        XCTAssertEqual(object["order_id"] as? String, id, "the id survives exactly")
        XCTAssertEqual(object["user_id"] as? String, user)
        XCTAssertEqual(object["reason"] as? String, "hook_refused")
        let details = (object["history"] as? [[String: Any]] ?? []).compactMap { $0["detail"] as? String }
        XCTAssertTrue(details.contains { $0.contains("out \u{1}\u{7F}\u{85}") }, "\(details)")
    }

    func testPrintableText_showsC0DelAndC1_andLeavesOrdinaryTextAlone() {
        XCTAssertEqual(PrintableText.escape("a\u{0}b\u{7F}c\u{85}d\u{9B}e\tf\ng\rh"), #"a\u{00}b\u{7F}c\u{85}d\u{9B}e\tf\ng\rh"#)
        XCTAssertEqual(PrintableText.escape("line 1\nline\u{1B} 2", keepingLineBreaks: true), "line 1\nline\\u{1B} 2")
        XCTAssertEqual(PrintableText.escape("café ☕ C:\\path"), "café ☕ C:\\path")
    }
}
