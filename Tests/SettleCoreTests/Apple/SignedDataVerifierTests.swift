import Foundation
import XCTest
@testable import SettleApp
@testable import SettleBase
@testable import SettleModel
@testable import SettleAppStore

/// The genuine Apple-signed renewal info, checked against Apple Root CA - G3.
final class SignedDataVerifierGenuineTests: XCTestCase {
    private func verifier(acceptSandbox: Bool = true) throws -> SignedDataVerifier {
        SignedDataVerifier(rootCertificates: [try JWSFixtures.appleRootG3()], bundleId: "co.ringalarm", acceptSandbox: acceptSandbox)
    }

    func testGenuineRenewalInfo_verifiesAtItsSignedDate_whateverTheTimeNow() throws {
        let token = try JWSFixtures.genuineRenewalInfo()
        let payload = try verifier().verifySignedData(token, now: Date()).get()
        XCTAssertEqual(payload["originalTransactionId"], .string("2000000335310644"))
        XCTAssertEqual(payload["productId"], .string("co.ringalarm.swtich.quarterly2"))
        XCTAssertEqual(payload["signedDate"], .number("1684822778492"))
    }

    func testGenuineRenewalInfo_failsWhenCheckedAtTodaysDate_becauseTheLeafExpired() throws {
        let token = try JWSFixtures.genuineRenewalInfo()
        let failure = assertRefused(try verifier().verifySignedData(token, checkTime: .fixed(Date())), "chain_invalid")
        XCTAssertTrue(failure?.description.contains("expired") == true, failure?.description ?? "")
    }

    func testGenuineRenewalInfo_failsWithSandboxNotAccepted() throws {
        let token = try JWSFixtures.genuineRenewalInfo()
        assertRefused(try verifier(acceptSandbox: false).verifySignedData(token, now: Date()), "environment_mismatch")
    }

    func testGenuineRenewalInfo_isNotATransaction_itsPayloadLacksABundleId() throws {
        let token = try JWSFixtures.genuineRenewalInfo()
        assertRefused(try verifier().verifyTransaction(token, now: Date()), "payload_invalid")
    }

    func testGenuineRenewalInfo_failsAgainstAnotherRoot() throws {
        let token = try JWSFixtures.genuineRenewalInfo()
        let verifier = SignedDataVerifier(rootCertificates: [try JWSFixtures.certificate("test-chain/testCA.pem")],
                                          bundleId: "co.ringalarm", acceptSandbox: true)
        assertRefused(verifier.verifySignedData(token, now: Date()), "chain_invalid")
        let noRoots = SignedDataVerifier(rootCertificates: [], bundleId: "co.ringalarm", acceptSandbox: true)
        assertRefused(noRoots.verifySignedData(token, now: Date()), "chain_invalid")
    }

    func testChangedHeaderByte_inTheIgnoredThirdCertificate_breaksTheSignature() throws {
        var parts = try genuineParts()
        var header = [UInt8](try XCTUnwrap(Base64URL.decode(parts[0])))
        // The last characters of the header are inside x5c[2], which verification ignores
        // except as part of the signed bytes.
        let index = header.count - 20
        header[index] = header[index] == UInt8(ascii: "A") ? UInt8(ascii: "B") : UInt8(ascii: "A")
        parts[0] = Base64URL.encode(Data(header))
        assertRefused(try verifier().verifySignedData(parts.joined(separator: "."), now: Date()), "signature_invalid")
    }

    func testChangedPayloadByte_breaksTheSignature() throws {
        var parts = try genuineParts()
        let payload = String(decoding: try XCTUnwrap(Base64URL.decode(parts[1])), as: UTF8.self)
        let changed = payload.replacingOccurrences(of: "quarterly2\"", with: "quarterly3\"")
        XCTAssertNotEqual(changed, payload)
        parts[1] = Base64URL.encode(Data(changed.utf8))
        assertRefused(try verifier().verifySignedData(parts.joined(separator: "."), now: Date()), "signature_invalid")
    }

