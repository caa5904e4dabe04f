import Foundation
import SettleApp
import SettleTesting
import XCTest
import SettleBase
import SettleAppStore

/// Checking legacy app receipts' PKCS#7 signatures with OpenSSL (apple-protocol.md 3.7), with
/// receipts really signed by the test PKI and by a self-made key.
final class AppReceiptSignatureTests: XCTestCase {
    let bundleId = "com.example.game"
    let purchases = [
        AppReceipt.Purchase(productId: "com.example.game.coins100", transactionId: "2000000000000001", quantity: 1),
        AppReceipt.Purchase(productId: "com.example.game.monthly", transactionId: "2000000000000003",
                            originalTransactionId: "2000000000000002"),
    ]

    func text(_ name: String) throws -> String {
        try String(contentsOfFile: TestWorld.fixture("apple/\(name)"), encoding: .utf8)
    }

    func signature(root: String = "test-chain/testCA.pem") throws -> AppReceiptSignature {
        AppReceiptSignature(rootCertificates: try X509Certificate.load(path: TestWorld.fixture("apple/\(root)")))
    }

    func assertFails(_ result: Result<VerifiedAppReceipt, ReceiptSignatureFailure>, _ code: String,
                     file: StaticString = #filePath, line: UInt = #line) {
        switch result {
        case .success: XCTFail("verified, expected \(code)", file: file, line: line)
        case let .failure(failure): XCTAssertEqual(failure.code, code, "\(failure)", file: file, line: line)
        }
    }

    func testReceiptSignedByTheTestChain_verifiesAgainstTheTestRoot() throws {
        let receipt = try AppReceiptBuilder.buildSignedByTestChain(bundleId: bundleId, environment: "Sandbox", purchases: purchases)
        let verified = try signature().verify(base64: receipt).get()
        XCTAssertEqual(verified.receipt.bundleId, bundleId)
        XCTAssertEqual(verified.receipt.environment, "Sandbox")
        XCTAssertEqual(verified.receipt.transactionIds, ["2000000000000001", "2000000000000003", "2000000000000002"])
        XCTAssertEqual(verified.creationDate, Date(timeIntervalSince1970: 1_795_946_645))
        XCTAssertTrue(verified.signer.contains("Leaf"), verified.signer)
    }

    func testCertificates_areCheckedAtTheCreationDate_notNow() throws {
        // The test chain is valid 2023-01-05 to 2033-01-01.
        for date in ["2034-01-01T00:00:00Z", "2022-06-01T00:00:00Z"] {
            let receipt = try AppReceiptBuilder.buildSignedByTestChain(bundleId: bundleId, purchases: purchases, creationDate: date)
            assertFails(try signature().verify(base64: receipt), "receipt_chain_invalid")
        }
        let withFraction = try AppReceiptBuilder.buildSignedByTestChain(bundleId: bundleId, purchases: purchases,
                                                                        creationDate: "2024-03-01T12:00:00.250Z")
        XCTAssertNoThrow(try signature().verify(base64: withFraction).get())
    }

    func testReceiptSignedByASelfMadeKey_fails() throws {
        let receipt = try AppReceiptBuilder.build(bundleId: bundleId, purchases: purchases, creationDate: AppReceiptBuilder.testCreationDate,
                                                  signerCertificatePEM: text("self-made/selfMade.pem"),
                                                  signerKeyPEM: text("self-made/selfMade.key"))
        assertFails(try signature().verify(base64: receipt), "receipt_chain_invalid")
    }

    func testReceiptAlteredAfterSigning_fails() throws {
        let receipt = try AppReceiptBuilder.buildSignedByTestChain(bundleId: bundleId, purchases: purchases)
        var der = try [UInt8](XCTUnwrap(Data(base64Encoded: receipt)))
        // Another customer's id, same length, so the structure still parses.
        let original = Array("2000000000000001".utf8), forged = Array("2000000000000009".utf8)
        let start = try XCTUnwrap((0...(der.count - original.count)).first { Array(der[$0..<$0 + original.count]) == original })
        der.replaceSubrange(start..<start + forged.count, with: forged)
        let altered = Data(der).base64EncodedString()
        XCTAssertEqual(try AppReceipt.parse(base64: altered).transactionIds.first, "2000000000000009")
        assertFails(try signature().verify(base64: altered), "receipt_signature_invalid")
    }

    func testReceipt_againstAnotherRoot_fails() throws {
        let receipt = try AppReceiptBuilder.buildSignedByTestChain(bundleId: bundleId, purchases: purchases)
        assertFails(try signature(root: "roots/AppleIncRootCA.pem").verify(base64: receipt), "receipt_chain_invalid")
        assertFails(try signature(root: "roots/AppleRootCA-G3.pem").verify(base64: receipt), "receipt_chain_invalid")
    }

    func testReceiptWithoutItsIntermediate_fails() throws {
        let receipt = try AppReceiptBuilder.build(bundleId: bundleId, purchases: purchases, creationDate: AppReceiptBuilder.testCreationDate,
                                                  signerCertificatePEM: text("test-chain/testLeaf.pem"),
                                                  signerKeyPEM: text("test-chain/testLeaf.key"))
        assertFails(try signature().verify(base64: receipt), "receipt_chain_invalid")
    }

    /// A receipt signed with the test leaf's key by `signer` (all test leaves share that key).
    func receipt(signer: String, key: String = "testLeaf.key", chain: [String]) throws -> String {
        try AppReceiptBuilder.build(bundleId: bundleId, purchases: purchases, creationDate: AppReceiptBuilder.testCreationDate,
                                    signerCertificatePEM: text("test-chain/\(signer)"), signerKeyPEM: text("test-chain/\(key)"),
                                    chainPEM: chain.map { try text("test-chain/\($0)") })
    }

