import Foundation
import SettleApp
import SettleBase
import SettleTesting
import XCTest
import SettleAppStore

/// Reading transaction ids out of legacy PKCS#7 app receipts (apple-protocol.md 3.6).
final class AppReceiptTests: XCTestCase {
    static let fixtures = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("Fixtures/apple")

    let bundleId = "com.example.game"
    /// One purchase with only a 1703, one with only a 1705, one with both (sharing that 1705).
    let purchases = [
        AppReceipt.Purchase(productId: "com.example.game.coins100", transactionId: "2000000000000001", quantity: 3,
                            purchaseDate: "2025-01-02T03:04:05Z"),
        AppReceipt.Purchase(productId: "com.example.game.monthly", originalTransactionId: "2000000000000002",
                            quantity: 1),
        AppReceipt.Purchase(productId: "com.example.game.monthly", transactionId: "2000000000000003",
                            originalTransactionId: "2000000000000002", quantity: 1,
                            purchaseDate: "2025-02-02T03:04:05Z"),
    ]

    func fixture(_ name: String) throws -> String {
        try String(contentsOf: Self.fixtures.appendingPathComponent(name), encoding: .utf8)
    }

    func build(environment: String = "Production", purchases: [AppReceipt.Purchase]) throws -> String {
        try AppReceiptBuilder.build(bundleId: bundleId, environment: environment, purchases: purchases,
                                    signerCertificatePEM: fixture("test-chain/testLeaf.pem"), signerKeyPEM: fixture("test-chain/testLeaf.key"))
    }

    func der(_ base64: String) throws -> [UInt8] {
        try [UInt8](XCTUnwrap(Data(base64Encoded: base64)))
    }

    func parseError(_ base64: String) -> AppReceiptError? {
        do {
            _ = try AppReceipt.parse(base64: base64)
            return nil
        } catch {
            return error
        }
    }

    func parseError(der bytes: [UInt8]) -> AppReceiptError? {
        do {
            _ = try AppReceipt.parse(der: Data(bytes))
            return nil
        } catch {
            return error
        }
    }

    // MARK: - Reading receipts

    func testParse_returnsWhatTheBuilderWrote() throws {
        let receipt = try AppReceipt.parse(base64: build(purchases: purchases))

        XCTAssertEqual(receipt, AppReceipt(bundleId: bundleId, environment: "Production", purchases: purchases))
        XCTAssertEqual(receipt.purchases.map(\.productId),
                       ["com.example.game.coins100", "com.example.game.monthly", "com.example.game.monthly"])
        XCTAssertEqual(receipt.purchases.map(\.quantity), [3, 1, 1])
        XCTAssertEqual(receipt.transactionIds, ["2000000000000001", "2000000000000002", "2000000000000003"])
    }

    func testBuild_signsThePayloadForReal() throws {
        // The parser ignores the signature, but a builder that wrote an invalid one would make
        // receipts unlike Apple's. verifiedContent checks the signature with the embedded signer
        // certificate, not its chain (PKCS7_NOVERIFY; the test CA is not Apple's).
        // https://docs.openssl.org/3.0/man3/PKCS7_verify/
        let der = try der(build(purchases: purchases))
        let content = try PKCS7SignedData(der: Data(der)).verifiedContent()
        XCTAssertEqual(Array(content),
                       AppReceiptBuilder.payload(bundleId: bundleId, environment: "Production", purchases: purchases))
    }

    func testTransactionIds_dedupeAndKeepFileOrder() {
        let receipt = AppReceipt(purchases: [
            .init(transactionId: "b", originalTransactionId: "a"),
            .init(transactionId: "a", originalTransactionId: "a"),
            .init(productId: "no ids"),
            .init(transactionId: "c", originalTransactionId: "b"),
        ])
        XCTAssertEqual(receipt.transactionIds, ["b", "a", "c"])
    }

    func testParse_whenNoInAppPurchases_hasEmptyPurchases() throws {
        let receipt = try AppReceipt.parse(base64: build(environment: "Sandbox", purchases: []))

        XCTAssertEqual(receipt, AppReceipt(bundleId: bundleId, environment: "Sandbox", purchases: []))
        XCTAssertEqual(receipt.transactionIds, [])
    }

    func testParse_whenPurchaseHasNoAttributes_keepsItEmpty() throws {
        let receipt = try AppReceipt.parse(base64: build(purchases: [AppReceipt.Purchase()]))
        XCTAssertEqual(receipt.purchases, [AppReceipt.Purchase()])
    }