    func testChangedSignatureByte_breaksTheSignature() throws {
        for index in [0, 31, 32, 63] {
            var parts = try genuineParts()
            var signature = try XCTUnwrap(Base64URL.decode(parts[2]))
            signature[index] ^= 0x01
            parts[2] = Base64URL.encode(signature)
            assertRefused(try verifier().verifySignedData(parts.joined(separator: "."), now: Date()), "signature_invalid")
        }
    }

    func testAnyChangedCharacter_isRefused() throws {
        let token = Array(try JWSFixtures.genuineRenewalInfo().utf8)
        let verifier = try verifier()
        // Every 11th position plus the ends of each part: a sample that crosses every
        // region (header JSON, each certificate, payload, signature, padding bits).
        var positions = Set(stride(from: 0, to: token.count, by: 11))
        for (index, byte) in token.enumerated() where byte == UInt8(ascii: ".") {
            positions.formUnion([index - 1, index + 1])
        }
        positions.insert(token.count - 1)
        for position in positions.sorted() where token[position] != UInt8(ascii: ".") {
            var changed = token
            changed[position] = token[position] == UInt8(ascii: "A") ? UInt8(ascii: "B") : UInt8(ascii: "A")
            if case .success = verifier.verifySignedData(String(decoding: changed, as: UTF8.self), now: Date()) {
                XCTFail("a change at \(position) was accepted")
            }
        }
    }

    func testOnlyTwoCertificates_isAChainLengthFailure() throws {
        let token = try rebuiltGenuine { x5c in Array(x5c.prefix(2)) }
        XCTAssertEqual(try verifier().verifySignedData(token, now: Date()), .failure(.invalidChainLength(2)))
    }

    func testReorderedCertificates_failTheChain() throws {
        for order in [[1, 0, 2], [0, 2, 1], [2, 1, 0]] {
            let token = try rebuiltGenuine { x5c in order.map { x5c[$0] } }
            assertRefused(try verifier().verifySignedData(token, now: Date()), "chain_invalid")
        }
    }

    private func genuineParts() throws -> [String] {
        try JWSFixtures.genuineRenewalInfo().split(separator: ".", omittingEmptySubsequences: false).map(String.init)
    }

    /// The genuine token with its x5c rearranged (the signature no longer matches, but the
    /// chain checks come first).
    private func rebuiltGenuine(_ transform: ([JSONValue]) -> [JSONValue]) throws -> String {
        var parts = try genuineParts()
        let header = try JSONValue.parse(XCTUnwrap(Base64URL.decode(parts[0])))
        let x5c = try XCTUnwrap(header["x5c"]?.arrayValue)
        let members = try XCTUnwrap(header.objectMembers).map { $0.0 == "x5c" ? ($0.0, JSONValue.array(transform(x5c))) : $0 }
        parts[0] = Base64URL.encode(JSONValue.object(members).data)
        return parts.joined(separator: ".")
    }
}

/// JWS minted with the test PKI (testCA -> testIntermediate -> testLeaf).
final class SignedDataVerifierTests: XCTestCase {
    private var pki: TestPKI!

    override func setUpWithError() throws {
        pki = try TestPKI()
    }

    func testValidTransaction_verifiesAndDecodesItsFields() throws {
        let payload = TestPKI.transaction([
            // Above 2^53: a Double would round it.
            ("transactionId", .number("20000000123456789")),
            ("expiresDate", .number("1738368000000")),
            ("signedDate", .number("1735689601234.5")),
            ("quantity", .number("3")),
            ("appAccountToken", .string("7e3fb20b-4cdb-47cc-936d-99d65f608138")),
        ])
        let transaction = try pki.verifier().verifyTransaction(pki.token(payload), now: Date()).get()
        XCTAssertEqual(transaction.transactionId, "20000000123456789")
        XCTAssertEqual(transaction.originalTransactionId, "2000000000000001")
        XCTAssertEqual(transaction.bundleId, TestPKI.bundleId)
        XCTAssertEqual(transaction.productId, "com.example.settle.gems100")
        XCTAssertEqual(transaction.purchaseDateMs, 1_735_689_600_000)
        XCTAssertEqual(transaction.expiresDateMs, 1_738_368_000_000)
        XCTAssertNil(transaction.revocationDateMs)
        XCTAssertEqual(transaction.signedDateMs, 1_735_689_601_234)
        XCTAssertEqual(transaction.quantity, 3)
        XCTAssertEqual(transaction.environment, .production)
        XCTAssertEqual(transaction.type, "Consumable")
        XCTAssertEqual(transaction.inAppOwnershipType, "PURCHASED")
        XCTAssertEqual(transaction.payload, payload)
    }

