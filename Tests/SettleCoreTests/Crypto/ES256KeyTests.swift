import Foundation
import XCTest
@testable import SettleApp
@testable import SettleBase

final class ES256KeyTests: XCTestCase {
    func testInit_loadsTheP8KeyAppStoreConnectIssues() throws {
        let key = try ES256PrivateKey(pem: JWSFixtures.text("test-chain/testSigningKey.p8"))
        XCTAssertEqual(key.publicKeyDER.count, 91)  // SubjectPublicKeyInfo of an uncompressed P-256 point
    }

    func testInit_loadsASEC1ECKey_whosePublicHalfMatchesItsCertificate() throws {
        let key = try ES256PrivateKey(pem: JWSFixtures.text("test-chain/testLeaf.key"))
        let certificate = try JWSFixtures.certificate("test-chain/testLeaf.pem")
        let fromCertificate = try ES256PublicKey(certificate: certificate)
        let signature = try key.sign(Data("hello".utf8))
        XCTAssertTrue(ES256.verify(signature: signature, message: Data("hello".utf8), publicKey: fromCertificate))
        XCTAssertTrue(ES256.verify(signature: signature, message: Data("hello".utf8), certificate: certificate))
        XCTAssertNoThrow(try ES256PublicKey(der: key.publicKeyDER))
    }

    func testSign_returns64ByteSignaturesThatVerify_includingShortRAndS() throws {
        let key = try ES256PrivateKey(pem: JWSFixtures.text("test-chain/testSigningKey.p8"))
        let publicKey = try ES256PublicKey(der: key.publicKeyDER)
        // About one signature in 128 has an r or s shorter than 32 bytes; enough rounds make
        // it very likely that the left padding is exercised.
        for round in 0..<300 {
            let message = Data("message \(round)".utf8)
            let signature = try key.sign(message)
            XCTAssertEqual(signature.count, 64)
            XCTAssertTrue(ES256.verify(signature: signature, message: message, publicKey: publicKey), "round \(round)")
        }
    }

    func testVerify_failsForAChangedMessageSignatureOrKey() throws {
        let key = try ES256PrivateKey(pem: JWSFixtures.text("test-chain/testSigningKey.p8"))
        let other = try ES256PrivateKey(pem: JWSFixtures.text("test-chain/testLeaf.key"))
        let message = Data("pay 100 gems".utf8)
        let signature = try key.sign(message)
        XCTAssertTrue(ES256.verify(signature: signature, message: message, publicKey: key.publicKey))
        XCTAssertFalse(ES256.verify(signature: signature, message: Data("pay 900 gems".utf8), publicKey: key.publicKey))
        var changed = signature
        changed[10] ^= 0x01
        XCTAssertFalse(ES256.verify(signature: changed, message: message, publicKey: key.publicKey))
        XCTAssertFalse(ES256.verify(signature: signature, message: message, publicKey: other.publicKey))
    }

    func testVerify_refusesSignaturesThatAreNot64Bytes() throws {
        let key = try ES256PrivateKey(pem: JWSFixtures.text("test-chain/testSigningKey.p8"))
        let message = Data("m".utf8)
        let signature = try key.sign(message)
        XCTAssertFalse(ES256.verify(signature: Data(), message: message, publicKey: key.publicKey))
        XCTAssertFalse(ES256.verify(signature: signature.prefix(63), message: message, publicKey: key.publicKey))
        XCTAssertFalse(ES256.verify(signature: signature + Data([0]), message: message, publicKey: key.publicKey))
        XCTAssertFalse(ES256.verify(signature: Data(repeating: 0, count: 64), message: message, publicKey: key.publicKey))
        let der = try XCTUnwrap(ECDSASignature.der(fromRaw: signature))
        XCTAssertFalse(ES256.verify(signature: Data(der), message: message, publicKey: key.publicKey))
    }

    func testSignatureConversion_roundTripsWithLeadingZeros() throws {
        let raw = Data([0, 0, 0x7F] + [UInt8](repeating: 0x11, count: 29) + [0x80] + [UInt8](repeating: 0x22, count: 31))
        let der = try XCTUnwrap(ECDSASignature.der(fromRaw: raw))
        XCTAssertEqual(ECDSASignature.raw(fromDER: der), raw)
    }

    func testInit_refusesKeysThatAreNotP256_withoutQuotingThem() {
        let refused: [(String, String, String)] = [
            ("RSA", TestKeys.rsa, "not an EC key (RSA)"),
            ("P-384", TestKeys.p384, "curve secp384r1"),
            ("secp256k1", TestKeys.secp256k1, "curve secp256k1"),
            ("Ed25519", TestKeys.ed25519, "not an EC key (ED25519)"),
        ]
        for (name, pem, expected) in refused {
            XCTAssertThrowsError(try ES256PrivateKey(pem: pem), name) { error in
                let message = (error as? CryptoError)?.message ?? "\(error)"
                XCTAssertTrue(message.contains(expected), "\(name): \(message)")
                XCTAssertTrue(message.contains("P-256"), "\(name): \(message)")
                TestKeys.assertDoesNotQuote(pem, in: message)
            }
        }
    }

    func testInit_refusesEncryptedPublicAndGarbageKeys_withoutPrompting() throws {
        for pem in [TestKeys.encryptedP256, TestKeys.p256PublicOnly, "", "just text",
                    "-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n"] {
            XCTAssertThrowsError(try ES256PrivateKey(pem: pem)) { error in
                TestKeys.assertDoesNotQuote(pem, in: "\(error)")
            }
        }
    }

