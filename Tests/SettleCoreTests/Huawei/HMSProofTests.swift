import Foundation
import XCTest
import SettleBase
import SettleModel
import SettleHuawei

/// HMS IAP's proofs and signatures (huawei-appgallery.md 2.4, 2.5): the exact bytes signed,
/// PKCS#1 v1.5 by default or PSS when Huawei says so, with the app's IAP public key as
/// AppGallery Connect shows it (base64 SubjectPublicKeyInfo).
final class HMSProofTests: XCTestCase {
    static let key = try! RSAPrivateKey(pem: RSAPrivateKey.generatePEM())
    let data = #"{"orderId":"HMS.1","productId":"coins","purchaseToken":"tok-1","purchaseState":0,"accountFlag":1}"#

    var publicKey: RSAPublicKey { try! RSAPublicKey(subjectPublicKeyInfo: Self.key.subjectPublicKeyInfo) }

    func testSignatures_verifyOverTheExactBytes_inBothPaddings_andNothingElse() throws {
        let pkcs1 = try Self.key.sign(Data(data.utf8)).base64EncodedString()
        let pss = try Self.key.signPSS(Data(data.utf8)).base64EncodedString()
        XCTAssertTrue(HMSProof.verify(data: data, signature: pkcs1, algorithm: nil, key: publicKey))
        XCTAssertTrue(HMSProof.verify(data: data, signature: pkcs1, algorithm: "SHA256WithRSA", key: publicKey))
        XCTAssertTrue(HMSProof.verify(data: data, signature: pss, algorithm: "SHA256WithRSA/PSS", key: publicKey))
        XCTAssertFalse(HMSProof.verify(data: data, signature: pss, algorithm: nil, key: publicKey), "a PSS signature is not PKCS#1")
        XCTAssertFalse(HMSProof.verify(data: data + " ", signature: pkcs1, algorithm: nil, key: publicKey), "re-serialized data is not what was signed")
        XCTAssertFalse(HMSProof.verify(data: data, signature: pkcs1, algorithm: "MD5WithRSA", key: publicKey))
        XCTAssertFalse(HMSProof.verify(data: data, signature: "not base64!", algorithm: nil, key: publicKey))
        let other = try RSAPrivateKey(pem: RSAPrivateKey.generatePEM())
        XCTAssertFalse(HMSProof.verify(data: data, signature: try other.sign(Data(data.utf8)).base64EncodedString(), algorithm: nil, key: publicKey))
        XCTAssertThrowsError(try RSAPublicKey(subjectPublicKeyInfo: ES256PrivateKey(pem: ES256PrivateKey.generatePEM()).publicKeyDER),
                             "an EC key is not an IAP public key")
    }

    func testProof_fromClientData_carriesItsIds_andTheBareFormNeedsTokenAndProduct() throws {
        let json = JSONValue.object([("inAppPurchaseData", .string(data)), ("inAppDataSignature", .string("c2ln"))])
        let proof = try HMSProof(json: json)
        XCTAssertEqual(proof.purchaseToken, "tok-1")
        XCTAssertEqual(proof.productId, "coins")
        XCTAssertEqual(proof.accountFlag, 1)
        XCTAssertEqual(proof.storeProof.key, "HMS.1", "found by HMS's order id")
        XCTAssertEqual(HMSProof(proof.storeProof), proof, "stored and read back unchanged")
        let bare = try HMSProof(json: .object([("purchaseToken", .string("tok-2")), ("productId", .string("gems")), ("accountFlag", .number(0))]))
        XCTAssertNil(bare.storeProof.key)
        for broken: JSONValue in [.object([("purchaseToken", .string("tok"))]),
                                  .object([("inAppPurchaseData", .string(data))]),
                                  .object([("inAppPurchaseData", .string("{}")), ("inAppDataSignature", .string("x"))]),
                                  .object([("purchaseToken", .string("tok\n")), ("productId", .string("gems"))])] {
            do {
                _ = try HMSProof(json: broken)
                XCTFail("accepted \(broken.serialized())")
            } catch {
                XCTAssertFalse(error.message.contains("tok"), "an error never quotes the proof: \(error.message)")
            }
        }
    }
}