    func testRevokedTransaction_carriesItsRevocationDate() throws {
        let payload = TestPKI.transaction([("revocationDate", .number("1735776000000")), ("revocationReason", .number("1"))])
        let transaction = try pki.verifier().verifyTransaction(pki.token(payload), now: Date()).get()
        XCTAssertEqual(transaction.revocationDateMs, 1_735_776_000_000)
    }

    func testVerifySignedData_returnsThePayloadWithoutCheckingTheBundle() throws {
        let payload = TestPKI.transaction([("bundleId", .null)])
        XCTAssertEqual(try pki.verifier().verifySignedData(pki.token(payload), now: Date()).get(), payload)
    }

    func testWrongRoot_failsTheChain() throws {
        let token = try pki.token(TestPKI.transaction())
        let verifier = pki.verifier(roots: [try JWSFixtures.appleRootG3()])
        assertRefused(verifier.verifyTransaction(token, now: Date()), "chain_invalid")
    }

    func testLeafWithTheWrongMarkerOID_failsTheChain() throws {
        let token = try pki.token(TestPKI.transaction(), chain: ["testInvalidOIDLeaf.pem", "testIntermediate.pem", "testCA.pem"])
        let failure = assertRefused(pki.verifier().verifyTransaction(token, now: Date()), "chain_invalid")
        XCTAssertTrue(failure?.description.contains("1.2.840.113635.100.6.11.1") == true, failure?.description ?? "")
    }

    func testIntermediateWithTheWrongMarkerOID_failsTheChain() throws {
        let chain = ["testInvalidIntermediateLeaf.pem", "testInvalidOIDIntermediate.pem", "testCA.pem"]
        let token = try pki.token(TestPKI.transaction(), chain: chain)
        let failure = assertRefused(pki.verifier().verifyTransaction(token, now: Date()), "chain_invalid")
        XCTAssertTrue(failure?.description.contains("1.2.840.113635.100.6.2.1") == true, failure?.description ?? "")
    }

    func testLeafUnderTheWrongIntermediate_failsTheChain() throws {
        let chain = ["testLeaf.pem", "testInvalidOIDIntermediate.pem", "testCA.pem"]
        assertRefused(pki.verifier().verifyTransaction(try pki.token(TestPKI.transaction(), chain: chain), now: Date()), "chain_invalid")
    }

    func testLeafInPlaceOfTheIntermediate_failsTheChain() throws {
        let chain = ["testLeaf.pem", "testLeaf.pem", "testCA.pem"]
        assertRefused(pki.verifier().verifyTransaction(try pki.token(TestPKI.transaction(), chain: chain), now: Date()), "chain_invalid")
    }

    func testSignedAfterTheCertificatesExpired_failsTheChain() throws {
        let token = try pki.token(TestPKI.transaction([("signedDate", .number("2208988800000"))]))  // 2040-01-01
        let failure = assertRefused(pki.verifier().verifyTransaction(token, now: Date()), "chain_invalid")
        XCTAssertTrue(failure?.description.contains("expired") == true, failure?.description ?? "")
    }

    func testSignedBeforeTheCertificatesWereValid_failsTheChain() throws {
        let token = try pki.token(TestPKI.transaction([("signedDate", .number("1577836800000"))]))  // 2020-01-01
        let failure = assertRefused(pki.verifier().verifyTransaction(token, now: Date()), "chain_invalid")
        XCTAssertTrue(failure?.description.contains("not yet valid") == true, failure?.description ?? "")
    }