    func testReceiptSignedByALeafWithoutTheReceiptMarker_underTheWWDRIntermediate_fails() throws {
        // What a developer's push or Pass Type certificate is: issued by the WWDR intermediate
        // under Apple's root, but not a receipt signer; its key is the developer's.
        let forged = try receipt(signer: "testInvalidOIDLeaf.pem", chain: ["testIntermediate.pem"])
        guard case let .failure(failure) = try signature().verify(base64: forged) else { return XCTFail("verified") }
        XCTAssertEqual(failure.code, "receipt_chain_invalid")
        XCTAssertTrue(failure.description.contains("1.2.840.113635.100.6.11.1"), "\(failure)")
    }

    func testReceiptUnderAnIntermediateWithoutTheWWDRMarker_fails() throws {
        let forged = try receipt(signer: "testInvalidIntermediateLeaf.pem", chain: ["testInvalidOIDIntermediate.pem"])
        guard case let .failure(failure) = try signature().verify(base64: forged) else { return XCTFail("verified") }
        XCTAssertEqual(failure.code, "receipt_chain_invalid")
        XCTAssertTrue(failure.description.contains("1.2.840.113635.100.6.2.1"), "\(failure)")
    }

    func testReceiptSignedByTheIntermediateItself_fails_aCAIsNeverTheLeaf() throws {
        let forged = try receipt(signer: "testIntermediate.pem", key: "testIntermediate.key", chain: ["testCA.pem"])
        guard case let .failure(failure) = try signature().verify(base64: forged) else { return XCTFail("verified") }
        XCTAssertEqual(failure.code, "receipt_chain_invalid")
    }

    func testReceiptCarryingBothIntermediates_verifiesThroughTheOneThatIssuedItsLeaf() throws {
        // Same subject name, different keys: the marker-less one is tried and passed over.
        let receipt = try receipt(signer: "testLeaf.pem", chain: ["testInvalidOIDIntermediate.pem", "testIntermediate.pem"])
        XCTAssertNoThrow(try signature().verify(base64: receipt).get())
    }

    func testReceiptWithNoSignerInfo_fails() throws {
        let payload = AppReceiptBuilder.payload(bundleId: bundleId, environment: "Production", purchases: purchases,
                                                creationDate: AppReceiptBuilder.testCreationDate)
        let der = try AppReceiptBuilder.unsigned(payload, certificatesPEM: [text("test-chain/testLeaf.pem"),
                                                                            text("test-chain/testIntermediate.pem")])
        XCTAssertEqual(try AppReceipt.parse(der: Data(der)).transactionIds.count, 3, "readable, just unsigned")
        assertFails(try signature().verify(base64: Data(der).base64EncodedString()), "receipt_unsigned")
    }

    func testReceiptWithoutACreationDate_fails() throws {
        let receipt = try AppReceiptBuilder.build(bundleId: bundleId, purchases: purchases,
                                                  signerCertificatePEM: text("test-chain/testLeaf.pem"),
                                                  signerKeyPEM: text("test-chain/testLeaf.key"),
                                                  chainPEM: [text("test-chain/testIntermediate.pem")])
        assertFails(try signature().verify(base64: receipt), "receipt_creation_date_invalid")
    }

    func testGenuineAppleReceipt_verifiesThroughApplesReceiptChain_atItsCreationDate() throws {
        let receipt = try text("receipts/genuine-sandbox-receipt-2016.b64")
        let verified = try signature(root: "roots/AppleIncRootCA.pem").verify(base64: receipt).get()
        XCTAssertEqual(verified.receipt.bundleId, "com.zhihu.test")
        XCTAssertEqual(verified.creationDate, try XCTUnwrap(ISO8601DateFormatter().date(from: "2016-07-23T06:21:11Z")))
        XCTAssertTrue(verified.signer.contains("Receipt Signing"), verified.signer)
        assertFails(try signature().verify(base64: receipt), "receipt_chain_invalid")
    }

    func testXcodeReceipt_signedByItsOwnStoreKitCertificate_fails() throws {
        let receipt = try text("receipts/xcode-app-receipt-empty.b64")
        XCTAssertNoThrow(try AppReceipt.parse(base64: receipt))
        guard case let .failure(failure) = try signature().verify(base64: receipt) else { return XCTFail("verified") }
        XCTAssertTrue(["receipt_chain_invalid", "receipt_creation_date_invalid"].contains(failure.code), "\(failure)")
    }

    func testNotAReceipt_isUnreadable() throws {
        assertFails(try signature().verify(base64: Data("hello".utf8).base64EncodedString()), "receipt_unreadable")
        assertFails(try signature().verify(base64: "%%%"), "receipt_unreadable")
    }

    func testFailureCodes_areStable() {
        let failures: [(ReceiptSignatureFailure, String)] = [
            (.unreadable(.transactionReceiptFormat), "receipt_unreadable"), (.unsigned, "receipt_unsigned"),
            (.creationDateInvalid("x"), "receipt_creation_date_invalid"), (.chainInvalid("x"), "receipt_chain_invalid"),
            (.signatureInvalid("x"), "receipt_signature_invalid"),
        ]
        for (failure, code) in failures {
            XCTAssertEqual(failure.code, code)
            XCTAssertTrue(failure.description.hasPrefix(code))
        }
    }
}
