import Foundation
import XCTest
@testable import SettleApp
@testable import SettleBase
@testable import SettleAppStore

/// Reads the files under Tests/SettleCoreTests/Fixtures (located from this source file, not
/// through SwiftPM resources).
enum JWSFixtures {
    static let directory = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent("Fixtures/apple")

    static func path(_ relative: String) -> String {
        directory.appendingPathComponent(relative).path
    }

    static func text(_ relative: String) throws -> String {
        try String(contentsOfFile: path(relative), encoding: .utf8)
    }

    static func certificate(_ relative: String) throws -> X509Certificate {
        let certificates = try X509Certificate.load(path: path(relative))
        XCTAssertEqual(certificates.count, 1, relative)
        return certificates[0]
    }

    static func appleRootG3() throws -> X509Certificate { try certificate("roots/AppleRootCA-G3.pem") }

    /// The genuine Apple-signed renewal info (signedDate 1684822778492, Sandbox).
    static func genuineRenewalInfo() throws -> String {
        try text("signed/apple-signed-renewal-info-sandbox.jws").trimmingCharacters(in: .whitespacesAndNewlines)
    }
}

/// Mints JWS with the test PKI in Apple's shape: testCA -> testIntermediate -> testLeaf.
struct TestPKI {
    static let bundleId = "com.example.settle"

    let root: X509Certificate
    let leafKey: ES256PrivateKey

    init() throws {
        root = try JWSFixtures.certificate("test-chain/testCA.pem")
        leafKey = try ES256PrivateKey(pem: JWSFixtures.text("test-chain/testLeaf.key"))
    }

    func verifier(roots: [X509Certificate]? = nil, acceptSandbox: Bool = false) -> SignedDataVerifier {
        SignedDataVerifier(rootCertificates: roots ?? [root], bundleId: Self.bundleId, acceptSandbox: acceptSandbox)
    }

    /// `x5c` as standard base64 DER of the named fixture certificates.
    static func x5c(_ names: [String]) throws -> JSONValue {
        .array(try names.map { .string(try JWSFixtures.certificate("test-chain/\($0)").der.base64EncodedString()) })
    }

    static let standardChain = ["testLeaf.pem", "testIntermediate.pem", "testCA.pem"]

    /// A signed token; `header` defaults to ES256 with the standard chain.
    func token(_ payload: JSONValue, chain: [String] = standardChain, header: JSONValue? = nil,
               key: ES256PrivateKey? = nil) throws -> String {
        let header = try header ?? .object([("alg", .string("ES256")), ("x5c", Self.x5c(chain))])
        return try CompactJWS.sign(header: header, payload: payload, key: key ?? leafKey)
    }

    /// A transaction payload for the test bundle, signed in 2025, with fields replaced or
    /// added by `overrides` (a `.null` override removes the field).
    static func transaction(_ overrides: [(String, JSONValue)] = []) -> JSONValue {
        var members: [(String, JSONValue)] = [
            ("transactionId", .string("2000000000000002")),
            ("originalTransactionId", .string("2000000000000001")),
            ("bundleId", .string(bundleId)),
            ("productId", .string("com.example.settle.gems100")),
            ("purchaseDate", .number("1735689600000")),
            ("quantity", .number("1")),
            ("type", .string("Consumable")),
            ("inAppOwnershipType", .string("PURCHASED")),
            ("signedDate", .number("1735689601000")),
            ("environment", .string("Production")),
        ]
        for (key, value) in overrides {
            if let index = members.firstIndex(where: { $0.0 == key }) {
                members[index].1 = value
            } else {
                members.append((key, value))
            }
        }
        return .object(members.filter { $0.1 != .null })
    }
}

/// Asserts that `result` failed with `code`, and returns the failure for closer checks.
@discardableResult
func assertRefused<T>(_ result: Result<T, SignedDataFailure>, _ code: String,
                      file: StaticString = #filePath, line: UInt = #line) -> SignedDataFailure? {
    switch result {
    case .success:
        XCTFail("verified, expected \(code)", file: file, line: line)
        return nil
    case let .failure(failure):
        XCTAssertEqual(failure.code, code, failure.description, file: file, line: line)
        return failure
    }
}
