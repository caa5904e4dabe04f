import Foundation
import XCTest
@testable import SettleApp
@testable import SettleBase

/// The hex forms stored in the ledger and sent in webhook signatures: lowercase, two digits
/// a byte, known answers.
final class DigestTests: XCTestCase {
    func testSHA256Hex_matchesTheFIPSVector() {
        XCTAssertEqual(SHA256.hex(Data("abc".utf8)), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
        XCTAssertEqual(SHA256.hex(Data()), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855")
    }

    func testHMACHex_matchesRFC4231TestCase2() {
        XCTAssertEqual(HMACSHA256.hex(key: Data("Jefe".utf8), message: Data("what do ya want for nothing?".utf8)),
                       "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843")
    }

    /// RFC 4231 test cases 6 (a key longer than SHA-256's block, hashed first) and an empty key,
    /// each asked twice among other keys: the kept keyed contexts never mix keys up.
    func testHMACHex_longAndEmptyKeys_andKeysTakenInTurn() {
        let long = Data(repeating: 0xaa, count: 131)
        let message = Data("Test Using Larger Than Block-Size Key - Hash Key First".utf8)
        let jefe = (Data("Jefe".utf8), Data("what do ya want for nothing?".utf8))
        for _ in 0..<2 {
            XCTAssertEqual(HMACSHA256.hex(key: long, message: message),
                           "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54")
            XCTAssertEqual(HMACSHA256.hex(key: jefe.0, message: jefe.1),
                           "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843")
            // HMAC-SHA256 with an empty key and message (a known value).
            XCTAssertEqual(HMACSHA256.hex(key: Data(), message: Data()),
                           "b613679a0814d9ec772f95d778c35fc5ff1697c493715653c6c712144292c5ad")
        }
        // More keys than are kept: each still answers its own.
        for index in 0..<20 {
            let key = Data("key-\(index)".utf8)
            XCTAssertEqual(HMACSHA256.hex(key: key, message: jefe.1), HMACSHA256.hex(key: key, message: jefe.1))
            XCTAssertNotEqual(HMACSHA256.hex(key: key, message: jefe.1), HMACSHA256.hex(key: Data("key-\(index + 1)".utf8), message: jefe.1))
        }
        XCTAssertEqual(HMACSHA256.hex(key: jefe.0, message: jefe.1),
                       "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843")
    }

    func testLowercaseHex_writesEveryByteValueAsTwoDigits() {
        let all = (0...255).map { UInt8($0) }
        XCTAssertEqual(LowercaseHex.encode(all), all.map { String(format: "%02x", $0) }.joined())
        XCTAssertEqual(LowercaseHex.encode([UInt8]()), "")
    }
}

/// The timestamp of every log line and hook payload, built without `String(format:)`.
final class TimestampTests: XCTestCase {
    func testRFC3339_isTheTextOfTheFormatItReplaced() {
        for seconds: Int64 in [0, 1, 59, 86_399, 951_782_400, 1_764_410_645, 4_102_444_800, 253_402_300_799, 253_402_300_800,
                               -1, -62_135_596_800, -62_167_219_200, -62_198_755_200, -100_000_000_000] {
            var t = time_t(seconds)
            var parts = tm()
            gmtime_r(&t, &parts)
            let expected = String(format: "%04d-%02d-%02dT%02d:%02d:%02dZ", Int(parts.tm_year) + 1900, Int(parts.tm_mon) + 1,
                                  Int(parts.tm_mday), Int(parts.tm_hour), Int(parts.tm_min), Int(parts.tm_sec))
            XCTAssertEqual(Timestamp.rfc3339(unixSeconds: seconds), expected, "\(seconds)")
        }
        XCTAssertEqual(Timestamp.rfc3339(unixSeconds: 1_764_410_645), "2025-11-29T10:04:05Z")
        XCTAssertEqual(Timestamp.rfc3339(milliseconds: -1), "1969-12-31T23:59:59Z")
    }
}
