import COpenSSL
import Foundation
import SettleApp
import SettleAppStore

/// Builds legacy app receipts in Apple's format, for tests: a DER PKCS#7 signedData whose
/// content is the receipt payload (apple-protocol.md 3.6), really signed by the given key.
///
/// Only the attributes settle reads are written, in the order given rather than DER's SET OF
/// order (App Store receipts sort by encoded bytes, which is not type order): the parser keeps
/// file order whatever it is, and this way a test chooses it.
package enum AppReceiptBuilder {
    /// Why a receipt could not be built: an unreadable PEM or a failed OpenSSL call.
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

    /// Signs `payload` as PKCS#7 signedData with the content embedded.
    package static func sign(_ payload: [UInt8], certificatePEM: String, keyPEM: String, chainPEM: [String] = []) throws -> [UInt8] {
        ERR_clear_error()
        let certificate = try readCertificate(certificatePEM)
        defer { X509_free(certificate) }

        guard let keyBIO = memoryBIO(Array(keyPEM.utf8)) else { throw failure("BIO_write") }
        defer { BIO_free(keyBIO) }
        guard let key = PEM_read_bio_PrivateKey(keyBIO, nil, nil, nil) else {
            throw failure("the signer key is not a PEM private key")
        }
        defer { EVP_PKEY_free(key) }

        return try envelope(payload, certificate: certificate, key: key, chainPEM: chainPEM)
    }

    /// A signedData holding `payload` and these certificates but no SignerInfo: what
    /// `PKCS7_sign` makes without a signer ("certificates only").
    package static func unsigned(_ payload: [UInt8], certificatesPEM: [String]) throws -> [UInt8] {
        ERR_clear_error()
        return try envelope(payload, certificate: nil, key: nil, chainPEM: certificatesPEM)
    }

    private static func envelope(_ payload: [UInt8], certificate: OpaquePointer?, key: OpaquePointer?,
                                 chainPEM: [String]) throws -> [UInt8] {
        guard let stack = OPENSSL_sk_new_null() else { throw failure("OPENSSL_sk_new_null") }
        var extra: [OpaquePointer] = []
        defer {
            settle_X509_stack_free(stack)
            extra.forEach { X509_free($0) }
        }
        for pem in chainPEM {
            let certificate = try readCertificate(pem)
            extra.append(certificate)
            guard OPENSSL_sk_push(stack, UnsafeRawPointer(certificate)) > 0 else { throw failure("OPENSSL_sk_push") }
        }
        guard let contentBIO = memoryBIO(payload) else { throw failure("BIO_write") }
        defer { BIO_free(contentBIO) }
        // PKCS7_BINARY: the payload is DER, so no MIME canonicalisation of line endings.
        // PKCS7_NOATTR: no signed attributes, as in Apple's receipts, so the signature covers the
        // payload itself. https://docs.openssl.org/3.0/man3/PKCS7_sign/
        guard let pkcs7 = PKCS7_sign(certificate, key, stack, contentBIO, PKCS7_BINARY | PKCS7_NOATTR) else {
            throw failure("PKCS7_sign")
        }
        defer { PKCS7_free(pkcs7) }

        // "If *out is NULL ... returns the length": measure first, then encode into our own buffer
        // so nothing has to be released with OPENSSL_free, a macro Swift cannot call.
        // https://docs.openssl.org/3.0/man3/d2i_X509/
        let length = i2d_PKCS7(pkcs7, nil)
        guard length > 0 else { throw failure("i2d_PKCS7") }
        var der = [UInt8](repeating: 0, count: Int(length))
        let written = der.withUnsafeMutableBufferPointer { buffer in
            var cursor = buffer.baseAddress
            return i2d_PKCS7(pkcs7, &cursor)
        }
        guard written == length else { throw failure("i2d_PKCS7") }
        return der
    }

    private static func readCertificate(_ pem: String) throws -> OpaquePointer {
        guard let bio = memoryBIO(Array(pem.utf8)) else { throw failure("BIO_write") }
        defer { BIO_free(bio) }
        guard let certificate = PEM_read_bio_X509(bio, nil, nil, nil) else {
            throw failure("not a PEM certificate")
        }
        return certificate
    }

    /// A memory BIO holding its own copy of `bytes`. Not BIO_new_mem_buf: that one reads the
    /// caller's buffer in place, and a Swift array's storage is only pinned inside withUnsafeBytes.
    private static func memoryBIO(_ bytes: [UInt8]) -> OpaquePointer? {
        guard let bio = BIO_new(BIO_s_mem()) else { return nil }
        let written = bytes.withUnsafeBytes { BIO_write(bio, $0.baseAddress, Int32(clamping: $0.count)) }
        guard written == bytes.count else {
            BIO_free(bio)
            return nil
        }
        return bio
    }

    private static func failure(_ what: String) -> Failure {
        var message = what
        let code = ERR_get_error()
        if code != 0 {
            var buffer = [CChar](repeating: 0, count: 256)
            ERR_error_string_n(code, &buffer, buffer.count)
            message += ": " + String(decoding: buffer.prefix(while: { $0 != 0 }).map { UInt8(bitPattern: $0) }, as: UTF8.self)
        }
        ERR_clear_error()
        return Failure(message: message)
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