    func testWithoutSignedDate_theChainIsCheckedAtNow() throws {
        let token = try pki.token(TestPKI.transaction([("signedDate", .null)]))
        let verifier = pki.verifier()
        XCTAssertNoThrow(try verifier.verifyTransaction(token, now: Date(timeIntervalSince1970: 1_735_689_600)).get())
        assertRefused(verifier.verifyTransaction(token, now: Date(timeIntervalSince1970: 2_208_988_800)), "chain_invalid")
    }

    func testNonNumericSignedDate_isMalformed() throws {
        let token = try pki.token(TestPKI.transaction([("signedDate", .string("yesterday"))]))
        assertRefused(pki.verifier().verifyTransaction(token, now: Date()), "jws_malformed")
    }

    func testAlgorithmsOtherThanES256_areRefused() throws {
        let x5c = try TestPKI.x5c(TestPKI.standardChain)
        let payload = Base64URL.encode(TestPKI.transaction().data)
        let headers: [JSONValue] = [
            .object([("alg", .string("none")), ("x5c", x5c)]),
            .object([("alg", .string("HS256")), ("x5c", x5c)]),
            .object([("alg", .string("ES384")), ("x5c", x5c)]),
            .object([("alg", .string("es256")), ("x5c", x5c)]),
            .object([("alg", .null), ("x5c", x5c)]),
            .object([("x5c", x5c)]),
        ]
        for header in headers {
            let unsigned = Base64URL.encode(header.data) + "." + payload + "."
            assertRefused(pki.verifier().verifyTransaction(unsigned, now: Date()), "algorithm_unsupported")
            // A signature made with the right key does not make another alg acceptable.
            let signed = try pki.token(TestPKI.transaction(), header: header)
            assertRefused(pki.verifier().verifyTransaction(signed, now: Date()), "algorithm_unsupported")
        }
    }

    func testSignatureByAnotherKey_isInvalid() throws {
        let other = try ES256PrivateKey(pem: JWSFixtures.text("test-chain/testSigningKey.p8"))
        let token = try pki.token(TestPKI.transaction(), key: other)
        XCTAssertEqual(pki.verifier().verifyTransaction(token, now: Date()), .failure(.signatureInvalid))
    }

    func testDEREncodedSignature_isInvalid() throws {
        let token = try pki.token(TestPKI.transaction())
        var parts = token.split(separator: ".").map(String.init)
        let der = try XCTUnwrap(ECDSASignature.der(fromRaw: XCTUnwrap(Base64URL.decode(parts[2]))))
        parts[2] = Base64URL.encode(Data(der))
        XCTAssertEqual(pki.verifier().verifyTransaction(parts.joined(separator: "."), now: Date()), .failure(.signatureInvalid))
    }

    func testWrongBundle_isABundleMismatch() throws {
        let token = try pki.token(TestPKI.transaction([("bundleId", .string("com.example.other"))]))
        assertRefused(pki.verifier().verifyTransaction(token, now: Date()), "bundle_mismatch")
    }

    func testBundleIsCheckedBeforeEnvironment() throws {
        let token = try pki.token(TestPKI.transaction([("bundleId", .string("com.example.other")), ("environment", .string("Xcode"))]))
        assertRefused(pki.verifier().verifyTransaction(token, now: Date()), "bundle_mismatch")
    }

    func testTestEnvironments_areNeverAccepted() throws {
        for environment: JSONValue in [.string("Xcode"), .string("LocalTesting"), .string("production")] {
            let token = try pki.token(TestPKI.transaction([("environment", environment)]))
            assertRefused(pki.verifier(acceptSandbox: true).verifyTransaction(token, now: Date()), "environment_mismatch")
            assertRefused(pki.verifier(acceptSandbox: true).verifySignedData(token, now: Date()), "environment_mismatch")
        }
    }

