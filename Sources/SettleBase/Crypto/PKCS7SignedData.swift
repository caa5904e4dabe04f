import COpenSSL
import Foundation

/// Why a PKCS#7 signedData could not be read or verified, with OpenSSL's reason text.
package enum PKCS7Failure: Error, Sendable, Equatable {
    /// OpenSSL cannot read the bytes as a PKCS#7 `ContentInfo`.
    case unreadable(String)
    /// A signer's certificate is not among the certificates the envelope carries.
    case signerCertificateMissing(String)
    /// The content digest or a signature does not verify.
    case signatureInvalid(String)
}

/// A parsed PKCS#7 signedData (RFC 2315): the certificates it carries, its signers, and its
/// content once the signatures over it verify. Owns its `PKCS7*` and frees it in `deinit`.
///
/// It checks signatures only, never a certificate chain: which chain a signer must have is the
/// caller's rule (the App Store's receipt chain is `AppleCertificateChain`, in SettleAppStore),
/// checked on `signerCertificates()` before `verifiedContent()` is trusted.
package final class PKCS7SignedData {
    private let handle: UnsafeMutablePointer<PKCS7>

    package init(der: Data) throws(PKCS7Failure) {
        let parsed = der.withUnsafeBytes { buffer -> UnsafeMutablePointer<PKCS7>? in
            var cursor = buffer.bindMemory(to: UInt8.self).baseAddress.map { UnsafePointer($0) }
            return d2i_PKCS7(nil, &cursor, buffer.count)
        }
        guard let parsed else {
            let reason = OpenSSLErrorQueue.drain().map { " (OpenSSL: \($0))" } ?? ""
            throw .unreadable("OpenSSL cannot read the PKCS#7\(reason)")
        }
        handle = parsed
    }

    deinit { PKCS7_free(handle) }

    /// SignerInfos in the signedData; -1 when it is not signedData.
    package var signerCount: Int { Int(settle_PKCS7_signer_count(handle)) }

    /// The certificates the envelope carries, in order (each holds its own reference).
    package var certificates: [X509Certificate] {
        guard let carried = settle_PKCS7_certificates(handle) else { return [] }
        return (0..<settle_X509_stack_count(carried)).compactMap { index in
            settle_X509_stack_value(carried, index).map { X509Certificate(sharing: $0) }
        }
    }

    /// Each signer's certificate, looked up among the envelope's own certificates (flags 0).
    /// Throws when a signer's certificate is not there; never empty when it returns.
    /// https://docs.openssl.org/3.0/man3/PKCS7_verify/
    package func signerCertificates() throws(PKCS7Failure) -> [X509Certificate] {
        defer { OpenSSLErrorQueue.drain() }
        guard let signers = PKCS7_get0_signers(handle, nil, 0) else {
            let reason = OpenSSLErrorQueue.drain() ?? "no signer certificate"
            throw .signerCertificateMissing("the signer's certificate is not in the envelope (OpenSSL: \(reason))")
        }
        defer { settle_X509_stack_free(signers) }
        let certificates = (0..<settle_X509_stack_count(signers)).compactMap { index in
            settle_X509_stack_value(signers, index).map { X509Certificate(sharing: $0) }
        }
        guard !certificates.isEmpty else { throw .signerCertificateMissing("the envelope names no signer certificate") }
        return certificates
    }

    /// Checks the content digest and every signer's signature over the content, and returns the
    /// content OpenSSL verified. Certificate chains are NOT checked here (PKCS7_NOVERIFY): the
    /// caller checks `signerCertificates()` against its own rule first. PKCS7_BINARY: the content
    /// is DER, not MIME text.
    package func verifiedContent() throws(PKCS7Failure) -> Data {
        defer { OpenSSLErrorQueue.drain() }
        guard let out = BIO_new(BIO_s_mem()) else { throw .signatureInvalid("cannot allocate a memory BIO") }
        defer { BIO_free(out) }
        guard PKCS7_verify(handle, nil, nil, nil, out, PKCS7_NOVERIFY | PKCS7_BINARY) == 1 else {
            let reason = OpenSSLErrorQueue.drain() ?? "verification failed"
            throw .signatureInvalid("the signature does not verify over the content (OpenSSL: \(reason))")
        }
        return Self.readAll(out)
    }

    private static func readAll(_ bio: OpaquePointer) -> Data {
        var data = Data()
        var chunk = [UInt8](repeating: 0, count: 16 * 1024)
        while true {
            let count = BIO_read(bio, &chunk, Int32(chunk.count))
            guard count > 0 else { break }
            data.append(contentsOf: chunk[0..<Int(count)])
        }
        return data
    }
}
