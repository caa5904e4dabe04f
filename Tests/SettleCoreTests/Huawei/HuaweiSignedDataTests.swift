import Foundation
import XCTest
import SettleBase
import SettleHuawei
import SettleHuaweiSimulator
import SettleTesting

/// Huawei's signed answers are trusted only as its sample checks them (huawei-appgallery.md
/// 1.3): ES256, an x5c of three, leaf and intermediate chained to a configured root (never the
/// sender's), the leaf carrying OID 1.3.6.1.4.1.2011.2.415.1.1, and a signature over the exact bytes.
final class HuaweiSignedDataTests: XCTestCase {
    let now = Date(timeIntervalSince1970: 1_764_000_000)
    let payload = JSONValue.object([("purchaseOrderId", .string("po-1")), ("applicationId", .string("10000001")),
                                    ("quantity", .number(1)), ("signedTime", .number(Int64(1_764_000_000_000)))])

    var pinned: HuaweiSignedData { HuaweiSignedData(roots: try! X509Certificate.parse(pem: HuaweiSimulatorChain.rootPEM)) }

    func sign(_ payload: JSONValue, key: String = HuaweiSimulatorChain.leafKeyPEM, x5c: [String] = HuaweiSimulatorChain.x5c,
              alg: String = "ES256") throws -> String {
        let header = JSONValue.object([("alg", .string(alg)), ("typ", .string("JWT")), ("x5c", .array(x5c.map(JSONValue.string)))])
        return try CompactJWS.sign(header: header, payload: payload, key: ES256PrivateKey(pem: key))
    }

    func failure(_ token: String, file: StaticString = #filePath, line: UInt = #line) -> String {
        switch pinned.verify(token, now: now) {
        case .success: XCTFail("a token settle must not trust verified", file: file, line: line); return ""
        case let .failure(failure): return failure.message
        }
    }

    func testGenuineAnswer_verifies_andGivesThePayload() throws {
        XCTAssertEqual(try pinned.verify(sign(payload), now: now).get(), payload)
    }

    func testChainUnderAnotherRoot_isRefused_evenWhenItCarriesHuaweisMarker() throws {
        let forged = HuaweiTestChains.x5c([HuaweiTestChains.forgedLeafPEM, HuaweiTestChains.forgedIntermediatePEM,
                                           HuaweiTestChains.forgedRootPEM])
        let message = failure(try sign(payload, key: HuaweiTestChains.forgedLeafKeyPEM, x5c: forged))
        XCTAssertTrue(message.contains("is not signed by a configured root"), message)
    }

    /// The x5c's third certificate is the sender's claim: a forged chain naming the genuine root
    /// there is still refused, and a genuine one naming a forged root there still verifies.
    func testTheRootInX5c_isNeverTrusted() throws {
        let forgedUnderGenuineRoot = HuaweiTestChains.x5c([HuaweiTestChains.forgedLeafPEM, HuaweiTestChains.forgedIntermediatePEM,
                                                           HuaweiSimulatorChain.rootPEM])
        let message = failure(try sign(payload, key: HuaweiTestChains.forgedLeafKeyPEM, x5c: forgedUnderGenuineRoot))
        XCTAssertTrue(message.contains("is not signed by a configured root"), message)
        let genuineNamingForgedRoot = HuaweiTestChains.x5c([HuaweiSimulatorChain.leafPEM, HuaweiSimulatorChain.intermediatePEM,
                                                            HuaweiTestChains.forgedRootPEM])
        XCTAssertEqual(try pinned.verify(sign(payload, x5c: genuineNamingForgedRoot), now: now).get(), payload)
    }

    func testLeafWithoutHuaweisIAPExtension_isRefused() throws {
        let chain = HuaweiTestChains.x5c([HuaweiTestChains.noMarkerLeafPEM, HuaweiSimulatorChain.intermediatePEM,
                                          HuaweiSimulatorChain.rootPEM])
        let message = failure(try sign(payload, key: HuaweiTestChains.noMarkerLeafKeyPEM, x5c: chain))
        XCTAssertTrue(message.contains("lacks Huawei's IAP signing extension 1.3.6.1.4.1.2011.2.415.1.1"), message)
    }

    func testTamperedPayload_isRefused() throws {
        let parts = try sign(payload).split(separator: ".")
        let more = JSONValue.object([("purchaseOrderId", .string("po-1")), ("applicationId", .string("10000001")),
                                     ("quantity", .number(100)), ("signedTime", .number(Int64(1_764_000_000_000)))])
        let message = failure("\(parts[0]).\(Base64URL.encode(more.data)).\(parts[2])")
        XCTAssertTrue(message.contains("signature does not verify"), message)
    }

    func testSignatureOfAnotherKey_underTheGenuineChain_isRefused() throws {
        let message = failure(try sign(payload, key: HuaweiTestChains.forgedLeafKeyPEM))
        XCTAssertTrue(message.contains("signature does not verify"), message)
    }

    func testOtherAlgorithms_shortChains_andMalformedTokens_areRefused() throws {
        XCTAssertTrue(failure(try sign(payload, alg: "none")).contains("only ES256"))
        let short = Array(HuaweiSimulatorChain.x5c.prefix(2))
        XCTAssertTrue(failure(try sign(payload, x5c: short)).contains("holds 2 certificates, expected 3"))
        XCTAssertTrue(failure("a.b").contains("2 dot-separated parts"))
        XCTAssertTrue(failure("!!.!!.!!").contains("not base64url"))
        XCTAssertTrue(failure(String(repeating: "a", count: HuaweiSignedData.maxTokenBytes + 1)).contains("-byte limit"))
    }

    /// The chain is checked at the payload's signedTime: an answer claiming to be signed after
    /// the chain expired (or before it began) is refused.
    func testAnswerSignedOutsideTheChainsValidity_isRefused() throws {
        let late = JSONValue.object([("purchaseOrderId", .string("po-1")), ("signedTime", .number(Int64(2_600_000_000_000)))])
        XCTAssertTrue(failure(try sign(late)).contains("is not valid at 2052"))
        let garbage = JSONValue.object([("signedTime", .string("soon"))])
        XCTAssertTrue(failure(try sign(garbage)).contains("signedTime is not a number"))
    }
}
