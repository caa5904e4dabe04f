import Foundation
import XCTest
@testable import SettleApp
@testable import SettleBase

final class X509CertificateTests: XCTestCase {
    func testLoad_readsAPEMRoot() throws {
        let certificates = try X509Certificate.load(path: JWSFixtures.path("roots/AppleRootCA-G3.pem"))
        XCTAssertEqual(certificates.count, 1)
        XCTAssertEqual(certificates[0].subjectSummary, "CN = Apple Root CA - G3, OU = Apple Certification Authority, O = Apple Inc., C = US")
    }

    func testLoad_readsADERFileAsApplePublishesIt() throws {
        let der = try X509Certificate.load(path: JWSFixtures.path("roots/AppleRootCA-G3.cer"))
        let pem = try JWSFixtures.appleRootG3()
        XCTAssertEqual(der.count, 1)
        XCTAssertEqual(der[0].der, pem.der)
    }

    func testLoad_readsEveryCertificateOfAPEMBundle_skippingTextBetweenBlocks() throws {
        let certificates = try X509Certificate.load(path: JWSFixtures.path("test-chain/testChain.pem"))
        XCTAssertEqual(certificates.map(\.subjectSummary), [
            "C = US, ST = CA, L = Cupertino, O = Leaf",
            "C = US, ST = CA, L = Cupertino, O = Intermediate",
            "C = US, ST = California, L = Cupertino",
        ])
    }

    func testLoad_failsForAMissingFileOrAFileWithoutCertificates() {
        XCTAssertThrowsError(try X509Certificate.load(path: JWSFixtures.path("roots/missing.pem")))
        XCTAssertThrowsError(try X509Certificate.load(path: JWSFixtures.path("test-chain/testLeaf.key"))) { error in
            XCTAssertTrue("\(error)".contains("no PEM certificate"), "\(error)")
        }
    }

    func testInitDER_roundTripsAndRefusesTrailingBytesOrGarbage() throws {
        let root = try JWSFixtures.appleRootG3()
        XCTAssertEqual(try X509Certificate(der: root.der).der, root.der)
        XCTAssertThrowsError(try X509Certificate(der: root.der + Data([0])))
        XCTAssertThrowsError(try X509Certificate(der: Data()))
        XCTAssertThrowsError(try X509Certificate(der: Data("not a certificate".utf8)))
        XCTAssertThrowsError(try X509Certificate(der: root.der.prefix(100)))
    }

    func testValidityPeriod_isReadInUTC() throws {
        let root = try JWSFixtures.appleRootG3()
        XCTAssertEqual(root.notBefore, Date(timeIntervalSince1970: 1_398_881_946))  // 2014-04-30T18:19:06Z
        XCTAssertEqual(root.notAfter, Date(timeIntervalSince1970: 2_187_800_346))   // 2039-04-30T18:19:06Z
        XCTAssertTrue(root.isValid(at: Date(timeIntervalSince1970: 1_700_000_000)))
        XCTAssertFalse(root.isValid(at: Date(timeIntervalSince1970: 1_300_000_000)))
        XCTAssertFalse(root.isValid(at: Date(timeIntervalSince1970: 2_200_000_000)))
    }

    func testChainFacts_ofTheTestPKI() throws {
        let root = try JWSFixtures.certificate("test-chain/testCA.pem")
        let intermediate = try JWSFixtures.certificate("test-chain/testIntermediate.pem")
        let leaf = try JWSFixtures.certificate("test-chain/testLeaf.pem")
        XCTAssertTrue(intermediate.isCertificateAuthority)
        XCTAssertFalse(leaf.isCertificateAuthority)
        XCTAssertTrue(intermediate.isNamed(issuedBy: root) && intermediate.isSigned(by: root))
        XCTAssertTrue(leaf.isNamed(issuedBy: intermediate) && leaf.isSigned(by: intermediate))
        XCTAssertFalse(leaf.isSigned(by: root))
        XCTAssertTrue(leaf.hasExtension(oid: "1.2.840.113635.100.6.11.1"))
        XCTAssertFalse(leaf.hasExtension(oid: "1.2.840.113635.100.6.2.1"))
        XCTAssertTrue(intermediate.hasExtension(oid: "1.2.840.113635.100.6.2.1"))
        XCTAssertFalse(leaf.hasExtension(oid: "not an oid"))
        XCTAssertFalse(leaf.hasUnprocessableExtensions)
    }
}
