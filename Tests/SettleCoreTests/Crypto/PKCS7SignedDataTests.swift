import Foundation
import SettleTesting
import XCTest
import SettleBase

/// SettleBase's PKCS#7 signedData writer, read back by its reader.
final class PKCS7SignedDataTests: XCTestCase {
    func fixture(_ name: String) throws -> String {
        try String(contentsOfFile: TestWorld.fixture("apple/test-chain/\(name)"), encoding: .utf8)
    }

    func testSign_thenRead_verifiesTheContent_andCarriesTheSignerAndTheExtraCertificates() throws {
        let leaf = try XCTUnwrap(X509Certificate.parse(pem: fixture("testLeaf.pem")).first)
        let intermediate = try XCTUnwrap(X509Certificate.parse(pem: fixture("testIntermediate.pem")).first)
        let content = Data([0x31, 0x03, 0x04, 0x01, 0x2A])
        let der = try PKCS7SignedData.sign(content, certificate: leaf, privateKeyPEM: fixture("testLeaf.key"), carrying: [intermediate])

        let signed = try PKCS7SignedData(der: der)
        XCTAssertEqual(signed.signerCount, 1)
        XCTAssertEqual(signed.certificates.map(\.der), [leaf.der, intermediate.der])
        XCTAssertEqual(try signed.signerCertificates().map(\.der), [leaf.der])
        XCTAssertEqual(try signed.verifiedContent(), content)
    }

    func testSign_withAKeyThatIsNotTheCertificates_fails() throws {
        let leaf = try XCTUnwrap(X509Certificate.parse(pem: fixture("testLeaf.pem")).first)
        XCTAssertThrowsError(try PKCS7SignedData.sign(Data([0x31, 0x00]), certificate: leaf,
                                                      privateKeyPEM: fixture("testIntermediate.key"))) { error in
            XCTAssertTrue("\(error)".hasPrefix("PKCS7_sign failed"), "\(error)")
        }
    }

    func testUnsigned_carriesTheCertificates_butNoSigner_soItsContentNeverVerifies() throws {
        let leaf = try XCTUnwrap(X509Certificate.parse(pem: fixture("testLeaf.pem")).first)
        let signed = try PKCS7SignedData(der: PKCS7SignedData.unsigned(Data([0x31, 0x00]), carrying: [leaf]))
        XCTAssertEqual(signed.signerCount, 0)
        XCTAssertEqual(signed.certificates.map(\.der), [leaf.der])
        XCTAssertThrowsError(try signed.verifiedContent())
    }
}
