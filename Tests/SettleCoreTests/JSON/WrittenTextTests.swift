import Foundation
import XCTest
@testable import SettleBase

/// Text settle writes as bytes (JSON, RFC 3339 times) reads exactly as it did when it was
/// joined from strings.
final class WrittenTextTests: XCTestCase {
    func testPrettyJSON_indentsTwoSpacesPerLevel() {
        let value = JSONValue.object([("a", .array([.number("1"), .object([])])), ("b", .array([])),
                                      ("c", .object([("d", .null)]))])
        XCTAssertEqual(value.serialized(pretty: true),
                       "{\n  \"a\": [\n    1,\n    {}\n  ],\n  \"b\": [],\n  \"c\": {\n    \"d\": null\n  }\n}")
        XCTAssertEqual(value.data, Data(value.serialized().utf8))
    }

    func testRFC3339_isWhatPaddingEachFieldWrites_forEveryKindOfTime() {
        for seconds: Int64 in [0, -1, 59, 951_782_400, 1_764_932_400, 253_402_300_799, 253_402_300_800, -62_167_219_200,
                               -62_167_219_201, 67_767_976_233_316_800, .max, .min] {
            var t = time_t(seconds)
            var parts = tm()
            gmtime_r(&t, &parts)
            let date = [Timestamp.padded(Int(parts.tm_year) + 1900, 4), Timestamp.padded(Int(parts.tm_mon) + 1, 2),
                        Timestamp.padded(Int(parts.tm_mday), 2)].joined(separator: "-")
            let time = [Timestamp.padded(Int(parts.tm_hour), 2), Timestamp.padded(Int(parts.tm_min), 2),
                        Timestamp.padded(Int(parts.tm_sec), 2)].joined(separator: ":")
            let expected = date + "T" + time + "Z"
            XCTAssertEqual(Timestamp.rfc3339(unixSeconds: seconds), expected, "\(seconds)")
        }
        XCTAssertEqual(Timestamp.rfc3339(unixSeconds: 1_764_932_400), "2025-12-05T11:00:00Z")
        XCTAssertEqual(Timestamp.rfc3339(unixSeconds: -62_167_219_201), "-001-12-31T23:59:59Z")
    }
}
