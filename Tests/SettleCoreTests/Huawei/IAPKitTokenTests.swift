import Foundation
import XCTest
@testable import SettleBase
@testable import SettleHuawei

/// The IAP Kit bearer JWT as huawei-appgallery.md 1.2 spells it, checked the way the
/// reference's simulator will check it.
final class IAPKitTokenTests: XCTestCase {
    func testToken_carriesTheFixedHeaderAndClaims_andTheLowercaseHexDigestOfTheExactBody() throws {
        let key = try ES256PrivateKey(pem: ES256PrivateKey.generatePEM())
        let time = ManualTimeSource(Date(timeIntervalSince1970: 1_760_000_000))
        let source = IAPKitToken(issuerId: "issuer-1", keyId: "kid-1", appId: "app-9", key: key, time: time)
        let body = Data(#"{"purchaseOrderId":"po-1","purchaseToken":"pt-1"}"#.utf8)

        let parts = try source.token(for: body).split(separator: ".")
        XCTAssertEqual(parts.count, 3)
        let header = try JSONValue.parse(XCTUnwrap(Base64URL.decode(parts[0])))
        let claims = try JSONValue.parse(XCTUnwrap(Base64URL.decode(parts[1])))
        XCTAssertEqual(header["alg"], .string("ES256"))
        XCTAssertEqual(header["typ"], .string("JWT"))
        XCTAssertEqual(header["kid"], .string("kid-1"))
        XCTAssertEqual(claims["iss"], .string("issuer-1"))
        XCTAssertEqual(claims["aud"], .string("iap-v1"))
        XCTAssertEqual(claims["aid"], .string("app-9"))
        XCTAssertEqual(claims["iat"], .number("1760000000"))
        XCTAssertEqual(claims["exp"], .number("1760003600"))
        XCTAssertEqual(claims["digest"], .string(SHA256.hex(body)))
        XCTAssertEqual(SHA256.hex(Data()), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855")

        let signature = try XCTUnwrap(Base64URL.decode(parts[2]))
        let message = Data((parts[0] + "." + parts[1]).utf8)
        XCTAssertTrue(ES256.verify(signature: signature, message: message, publicKey: key.publicKey))
        let tampered = Data((parts[0] + "." + Base64URL.encode(Data(#"{"aud":"iap-v1"}"#.utf8))).utf8)
        XCTAssertFalse(ES256.verify(signature: signature, message: tampered, publicKey: key.publicKey))
    }
}
