import Foundation
import XCTest
import SettleBase
import SettleOneStore
@testable import SettleOneStoreModule

/// PNS signatures (one-store.md section 7): `SHA512withRSA` with the license key over the message
/// without its `signature` member — as received, or re-serialized compactly in the received order.
final class OneStorePNSTests: XCTestCase {
    static let key = try! RSAPrivateKey(pem: RSAPrivateKey.generatePEM())
    var license: RSAPublicKey { try! RSAPublicKey(subjectPublicKeyInfo: Self.key.subjectPublicKeyInfo) }

    func signed(_ message: String, key: RSAPrivateKey = OneStorePNSTests.key) throws -> String {
        try key.signSHA512(Data(message.utf8)).base64EncodedString()
    }

    func verifies(_ body: String) -> Bool {
        guard let json = try? JSONValue.parse(body), let members = json.objectMembers, case let .string(signature)? = json["signature"] else {
            return false
        }
        return OneStorePNSInbox.verifies(raw: Data(body.utf8), members: members, signature: signature, key: license)
    }

    func testTheMessageWithoutItsSignature_verifies_asReceived_andAsCompactJSON() throws {
        let message = #"{"msgVersion":"3.1.0","purchaseId":"P1","purchaseState":"COMPLETED","productName":"젬 100"}"#
        let signature = try signed(message)
        XCTAssertTrue(verifies(String(message.dropLast()) + #","signature":"\#(signature)"}"#), "signature last")
        XCTAssertTrue(verifies(#"{"signature":"\#(signature)","# + message.dropFirst()), "signature first")
        // Sent pretty-printed but signed compact: the compact re-serialization verifies.
        let pretty = "{\n  \"msgVersion\": \"3.1.0\",\n  \"purchaseId\": \"P1\",\n  \"purchaseState\": \"COMPLETED\",\n  \"productName\": \"젬 100\",\n  \"signature\": \"\(signature)\"\n}"
        XCTAssertTrue(verifies(pretty))
    }

    func testAChangedMessage_anotherKey_orNoSignature_doesNotVerify() throws {
        let message = #"{"msgVersion":"3.1.0","purchaseId":"P1","purchaseState":"COMPLETED"}"#
        let signature = try signed(message)
        XCTAssertFalse(verifies(#"{"msgVersion":"3.1.0","purchaseId":"P2","purchaseState":"COMPLETED","signature":"\#(signature)"}"#))
        let forger = try RSAPrivateKey(pem: RSAPrivateKey.generatePEM())
        XCTAssertFalse(verifies(String(message.dropLast()) + #","signature":"\#(try signed(message, key: forger))"}"#))
        XCTAssertFalse(verifies(String(message.dropLast()) + #","signature":"not base64!"}"#))
        XCTAssertFalse(verifies(message))
    }

    func testProofs_refuseATokenTheAPICannotAddress_andNeverQuoteIt() throws {
        XCTAssertThrowsError(try OneStoreProof(json: .object([("productId", .string("g")), ("purchaseToken", .string("abc/def")),
                                                              ("purchaseId", .string("1"))]))) { error in
            XCTAssertFalse("\(error)".contains("abc/def"))
        }
        let proof = try OneStoreProof(json: .object([("productId", .string("g")), ("purchaseToken", .string("a+b=c%")), ("purchaseId", .string("1"))]))
        XCTAssertEqual(proof.storeProof.key, "1")
        XCTAssertEqual(OneStoreProof(proof.storeProof), proof)
        XCTAssertEqual(OneStoreClient.segmentForTests("a+b=c%"), "a%2Bb%3Dc%25")
    }
}