    func testPublicKeyDER_refusesNonP256Keys() throws {
        let root = try JWSFixtures.appleRootG3()  // an EC P-384 key
        XCTAssertThrowsError(try ES256PublicKey(certificate: root))
        XCTAssertFalse(ES256.verify(signature: Data(count: 64), message: Data(), certificate: root))
        XCTAssertThrowsError(try ES256PublicKey(der: Data("garbage".utf8)))
    }
}

/// Throwaway keys of the wrong kinds, generated with `openssl genpkey` for these tests only.
private enum TestKeys {
    static let rsa = """
        -----BEGIN PRIVATE KEY-----
        MIIBUwIBADANBgkqhkiG9w0BAQEFAASCAT0wggE5AgEAAkEAwYubxh+euCRPOxjm
        1LT+kwxaP8g+rWBD8LeAf715PK+KJhvc6ugWMaMUCl1dzb2qp63bEHXXpkV/dQf+
        +Ppe6wIDAQABAkBCJvWXQjd9uOtbx6ceDL72g8JVCpxhpgWSwSWqg5hspPqssKL3
        /tTN2b3Uouhs6iNGtuC8sa10O8H+pxNMfXABAiEA61wUUKesg/2+TCuEuYzvJ2n0
        jiQhMTS4V0GbIk3Y49ECIQDShMe8EpJ2/rLo/HXurZPQNteR0cntsLb1y9MOjDgx
        +wIgDG3ncL76IFpVI2ak8ruboaQ50wvbaOLU3V7Ml4ou6xECIANTG4Bp3qxIa3To
        f8hML3hrVU41PPYnA0ywcl3Zcw2/AiBxYYpgIPxLW2lUO2n/WxNmjUNzGoRPI4wp
        7Ypo7Pz2ww==
        -----END PRIVATE KEY-----
        """

    static let p384 = """
        -----BEGIN PRIVATE KEY-----
        MIG2AgEAMBAGByqGSM49AgEGBSuBBAAiBIGeMIGbAgEBBDBz+hrwp4Mf6/PH/8vp
        ftQ1BoRdLMJWfneU0//PFgS23xInwAx4ebpb9LuGO1S1BNmhZANiAAQd15Uxjjz3
        X3noowUoFYLvXs7HgeneFSHyzUwEHcGDNCFIdKmnmQOBpMJ3Yj2JjUnvXwBC8ja+
        ry3v20lb0H2GNUMi7TNRKX5NfjzY8aO9gkeCbQ9dmb7rhoYmbFNpmNo=
        -----END PRIVATE KEY-----
        """

    static let secp256k1 = """
        -----BEGIN EC PRIVATE KEY-----
        MHQCAQEEIEdKsiAk9/XB1V+Q80lulBEkfl1eNUCRUCj0Pp6HtcvgoAcGBSuBBAAK
        oUQDQgAEo4C2qODd8VCG07UEGhoWsPLe424tHoJRh0LlZSbfpLchaX+InC2+eKxw
        /9+NT81llY66QQwriWkFIdEZ02gMZw==
        -----END EC PRIVATE KEY-----
        """

    static let ed25519 = """
        -----BEGIN PRIVATE KEY-----
        MC4CAQAwBQYDK2VwBCIEIGhWmAM7T4Vuy7P+52zo1XO63gL332tT8GqNKDzvOf/p
        -----END PRIVATE KEY-----
        """

    /// A P-256 key encrypted with the passphrase "secret".
    static let encryptedP256 = """
        -----BEGIN ENCRYPTED PRIVATE KEY-----
        MIHsMFcGCSqGSIb3DQEFDTBKMCkGCSqGSIb3DQEFDDAcBAixwBCHwrbnPwICCAAw
        DAYIKoZIhvcNAgkFADAdBglghkgBZQMEAQIEECbp32kVgpeiQ7FHS5GNReIEgZB0
        DhVpS+tQuCd9JTswBdAMozoiVYfY3rDGRrShIOE5qHNDkgiE5qaLmlCyyn1yJ+za
        dk2DUBOihUuUNe4DmDtGD7bQPoUiMy+MWiLkTzLmr5TL3q78rBwuoH/TkziK9xQ6
        LbSi6MQcc5DNpF4JqOcO0Z3LJITkWQkYxm88eLykhK6eewdXmhX3VFnIYGlPF1I=
        -----END ENCRYPTED PRIVATE KEY-----
        """

    /// The public half of testLeaf.key: a key, but not a private one.
    static let p256PublicOnly = """
        -----BEGIN PUBLIC KEY-----
        MFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAE4rWBxGmFbnPIPQI0zsBKzLxsj8pD
        2vqbr0yPISUx2WQyxmrNql9fhK8YEEyYFV7++p5i4YUSR/o9uQIgCPIhrA==
        -----END PUBLIC KEY-----
        """

    /// No line of the key's base64 body may appear in an error message.
    static func assertDoesNotQuote(_ pem: String, in message: String, file: StaticString = #filePath, line: UInt = #line) {
        for bodyLine in pem.split(separator: "\n") where !bodyLine.hasPrefix("-----") && bodyLine.count >= 8 {
            XCTAssertFalse(message.contains(bodyLine), "message quotes the key: \(message)", file: file, line: line)
        }
    }
}