    func testParse_xcodeReceipt_readsBERWithNestedOctetString() throws {
        // Apple's own test receipt (app-store-server-library-swift, MIT): indefinite lengths and
        // the payload in a constructed OCTET STRING, signed by Xcode's "StoreKit" certificate.
        let receipt = try AppReceipt.parse(base64: fixture("receipts/xcode-app-receipt-empty.b64"))

        XCTAssertEqual(receipt, AppReceipt(bundleId: "com.example.naturelab.backyardbirds.example",
                                           environment: "Xcode", purchases: [], creationDate: "2023-10-19T01:18:54Z"))
    }

    func testParse_ignoresLineBreaksAndSpaces() throws {
        let base64 = try build(purchases: purchases)
        var wrapped = ""
        for (index, character) in base64.enumerated() {
            if index > 0 && index % 64 == 0 { wrapped += index % 128 == 0 ? "\r\n" : "\n \t" }
            wrapped.append(character)
        }
        XCTAssertEqual(try AppReceipt.parse(base64: wrapped), try AppReceipt.parse(base64: base64))
    }

    func testParse_whenOuterStructureUsesIndefiniteLengths_readsTheSame() throws {
        // The parser reads BER itself (OpenSSL is not involved), so this exercises BERReader.
        let der = try der(build(purchases: purchases))
        let ber = BERRespelling.indefinite(der, segment: 64)
        XCTAssertEqual(Array(ber.prefix(2)), [0x30, 0x80])
        XCTAssertNotEqual(ber, der)

        let receipt = try AppReceipt.parse(der: Data(ber))
        XCTAssertEqual(receipt, AppReceipt(bundleId: bundleId, environment: "Production", purchases: purchases))
    }

    func testParse_whenPayloadIsBERToo_readsTheSame() throws {
        // Apple's payloads are DER, but nothing in the format forbids BER; the 4-byte segments
        // split every attribute value into a constructed OCTET STRING.
        let payload = AppReceiptBuilder.payload(bundleId: bundleId, environment: "Sandbox", purchases: purchases)
        let signed = try AppReceiptBuilder.sign(BERRespelling.indefinite(payload, segment: 4),
                                                certificatePEM: fixture("test-chain/testLeaf.pem"), keyPEM: fixture("test-chain/testLeaf.key"))

        let receipt = try AppReceipt.parse(der: Data(BERRespelling.indefinite(signed, segment: 64)))
        XCTAssertEqual(receipt, AppReceipt(bundleId: bundleId, environment: "Sandbox", purchases: purchases))
    }

    // MARK: - Rejecting what is not a receipt

    func testParse_whenNotBase64_fails() {
        XCTAssertEqual(parseError("this is not a receipt!")?.message, "not base64")
        XCTAssertEqual(parseError("MIIT*w==")?.message, "not base64")
    }

    func testParse_whenEmpty_fails() {
        XCTAssertEqual(parseError("")?.message, "empty receipt")
        XCTAssertEqual(parseError(" \r\n\t")?.message, "empty receipt")
        XCTAssertEqual(parseError(der: [])?.message, "empty receipt")
    }

    func testParse_whenJWS_saysSo() {
        let jws = "eyJhbGciOiJFUzI1NiIsIng1YyI6W119.eyJ0cmFuc2FjdGlvbklkIjoiMjAwMDAwMDAwMDAwMDAwMSJ9.c2lnbmF0dXJl"
        XCTAssertEqual(parseError(jws)?.message, "a StoreKit 2 JWS, not a legacy app receipt")
    }

    func testParse_whenRandomBytes_fails() {
        var random = SplitMix64(seed: 1)
        for count in [1, 2, 16, 200, 4096] {
            let bytes = (0 ..< count).map { _ in UInt8.random(in: 0 ... 255, using: &random) }
            let error = parseError(Data(bytes).base64EncodedString())
            XCTAssertTrue(error?.message.hasPrefix("not a PKCS#7 signedData receipt: ") == true, "\(count): \(String(describing: error))")
        }
        // Random bytes that happen to start like a SEQUENCE get past the first check.
        XCTAssertEqual(parseError(der: [0x30, 0x82, 0x7F, 0x01, 0xAA])?.message,
                       "not a PKCS#7 signedData receipt: truncated: a length of 32513 runs past the end of the data (at byte 0)")
    }

    func testParse_whenTruncated_fails() throws {
        let der = try der(build(purchases: purchases))
        XCTAssertTrue(parseError(der: Array(der.prefix(der.count / 2)))?.message.contains("truncated") == true)
        for length in 0 ..< der.count {
            XCTAssertNotNil(parseError(der: Array(der.prefix(length))), "prefix of \(length) bytes")
        }
        let ber = BERRespelling.indefinite(der, segment: 64)
        for length in 0 ..< ber.count {
            XCTAssertNotNil(parseError(der: Array(ber.prefix(length))), "BER prefix of \(length) bytes")
        }
    }