    func testDecodingATransaction_whoseEnvironmentIsNotApplesSpelling_isRefused_neverReadAsProduction() throws {
        for text in ["production", "PRODUCTION", "Prod"] {
            XCTAssertThrowsError(try SignedTransaction(decoding: TestPKI.transaction([("environment", .string(text))])), text) { error in
                XCTAssertEqual((error as? SignedDataFailure)?.code, "environment_mismatch", text)
            }
        }
        XCTAssertEqual(try SignedTransaction(decoding: TestPKI.transaction([("environment", .string("Production"))])).environment, .production)
    }

    func testSandbox_isAcceptedOnlyWhenConfigured() throws {
        let token = try pki.token(TestPKI.transaction([("environment", .string("Sandbox"))]))
        assertRefused(pki.verifier(acceptSandbox: false).verifyTransaction(token, now: Date()), "environment_mismatch")
        XCTAssertEqual(try pki.verifier(acceptSandbox: true).verifyTransaction(token, now: Date()).get().environment, .sandbox)
    }

    func testValidlySignedPayload_missingARequiredField_isPayloadInvalid() throws {
        for field in ["transactionId", "originalTransactionId", "productId", "bundleId", "environment"] {
            let token = try pki.token(TestPKI.transaction([(field, .null)]))
            assertRefused(pki.verifier().verifyTransaction(token, now: Date()), "payload_invalid")
        }
        let noEnvironment = try pki.token(TestPKI.transaction([("environment", .null)]))
        assertRefused(pki.verifier().verifySignedData(noEnvironment, now: Date()), "payload_invalid")
    }

    func testValidlySignedPayload_withAFieldOfTheWrongType_isPayloadInvalid() throws {
        let cases: [(String, JSONValue)] = [
            ("quantity", .string("many")), ("bundleId", .number("7")), ("environment", .number("1")),
            ("productId", .array([])), ("isUpgraded", .string("yes")), ("appAccountToken", .number("1")),
            ("appAccountToken", .string("not-a-uuid")),
        ]
        for (field, value) in cases {
            let token = try pki.token(TestPKI.transaction([(field, value)]))
            assertRefused(pki.verifier().verifyTransaction(token, now: Date()), "payload_invalid")
        }
    }

    func testPayloadWithMissingFields_underABadSignature_isASignatureFailureNotPayloadInvalid() throws {
        let stranger = try ES256PrivateKey(pem: ES256PrivateKey.generatePEM())
        let token = try pki.token(TestPKI.transaction([("transactionId", .null), ("bundleId", .null)]), key: stranger)
        XCTAssertEqual(pki.verifier().verifyTransaction(token, now: Date()), .failure(.signatureInvalid))
    }

    func testAppAccountToken_isReadLowercasedWithHyphens() throws {
        let token = try pki.token(TestPKI.transaction([("appAccountToken", .string("7E3FB20B-4CDB-47CC-936D-99D65F608138"))]))
        XCTAssertEqual(try pki.verifier().verifyTransaction(token, now: Date()).get().appAccountToken,
                       "7e3fb20b-4cdb-47cc-936d-99d65f608138")
    }

    func testAppAccountToken_isNilWhenAbsentOrEmpty() throws {
        XCTAssertNil(try pki.verifier().verifyTransaction(try pki.token(TestPKI.transaction()), now: Date()).get().appAccountToken)
        let empty = try pki.token(TestPKI.transaction([("appAccountToken", .string(""))]))
        XCTAssertNil(try pki.verifier().verifyTransaction(empty, now: Date()).get().appAccountToken)
    }

    func testIsUpgraded_isReadFromThePayload_andFalseWhenAbsent() throws {
        let upgraded = try pki.token(TestPKI.transaction([("isUpgraded", .bool(true))]))
        XCTAssertTrue(try pki.verifier().verifyTransaction(upgraded, now: Date()).get().isUpgraded)
        XCTAssertFalse(try pki.verifier().verifyTransaction(try pki.token(TestPKI.transaction()), now: Date()).get().isUpgraded)
    }

