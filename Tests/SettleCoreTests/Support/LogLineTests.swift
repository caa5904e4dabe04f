import Foundation
import Synchronization
import XCTest
@testable import SettleBase
@testable import SettleLedger

/// The log line's fields, written as bytes: each value reads as `String(describing:)` would,
/// quoted exactly as `Log.quote` quotes it, so no order id or hook output starts a forged line.
final class LogLineTests: XCTestCase {
    private func line(_ fields: [(String, Any?)]) -> String {
        let lines = Mutex<[String]>([])
        let log = Log(environment: [:], time: ManualTimeSource(Date(timeIntervalSince1970: 1_700_000_000)),
                      sink: { line in lines.withLock { $0.append(line) } })
        log.log(.info, "order.delivered", pairs: fields)
        return lines.withLock { $0.joined() }
    }

    func testEveryValue_readsAsDescribed_andQuotedAsQuoteDoes() {
        let values: [Any] = ["o-1", "", "two words", "a=b", "say \"hi\"", "back\\slash", "line\nbreak", "tab\there",
                             "é-ünïcode", "\u{85}next-line", "\u{202E}rtl", "emoji 🎉", 42, Int64(-7), Int32(3), true, 1.5,
                             Substring("sub"), ["array"], Optional<Int>.none as Any]
        for value in values {
            let expected = "2023-11-14T22:13:20Z info order.delivered k=" + Log.quote(String(describing: value)) + "\n"
            XCTAssertEqual(line([("k", value)]), expected, "value \(String(reflecting: value))")
        }
    }

    func testAnOptionalInsideAny_readsAsItsValue() {
        XCTAssertEqual(line([("k", Optional<Int>.some(5) as Any)]), "2023-11-14T22:13:20Z info order.delivered k=5\n")
        XCTAssertEqual(line([("k", Optional<String>.some("o 1") as Any)]), "2023-11-14T22:13:20Z info order.delivered k=\"o 1\"\n")
    }

    func testNilFieldsAreLeftOut_andFieldsKeepTheirOrder() {
        XCTAssertEqual(line([("a", "1"), ("b", nil), ("c", 2)]), "2023-11-14T22:13:20Z info order.delivered a=1 c=2\n")
    }

    func testBlankText_isWhatTrimmingWhitespaceAndNewlinesLeavesEmpty() {
        let samples = ["", " ", "\t\n\r", "\u{85}", "\u{A0}", "\u{2028}\u{2029}", "\u{3000}", "\u{200B}", " \u{301}",
                       "user-1", " user ", "\u{FEFF}", "\u{1680}\u{2000}\u{200A}\u{202F}\u{205F}", "\u{0B}\u{0C}", "\u{1C}"]
        for text in samples {
            XCTAssertEqual(text.isBlank, text.trimmingCharacters(in: .whitespacesAndNewlines).isEmpty,
                           "text \(text.unicodeScalars.map { String($0.value, radix: 16) })")
        }
    }

    /// Every ASCII character alone and after a space, against Foundation's answer (ASCII skips its lookup).
    func testIsBlank_answersAsFoundationDoes_forEveryASCIICharacter() {
        for value in UInt8(0)...127 {
            for text in [String(UnicodeScalar(value)), " " + String(UnicodeScalar(value)), String(UnicodeScalar(value)) + "\u{3000}"] {
                XCTAssertEqual(text.isBlank, text.trimmingCharacters(in: .whitespacesAndNewlines).isEmpty, "character \(value)")
            }
        }
    }

    func testContainsBytes_findsTheNeedleWhereContainsDoes() {
        let haystacks = ["", "\"", "{\"customer\": 1}", "xx\"customer", "\"customer\"", "\"custome\"customer\"", "ab\u{0}\"usage\"",
                         "é\"usage\"é", "\"usag\"", String(repeating: "\"", count: 50) + "usage\""]
        for haystack in haystacks {
            for needle in [#""customer""#, #""usage""#, "", "é\""] {
                XCTAssertEqual(haystack.containsBytes(needle), needle.isEmpty || haystack.contains(needle),
                               "\(haystack.debugDescription) ∋ \(needle.debugDescription)")
            }
        }
    }

    func testSchemaFloor_answersFromWhatItSaw_andNeverGoesDown() {
        let floor = SchemaFloor()
        XCTAssertFalse(floor.reached(1))
        floor.saw(20)
        XCTAssertTrue(floor.reached(20))
        XCTAssertFalse(floor.reached(21))
        floor.saw(3)
        XCTAssertTrue(floor.reached(20), "a lower reading never lowers what was reached")
    }
}