    func testParse_whenTrailingBytes_fails() throws {
        let der = try der(build(purchases: purchases))
        XCTAssertEqual(parseError(der: der + [0])?.message,
                       "not a PKCS#7 signedData receipt: trailing bytes after the ContentInfo (at byte \(der.count))")
    }

    func testParse_whenPKCS7IsNotSignedData_fails() {
        // ContentInfo { id-data, [0] OCTET STRING "abc" }: valid PKCS#7, but no signedData.
        let data: [UInt8] = [0x30, 0x12, 0x06, 0x09, 0x2A, 0x86, 0x48, 0x86, 0xF7, 0x0D, 0x01, 0x07, 0x01,
                             0xA0, 0x05, 0x04, 0x03, 0x61, 0x62, 0x63]
        XCTAssertEqual(parseError(der: data)?.message,
                       "not a PKCS#7 signedData receipt: content type is 1.2.840.113549.1.7.1 (at byte 2)")
    }

    func testParse_whenSignedDataHasNoContent_fails() {
        // A detached signature: encapContentInfo { id-data } without eContent.
        let detached: [UInt8] = [0x30, 0x21, 0x06, 0x09, 0x2A, 0x86, 0x48, 0x86, 0xF7, 0x0D, 0x01, 0x07, 0x02,
                                 0xA0, 0x14, 0x30, 0x12, 0x02, 0x01, 0x01, 0x31, 0x00,
                                 0x30, 0x0B, 0x06, 0x09, 0x2A, 0x86, 0x48, 0x86, 0xF7, 0x0D, 0x01, 0x07, 0x01]
        XCTAssertEqual(parseError(der: detached)?.message,
                       "not a PKCS#7 signedData receipt: missing the [0] eContent (at byte 35)")
    }

    func testParse_whenPayloadIsNotASet_fails() throws {
        let signed = try AppReceiptBuilder.sign([0x04, 0x01, 0x00], certificatePEM: fixture("test-chain/testLeaf.pem"),
                                                keyPEM: fixture("test-chain/testLeaf.key"))
        let message = try XCTUnwrap(parseError(der: signed)?.message)
        XCTAssertTrue(message.hasPrefix("malformed receipt payload: expected a SET of attributes in the payload (at byte "), message)
    }

    func testParse_whenIdIsNotAString_fails() throws {
        // SET { attribute 17: SET { attribute 1703: INTEGER 0 } }: an INTEGER where a UTF8String belongs.
        let payload: [UInt8] = [0x31, 0x1A, 0x30, 0x18, 0x02, 0x01, 0x11, 0x02, 0x01, 0x01, 0x04, 0x10,
                                0x31, 0x0E, 0x30, 0x0C, 0x02, 0x02, 0x06, 0xA7, 0x02, 0x01, 0x01, 0x04, 0x03, 0x02, 0x01, 0x00]
        let signed = try AppReceiptBuilder.sign(payload, certificatePEM: fixture("test-chain/testLeaf.pem"), keyPEM: fixture("test-chain/testLeaf.key"))
        let message = try XCTUnwrap(parseError(der: signed)?.message)
        XCTAssertTrue(message.hasPrefix("malformed receipt payload: attribute 1703 is not a UTF8String or IA5String (at byte "), message)
    }

    func testParse_whenTooLarge_fails() {
        XCTAssertEqual(parseError(der: [UInt8](repeating: 0x30, count: AppReceipt.maximumSize + 1))?.message,
                       "receipt larger than 16 MiB")
        XCTAssertEqual(parseError(String(repeating: "A", count: 2 * AppReceipt.maximumSize + 4))?.message,
                       "receipt larger than 16 MiB")
    }

