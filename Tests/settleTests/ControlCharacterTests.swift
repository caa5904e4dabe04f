import Foundation
import SettleCore
import SettleTesting
import XCTest

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

    func testPrintableText_showsC0DelAndC1_andLeavesOrdinaryTextAlone() {
        XCTAssertEqual(PrintableText.escape("a\u{0}b\u{7F}c\u{85}d\u{9B}e\tf\ng\rh"), #"a\u{00}b\u{7F}c\u{85}d\u{9B}e\tf\ng\rh"#)
        XCTAssertEqual(PrintableText.escape("line 1\nline\u{1B} 2", keepingLineBreaks: true), "line 1\nline\\u{1B} 2")
        XCTAssertEqual(PrintableText.escape("café ☕ C:\\path"), "café ☕ C:\\path")
    }
}
