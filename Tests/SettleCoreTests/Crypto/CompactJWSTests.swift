import Foundation
import XCTest
@testable import SettleApp
@testable import SettleBase

final class CompactJWSTests: XCTestCase {
    func testSign_producesThreeBase64URLPartsWhoseSignatureCoversTheFirstTwo() throws {
        let key = try ES256PrivateKey(pem: JWSFixtures.text("test-chain/testSigningKey.p8"))
        let header: JSONValue = .object([("alg", .string("ES256")), ("kid", .string("2X9R4HXF34")), ("typ", .string("JWT"))])
        let payload: JSONValue = .object([("iss", .string("57246542-96fe-1a63-e053-0824d011072a")),
                                          ("iat", .number(1_735_689_600)), ("aud", .string("appstoreconnect-v1"))])
        let token = try CompactJWS.sign(header: header, payload: payload, key: key)

        let parts = token.split(separator: ".", omittingEmptySubsequences: false)
        XCTAssertEqual(parts.count, 3)
        XCTAssertEqual(try JSONValue.parse(XCTUnwrap(Base64URL.decode(parts[0]))), header)
        XCTAssertEqual(try JSONValue.parse(XCTUnwrap(Base64URL.decode(parts[1]))), payload)
        let signature = try XCTUnwrap(Base64URL.decode(parts[2]))
        XCTAssertEqual(signature.count, 64)
        XCTAssertTrue(ES256.verify(signature: signature, message: Data("\(parts[0]).\(parts[1])".utf8), publicKey: key.publicKey))
        XCTAssertFalse(token.contains("="))
    }
}
