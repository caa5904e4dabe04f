import Foundation
import XCTest
@testable import SettleCore

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

    func testLowercaseHex_writesEveryByteValueAsTwoDigits() {
        let all = (0...255).map { UInt8($0) }
        XCTAssertEqual(LowercaseHex.encode(all), all.map { String(format: "%02x", $0) }.joined())
        XCTAssertEqual(LowercaseHex.encode([UInt8]()), "")
    }
}
