import Foundation
import XCTest
@testable import SettleApp
@testable import SettleBase

final class Base64URLTests: XCTestCase {
    func testEncode_matchesRFC4648VectorsWithoutPadding() {
        let vectors = ["": "", "f": "Zg", "fo": "Zm8", "foo": "Zm9v", "foob": "Zm9vYg", "fooba": "Zm9vYmE", "foobar": "Zm9vYmFy"]
        for (plain, encoded) in vectors {
            XCTAssertEqual(Base64URL.encode(Data(plain.utf8)), encoded)
            XCTAssertEqual(Base64URL.decode(encoded), Data(plain.utf8))
        }
    }

    func testEncode_usesTheURLSafeAlphabet() {
        XCTAssertEqual(Base64URL.encode(Data([0xFB, 0xFF, 0xBF])), "-_-_")
        XCTAssertEqual(Base64URL.decode("-_-_"), Data([0xFB, 0xFF, 0xBF]))
    }

    func testRoundTrip_forEveryLengthUpTo64() {
        var generator = SystemRandomNumberGenerator()
        for length in 0...64 {
            let data = Data((0..<length).map { _ in UInt8.random(in: 0...255, using: &generator) })
            XCTAssertEqual(Base64URL.decode(Base64URL.encode(data)), data, "length \(length)")
        }
    }

    func testDecode_rejectsStandardBase64CharactersAndPadding() {
        XCTAssertNil(Base64URL.decode("+_8"))
        XCTAssertNil(Base64URL.decode("/_8"))
        XCTAssertNil(Base64URL.decode("Zg=="))
        XCTAssertNil(Base64URL.decode("Zm8="))
    }

    func testDecode_rejectsWhitespaceAndOtherCharacters() {
        XCTAssertNil(Base64URL.decode("Zm9v\n"))
        XCTAssertNil(Base64URL.decode(" Zm9v"))
        XCTAssertNil(Base64URL.decode("Zm.v"))
        XCTAssertNil(Base64URL.decode("Zm9é"))
    }

    func testDecode_rejectsImpossibleLengthsAndNonCanonicalTrailingBits() {
        XCTAssertNil(Base64URL.decode("Z"))
        XCTAssertNil(Base64URL.decode("Zm9vY"))
        // "Zh" decodes to the same byte as "Zg" if the unused low bits were ignored.
        XCTAssertNil(Base64URL.decode("Zh"))
        XCTAssertNil(Base64URL.decode("Zm9"))
    }
}
