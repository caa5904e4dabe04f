import XCTest
@testable import SettleApp
@testable import SettleBase

final class JSONValueTests: XCTestCase {
    func testParse_keepsLargeIntegersExactly() throws {
        let json = try JSONValue.parse(#"{"download_id": 500935934584949200, "n": -1.5e3}"#)
        XCTAssertEqual(json["download_id"], .number("500935934584949200"))
        XCTAssertEqual(json["download_id"]?.looseInt64, 500_935_934_584_949_200)
        XCTAssertEqual(json["n"]?.looseString, "-1.5e3")
    }

    func testLooseReaders_acceptStringsAndNumbersAsApppleSendsThem() throws {
        let json = try JSONValue.parse(#"{"a": "1500884004000", "b": 1500884004000, "t": "true", "f": 0, "x": "nope"}"#)
        XCTAssertEqual(json["a"]?.looseInt64, 1_500_884_004_000)
        XCTAssertEqual(json["b"]?.looseString, "1500884004000")
        XCTAssertEqual(json["t"]?.looseBool, true)
        XCTAssertEqual(json["f"]?.looseBool, false)
        XCTAssertNil(json["x"]?.looseBool)
    }

    func testSerialized_aStringWithOneCharacterToEscape_escapesIt_andAPlainOneIsWrittenAsItIs() {
        let escaped: [(String, String)] = [("\u{1}", #"\u0001"#), ("\u{1F}", #"\u001f"#), ("\u{7F}", #"\u007f"#),
                                           ("\u{80}", #"\u0080"#), ("\u{9F}", #"\u009f"#), ("\"", #"\""#), ("\\", #"\\"#),
                                           ("\n", #"\n"#), ("\t", #"\t"#), ("\r", #"\r"#)]
        for (raw, written) in escaped {
            XCTAssertEqual(JSONValue.string("receipt-\(raw)-end").serialized(), "\"receipt-\(written)-end\"", "\(raw.unicodeScalars.map(\.value))")
        }
        for plain in ["MIIT0gYJKoZIhvcNAQcCoIITwzCCE78CAQEx/+=", "café ©®\u{A0} 日本 🎮", ""] {
            XCTAssertEqual(JSONValue.string(plain).serialized(), "\"\(plain)\"")
        }
    }

    func testSerialized_escapesC0DelAndC1_asRFC8259Escapes_andReadsBackTheSame() {
        XCTAssertEqual(JSONValue.string("a\u{0}b\u{7F}c\u{85}d\u{9F}e\u{A0}é\"\\").serialized(),
                       #""a\u0000b\u007fc\u0085d\u009fe\#u{A0}é\"\\""#)
        let text = "a\u{0}b\u{7F}c\u{85}d\u{9F}e"
        XCTAssertEqual(try JSONValue.parse(Data(JSONValue.string(text).serialized().utf8)), .string(text))
    }

    func testParse_decodesEscapesAndSurrogatePairs() throws {
        let json = try JSONValue.parse(#"["a\"b\\c\n", "\u00e9\ud83d\ude00"]"#)
        XCTAssertEqual(json.arrayValue?[0], .string("a\"b\\c\n"))
        XCTAssertEqual(json.arrayValue?[1], .string("é😀"))
    }

    func testParse_rejectsMalformedInputWithOffset() {
        for bad in ["", "{", "{\"a\":}", "[1,]", "tru", "{\"a\":1} x", "\"unterminated", "01x", "<html>"] {
            XCTAssertThrowsError(try JSONValue.parse(bad), "accepted \(bad)")
        }
    }

    func testParse_stringsWithAndWithoutEscapes_decodeTheSame() throws {
        XCTAssertEqual(try JSONValue.parse(#"["plain text", "a long prefix then \"quoted\"", "é€😀", ""]"#),
                       .array([.string("plain text"), .string("a long prefix then \"quoted\""), .string("é€😀"), .string("")]))
        // Invalid UTF-8 is repaired with U+FFFD whether or not the string has escapes.
        let invalid = Data([0x22, 0x61, 0xFF, 0x62, 0x22])
        XCTAssertEqual(try JSONValue.parse(invalid), .string("a\u{FFFD}b"))
        XCTAssertEqual(try JSONValue.parse(Data([0x22, 0x61, 0xFF, 0x5C, 0x6E, 0x22])), .string("a\u{FFFD}\n"))
    }

    func testParse_controlCharactersAndUnterminatedStrings_failWhereTheyAre() {
        XCTAssertThrowsError(try JSONValue.parse(Data("\"abc\u{01}def\"".utf8))) { error in
            XCTAssertEqual((error as? JSONParseError)?.offset, 4)
        }
        XCTAssertThrowsError(try JSONValue.parse(#""abc"#)) { error in
            XCTAssertEqual((error as? JSONParseError)?.message, "unterminated string")
        }
    }

    func testParse_capsNestingDepth() {
        let deep = String(repeating: "[", count: 1000) + String(repeating: "]", count: 1000)
        XCTAssertThrowsError(try JSONValue.parse(deep)) { error in
            XCTAssertTrue("\(error)".contains("nesting"), "\(error)")
        }
    }

    func testSerialize_roundTripsAndKeepsKeyOrder() throws {
        let value = JSONValue.object([("z", .number(1)), ("a", .array([.null, .bool(true), .string("q\"\u{1}")]))])
        let text = value.serialized()
        XCTAssertEqual(text, #"{"z":1,"a":[null,true,"q\"\u0001"]}"#)
        XCTAssertEqual(try JSONValue.parse(text), value)
        XCTAssertEqual(try JSONValue.parse(value.serialized(pretty: true)), value)
    }

    func testNumbersBeyondAnyRange_parse_andReadAsNoInteger() throws {
        let json = try JSONValue.parse(#"{"big": 1e400, "small": -1e400, "wide": 123456789012345678901234567890}"#)
        XCTAssertEqual(json["big"]?.looseString, "1e400")
        XCTAssertNil(json["big"]?.looseInt64)
        XCTAssertNil(json["small"]?.looseInt64)
        XCTAssertNil(json["wide"]?.looseInt64)
    }
}
