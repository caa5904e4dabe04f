import Foundation
import SettleApp
import SettleAppStore
import SettleBase

/// Builds legacy app receipts in Apple's format, for tests: a DER PKCS#7 signedData whose
/// content is the receipt payload (apple-protocol.md 3.6), really signed by the given key.
///
/// Only the attributes settle reads are written, in the order given rather than DER's SET OF
/// order (App Store receipts sort by encoded bytes, which is not type order): the parser keeps
/// file order whatever it is, and this way a test chooses it.
package enum AppReceiptBuilder {
    /// Why a receipt could not be built: PEM text holding no certificate (SettleBase's
    /// `CryptoError` says why OpenSSL refused the rest).
    package struct Failure: Error, CustomStringConvertible {
        package var message: String
        package var description: String { "AppReceiptBuilder: \(message)" }
    }

    /// A PKCS#7 signedData app receipt (DER, then base64) holding these attributes, signed with
    /// the given PEM certificate and private key; `chainPEM` certificates (intermediates) are
    /// embedded too, as Apple embeds its WWDR intermediate.
    package static func build(bundleId: String, environment: String = "Production", purchases: [AppReceipt.Purchase],
                             creationDate: String? = nil, signerCertificatePEM: String, signerKeyPEM: String,
                             chainPEM: [String] = []) throws -> String {
        let der = try sign(payload(bundleId: bundleId, environment: environment, purchases: purchases, creationDate: creationDate),
                           certificatePEM: signerCertificatePEM, keyPEM: signerKeyPEM, chainPEM: chainPEM)
        return Data(der).base64EncodedString()
    }

    /// When test receipts signed by the test chain say they were created: inside the chain's
    /// validity (2023-01-05 to 2033-01-01).
    package static let testCreationDate = "2026-11-29T10:04:05Z"

    /// A receipt signed by the test chain's leaf with the intermediate embedded: genuine for a
    /// configuration whose receipt root is the test CA (the simulator's root).
    package static func buildSignedByTestChain(bundleId: String, environment: String = "Production",
                                              purchases: [AppReceipt.Purchase],
                                              creationDate: String = testCreationDate) throws -> String {
        func fixture(_ name: String) throws -> String {
            try String(contentsOfFile: TestWorld.fixture("apple/test-chain/\(name)"), encoding: .utf8)
        }
        return try build(bundleId: bundleId, environment: environment, purchases: purchases, creationDate: creationDate,
                         signerCertificatePEM: fixture("testLeaf.pem"), signerKeyPEM: fixture("testLeaf.key"),
                         chainPEM: [fixture("testIntermediate.pem")])
    }

    /// The `SET OF ReceiptAttribute` that the receipt signs.
    package static func payload(bundleId: String, environment: String, purchases: [AppReceipt.Purchase],
                               creationDate: String? = nil) -> [UInt8] {
        var attributes = [
            DER.attribute(0, DER.utf8String(environment)),
            DER.attribute(2, DER.utf8String(bundleId)),
        ]
        if let creationDate { attributes.append(DER.attribute(12, DER.ia5String(creationDate))) }
        for purchase in purchases {
            var fields: [[UInt8]] = []
            if let quantity = purchase.quantity { fields.append(DER.attribute(1701, DER.integer(quantity))) }
            if let product = purchase.productId { fields.append(DER.attribute(1702, DER.utf8String(product))) }
            if let id = purchase.transactionId { fields.append(DER.attribute(1703, DER.utf8String(id))) }
            if let date = purchase.purchaseDate { fields.append(DER.attribute(1704, DER.ia5String(date))) }
            if let id = purchase.originalTransactionId { fields.append(DER.attribute(1705, DER.utf8String(id))) }
            attributes.append(DER.attribute(17, DER.set(fields)))
        }
        return DER.set(attributes)
    }

    /// Signs `payload` as PKCS#7 signedData with the content embedded (SettleBase's
    /// `PKCS7SignedData.sign`: no signed attributes, as in Apple's receipts).
    package static func sign(_ payload: [UInt8], certificatePEM: String, keyPEM: String, chainPEM: [String] = []) throws -> [UInt8] {
        let certificate = try certificates(certificatePEM)[0]
        return Array(try PKCS7SignedData.sign(Data(payload), certificate: certificate, privateKeyPEM: keyPEM,
                                              carrying: chainPEM.map { try certificates($0)[0] }))
    }

    /// A signedData holding `payload` and these certificates but no SignerInfo: what
    /// `PKCS7_sign` makes without a signer ("certificates only").
    package static func unsigned(_ payload: [UInt8], certificatesPEM: [String]) throws -> [UInt8] {
        Array(try PKCS7SignedData.unsigned(Data(payload), carrying: certificatesPEM.map { try certificates($0)[0] }))
    }

    /// The certificates of PEM text; the first is the one each argument above names.
    private static func certificates(_ pem: String) throws -> [X509Certificate] {
        let certificates = try X509Certificate.parse(pem: pem)
        guard !certificates.isEmpty else { throw Failure(message: "not a PEM certificate") }
        return certificates
    }
}

/// Just enough DER (X.690 section 10) to write receipt payloads.
private enum DER {
    static func attribute(_ type: Int, _ value: [UInt8]) -> [UInt8] {
        sequence([integer(type), integer(1), octetString(value)])
    }

    static func integer(_ value: Int) -> [UInt8] {
        // Big-endian two's complement with redundant leading 0x00 / 0xFF octets dropped (X.690 8.3.2).
        var octets = withUnsafeBytes(of: value.bigEndian, Array.init)
        while octets.count > 1, (octets[0] == 0 && octets[1] < 0x80) || (octets[0] == 0xFF && octets[1] >= 0x80) {
            octets.removeFirst()
        }
        return element(0x02, octets)
    }

    static func octetString(_ contents: [UInt8]) -> [UInt8] { element(0x04, contents) }
    static func utf8String(_ text: String) -> [UInt8] { element(0x0C, Array(text.utf8)) }
    static func ia5String(_ text: String) -> [UInt8] { element(0x16, Array(text.utf8)) }
    static func sequence(_ elements: [[UInt8]]) -> [UInt8] { element(0x30, elements.flatMap { $0 }) }
    static func set(_ elements: [[UInt8]]) -> [UInt8] { element(0x31, elements.flatMap { $0 }) }

    static func element(_ tag: UInt8, _ contents: [UInt8]) -> [UInt8] {
        [tag] + length(contents.count) + contents
    }

    static func length(_ count: Int) -> [UInt8] {
        guard count >= 0x80 else { return [UInt8(count)] }
        let octets = withUnsafeBytes(of: count.bigEndian, Array.init).drop(while: { $0 == 0 })
        return [0x80 | UInt8(octets.count)] + octets
    }
}
