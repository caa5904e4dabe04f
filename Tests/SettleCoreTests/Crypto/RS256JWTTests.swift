import XCTest
@testable import SettleApp
@testable import SettleBase

final class RS256JWTTests: XCTestCase {
    private static let key = try! RSAPrivateKey(pem: RSAPrivateKey.generatePEM())

    private func keySet(_ key: RSAPublicKey = RS256JWTTests.key.publicKey, id: String = "k1") throws -> JSONWebKeySet {
        try JSONWebKeySet(json: JSONWebKeySet.document([(id, key)]).data)
    }

    func testSign_thenVerifyThroughAJWKSDocument_returnsTheClaims() throws {
        let token = try RS256JWT.sign(header: .object([("alg", .string("RS256")), ("kid", .string("k1"))]),
                                      claims: .object([("sub", .string("x"))]), key: Self.key)
        let verified = try RS256JWT.verify(token, keys: keySet()).get()
        XCTAssertEqual(verified.claims["sub"], .string("x"))
    }

    func testVerify_whenClaimsAltered_isBadSignature() throws {
        let token = try RS256JWT.sign(header: .object([("alg", .string("RS256")), ("kid", .string("k1"))]),
                                      claims: .object([("sub", .string("x"))]), key: Self.key)
        var parts = token.split(separator: ".").map(String.init)
        parts[1] = Base64URL.encode(JSONValue.object([("sub", .string("y"))]).data)
        XCTAssertEqual(RS256JWT.verify(parts.joined(separator: "."), keys: try keySet()), .failure(.badSignature))
    }

    func testVerify_whenAlgIsNoneOrHS256_isRefusedWhateverTheSignature() throws {
        for alg in ["none", "HS256", "ES256"] {
            let header = Base64URL.encode(JSONValue.object([("alg", .string(alg)), ("kid", .string("k1"))]).data)
            let claims = Base64URL.encode(JSONValue.object([("sub", .string("x"))]).data)
            XCTAssertEqual(RS256JWT.verify("\(header).\(claims).", keys: try keySet()), .failure(.unsupportedAlgorithm), alg)
        }
    }

    func testVerify_whenKidUnknownOrSignedByAnotherKey_isRefused() throws {
        let other = try RSAPrivateKey(pem: RSAPrivateKey.generatePEM())
        let byOther = try RS256JWT.sign(header: .object([("alg", .string("RS256")), ("kid", .string("k1"))]), claims: .object([]), key: other)
        XCTAssertEqual(RS256JWT.verify(byOther, keys: try keySet()), .failure(.badSignature))
        let unknownKid = try RS256JWT.sign(header: .object([("alg", .string("RS256")), ("kid", .string("k9"))]), claims: .object([]), key: Self.key)
        XCTAssertEqual(RS256JWT.verify(unknownKid, keys: try keySet()), .failure(.unknownKey))
        XCTAssertEqual(RS256JWT.verify("not a token", keys: try keySet()), .failure(.malformed))
    }

    func testRSAPrivateKey_whenGivenAnECKey_isRefusedWithoutQuotingIt() throws {
        let pem = try ES256PrivateKey.generatePEM()
        XCTAssertThrowsError(try RSAPrivateKey(pem: pem)) { error in
            XCTAssertTrue("\(error)".contains("not an RSA key"), "\(error)")
            XCTAssertFalse("\(error)".contains(pem.split(separator: "\n")[1]))
        }
    }

    func testJSONWebKeySet_skipsKeysNotForRS256_andRefusesASetWithNone() throws {
        let (n, e) = Self.key.publicKey.components
        let document = JSONValue.object([("keys", .array([
            .object([("kty", .string("EC")), ("kid", .string("ec")), ("crv", .string("P-256"))]),
            .object([("kty", .string("RSA")), ("kid", .string("enc")), ("use", .string("enc")),
                     ("n", .string(Base64URL.encode(n))), ("e", .string(Base64URL.encode(e)))]),
            .object([("kty", .string("RSA")), ("kid", .string("sig")), ("n", .string(Base64URL.encode(n))), ("e", .string(Base64URL.encode(e)))]),
        ]))])
        XCTAssertEqual(Set(try JSONWebKeySet(json: document.data).keys.keys), ["sig"])
        XCTAssertThrowsError(try JSONWebKeySet(json: Data(#"{"keys":[{"kty":"EC","kid":"x"}]}"#.utf8)))
    }
}