    func testGarbage_isMalformed() throws {
        let valid = try pki.token(TestPKI.transaction())
        let parts = valid.split(separator: ".").map(String.init)
        let garbage = [
            "", ".", "..", "abc", "a.b", "a.b.c.d", valid + ".", "!!!.###.$$$",
            parts[0] + "." + parts[1],
            valid + "=",
            parts[0].replacingOccurrences(of: "e", with: "+") + "." + parts[1] + "." + parts[2],
            Base64URL.encode(Data("not json".utf8)) + "." + parts[1] + "." + parts[2],
            Base64URL.encode(Data("[1,2]".utf8)) + "." + parts[1] + "." + parts[2],
            parts[0] + "." + Base64URL.encode(Data("\"a string\"".utf8)) + "." + parts[2],
            " " + valid,
            String(repeating: "A", count: 100 * 1024) + "." + parts[1] + "." + parts[2],
        ]
        for token in garbage {
            assertRefused(pki.verifier().verifyTransaction(token, now: Date()), "jws_malformed")
        }
    }

    func testX5cProblems_areReportedPrecisely() throws {
        let leaf = try JWSFixtures.certificate("test-chain/testLeaf.pem").der.base64EncodedString()
        let intermediate = try JWSFixtures.certificate("test-chain/testIntermediate.pem").der.base64EncodedString()
        let root = try JWSFixtures.certificate("test-chain/testCA.pem").der.base64EncodedString()
        let cases: [(JSONValue?, String)] = [
            (nil, "jws_malformed"),
            (.string(leaf), "jws_malformed"),
            (.array([]), "chain_invalid"),
            (.array([.string(leaf)]), "chain_invalid"),
            (.array([.string(leaf), .string(intermediate), .string(root), .string(root)]), "chain_invalid"),
            (.array([.string(leaf), .number("1"), .string(root)]), "jws_malformed"),
            (.array([.string(Base64URL.encode(Data(base64Encoded: leaf)!)), .string(intermediate), .string(root)]), "jws_malformed"),
            (.array([.string(Data("not a certificate".utf8).base64EncodedString()), .string(intermediate), .string(root)]), "chain_invalid"),
            (.array([.string(leaf), .string(intermediate), .string(String(repeating: "A", count: 24 * 1024))]), "jws_malformed"),
        ]
        for (x5c, code) in cases {
            var members: [(String, JSONValue)] = [("alg", .string("ES256"))]
            if let x5c { members.append(("x5c", x5c)) }
            let token = try pki.token(TestPKI.transaction(), header: .object(members))
            assertRefused(pki.verifier().verifyTransaction(token, now: Date()), code)
        }
    }

    func testCriticalHeaderParameters_areRefused() throws {
        let header: JSONValue = .object([("alg", .string("ES256")), ("x5c", try TestPKI.x5c(TestPKI.standardChain)),
                                         ("crit", .array([.string("exp")]))])
        assertRefused(pki.verifier().verifyTransaction(try pki.token(TestPKI.transaction(), header: header), now: Date()), "jws_malformed")
    }

    func testTypAndOtherHeaderFields_areTolerated() throws {
        let header: JSONValue = .object([("alg", .string("ES256")), ("typ", .string("JWT")), ("x5c", try TestPKI.x5c(TestPKI.standardChain))])
        XCTAssertNoThrow(try pki.verifier().verifyTransaction(try pki.token(TestPKI.transaction(), header: header), now: Date()).get())
    }

    func testFailureCodes_areStable() {
        let failures: [(SignedDataFailure, String)] = [
            (.malformed("x"), "jws_malformed"), (.unsupportedAlgorithm("x"), "algorithm_unsupported"),
            (.invalidChainLength(2), "chain_invalid"), (.invalidChain("x"), "chain_invalid"),
            (.signatureInvalid, "signature_invalid"), (.bundleMismatch("x"), "bundle_mismatch"),
            (.environmentMismatch("x"), "environment_mismatch"), (.sandboxNotAccepted, "environment_mismatch"),
            (.payloadInvalid("x"), "payload_invalid"),
        ]
        for (failure, code) in failures {
            XCTAssertEqual(failure.code, code)
            XCTAssertTrue(failure.description.hasPrefix(code + ": "), failure.description)
        }
    }
}