    func testParse_whenNestedTooDeeply_failsWithoutExhaustingTheStack() {
        // ContentInfo { signedData, [0] { SignedData { 1, {}, { data, [0] ... } } } }, all indefinite.
        let prefix: [UInt8] = [0x30, 0x80, 0x06, 0x09, 0x2A, 0x86, 0x48, 0x86, 0xF7, 0x0D, 0x01, 0x07, 0x02,
                               0xA0, 0x80, 0x30, 0x80, 0x02, 0x01, 0x01, 0x31, 0x00,
                               0x30, 0x80, 0x06, 0x09, 0x2A, 0x86, 0x48, 0x86, 0xF7, 0x0D, 0x01, 0x07, 0x01, 0xA0, 0x80]
        func nested(_ header: [UInt8], after start: [UInt8] = []) -> [UInt8] {
            prefix + start + Array([[UInt8]](repeating: header, count: 50_000).joined()) + [UInt8](repeating: 0, count: 100_000)
        }
        // Constructed OCTET STRING segments, read recursively.
        XCTAssertEqual(parseError(der: nested([0x24, 0x80]))?.message,
                       "not a PKCS#7 signedData receipt: nested deeper than 32 (at byte 91)")
        // Where the certificates go (after an empty eContent), passed over recursively.
        XCTAssertEqual(parseError(der: nested([0x30, 0x80], after: [0x04, 0x00, 0x00, 0x00, 0x00, 0x00]))?.message,
                       "not a PKCS#7 signedData receipt: nested deeper than 32 (at byte 101)")
    }

    // MARK: - Fuzzing

    func testParse_whenMutatedAtRandom_neverCrashes() throws {
        let der = try der(build(purchases: purchases))
        try assertSurvivesMutations(of: der, seed: 42)
        try assertSurvivesMutations(of: BERRespelling.indefinite(der, segment: 64), seed: 43)
    }

    /// 500 mutations of each kind's mix; half of them land in the payload, where the parser looks
    /// hardest. The test passes by finishing: every outcome is a value or an AppReceiptError.
    func assertSurvivesMutations(of receipt: [UInt8], seed: UInt64) throws {
        var random = SplitMix64(seed: seed)
        let payload = AppReceiptBuilder.payload(bundleId: bundleId, environment: "Production", purchases: purchases)
        let payloadRange = try XCTUnwrap(receipt.firstRange(of: payload.prefix(16)))
        var failures = 0
        for _ in 0 ..< 500 {
            var bytes = receipt
            for _ in 0 ..< Int.random(in: 1 ... 4, using: &random) {
                let inPayload = Bool.random(using: &random)
                let index = inPayload ? Int.random(in: payloadRange.lowerBound ..< payloadRange.lowerBound + payload.count, using: &random)
                    : Int.random(in: 0 ..< bytes.count, using: &random)
                guard index < bytes.count else { continue }
                switch Int.random(in: 0 ..< 4, using: &random) {
                case 0: bytes[index] = UInt8.random(in: 0 ... 255, using: &random)
                case 1: bytes[index] ^= 1 << UInt8.random(in: 0 ..< 8, using: &random)
                case 2: bytes.insert(UInt8.random(in: 0 ... 255, using: &random), at: index)
                default: bytes.remove(at: index)
                }
            }
            if parseError(der: bytes) != nil { failures += 1 }
        }
        // Most changes break a length somewhere; if none did, the mutations missed the structure.
        XCTAssertGreaterThan(failures, 100)
    }
}

/// Re-spells DER as BER the way Xcode does: every constructed element with an indefinite length,
/// and OCTET STRINGs longer than `segment` split into constructed strings of segments.
/// Only for the low tag numbers and well-formed input the tests give it.
private enum BERRespelling {
    static func indefinite(_ der: [UInt8], segment: Int) -> [UInt8] {
        var output: [UInt8] = []
        var index = 0
        while index < der.count { output += element(der, &index, segment: segment) }
        return output
    }

    private static func element(_ bytes: [UInt8], _ index: inout Int, segment: Int) -> [UInt8] {
        let tag = bytes[index]
        var length = Int(bytes[index + 1])
        index += 2
        if length & 0x80 != 0 {
            let count = length & 0x7F
            length = bytes[index ..< index + count].reduce(0) { $0 << 8 | Int($1) }
            index += count
        }
        let contents = Array(bytes[index ..< index + length])
        index += length
        if tag & 0x20 != 0 {
            return [tag, 0x80] + indefinite(contents, segment: segment) + [0, 0]
        }
        if tag == 0x04 && contents.count > segment {
            let segments = stride(from: 0, to: contents.count, by: segment).flatMap { start in
                definite(0x04, Array(contents[start ..< min(start + segment, contents.count)]))
            }
            return [0x24, 0x80] + segments + [0, 0]
        }
        return definite(tag, contents)
    }

    private static func definite(_ tag: UInt8, _ contents: [UInt8]) -> [UInt8] {
        guard contents.count >= 0x80 else { return [tag, UInt8(contents.count)] + contents }
        let octets = withUnsafeBytes(of: contents.count.bigEndian, Array.init).drop(while: { $0 == 0 })
        return [tag, 0x80 | UInt8(octets.count)] + octets + contents
    }
}
