import SettleTesting
import XCTest
@testable import SettleApp
@testable import SettleBase
@testable import SettleAppStore

final class BearerTokenSourceTests: XCTestCase {
    func testToken_carriesAppleRequiredHeaderAndClaims_signedWithTheKey() throws {
        let world = try TestWorld()
        let tokens = BearerTokenSource(issuerId: "issuer", keyId: "KID", bundleId: "com.example.game", key: world.signingKey,
                                       time: world.time)
        let token = try tokens.token()
        let parts = token.split(separator: ".").map(String.init)
        let header = try JSONValue.parse(try XCTUnwrap(Base64URL.decode(parts[0])))
        let claims = try JSONValue.parse(try XCTUnwrap(Base64URL.decode(parts[1])))
        XCTAssertEqual(header, .object([("alg", .string("ES256")), ("kid", .string("KID")), ("typ", .string("JWT"))]))
        XCTAssertEqual(claims["iss"], .string("issuer"))
        XCTAssertEqual(claims["aud"], .string("appstoreconnect-v1"))
        XCTAssertEqual(claims["bid"], .string("com.example.game"))
        let iat = try XCTUnwrap(claims["iat"]?.looseInt64), exp = try XCTUnwrap(claims["exp"]?.looseInt64)
        XCTAssertEqual(iat, world.time.unixSeconds)
        XCTAssertLessThanOrEqual(exp - iat, 3600)
        XCTAssertTrue(ES256.verify(signature: try XCTUnwrap(Base64URL.decode(parts[2])), message: Data("\(parts[0]).\(parts[1])".utf8),
                                   publicKey: world.signingKey.publicKey))
    }

    func testToken_isReusedUntilShortlyBeforeItExpires() throws {
        let world = try TestWorld()
        let tokens = BearerTokenSource(issuerId: "i", keyId: "k", bundleId: "b", key: world.signingKey, time: world.time)
        let first = try tokens.token()
        world.time.advance(by: 20 * 60)
        XCTAssertEqual(try tokens.token(), first)
        world.time.advance(by: 6 * 60)
        XCTAssertNotEqual(try tokens.token(), first)
    }
}
