import COpenSSL
import Foundation

/// Writing PKCS#7 signedData, the other half of `PKCS7SignedData`: what the tests need to make
/// App Store receipts (a DER payload signed the way Apple signs it). settle itself only reads them.
extension PKCS7SignedData {
    /// A DER signedData holding `content`, signed with `privateKeyPEM` (the key of
    /// `certificate`, which is embedded as the signer's) and carrying `certificates` too, as
    /// Apple's receipts carry the WWDR intermediate. No signed attributes (PKCS7_NOATTR), as in
    /// Apple's receipts, so the signature covers the content itself; PKCS7_BINARY: the content
    /// is DER, so no MIME canonicalisation of line endings.
    /// https://docs.openssl.org/3.0/man3/PKCS7_sign/
    package static func sign(_ content: Data, certificate: X509Certificate, privateKeyPEM: String,
                             carrying certificates: [X509Certificate] = []) throws(CryptoError) -> Data {
        OpenSSLErrorQueue.drain()
        let bytes = Array(privateKeyPEM.utf8)
        let key: OpaquePointer? = bytes.withUnsafeBytes { buffer in
            guard let bio = BIO_new_mem_buf(buffer.baseAddress, Int32(buffer.count)) else { return nil }
            defer { BIO_free(bio) }
            // Never a passphrase prompt on the terminal: the callback supplies none.
            return PEM_read_bio_PrivateKey(bio, nil, { _, _, _, _ in 0 }, nil)
        }
        guard let key else { throw CryptoError.openSSL("the signer key is not a readable PEM private key") }
        defer { EVP_PKEY_free(key) }
        return try withExtendedLifetime(certificate) { () throws(CryptoError) -> Data in
            try envelope(content, signer: (certificate.handle, key), carrying: certificates)
        }
    }

    /// A signedData holding `content` and `certificates` but no SignerInfo: what `PKCS7_sign`
    /// makes without a signer ("certificates only"), which no reader may take as signed.
    package static func unsigned(_ content: Data, carrying certificates: [X509Certificate]) throws(CryptoError) -> Data {
        OpenSSLErrorQueue.drain()
        return try envelope(content, signer: nil, carrying: certificates)
    }

    private static func envelope(_ content: Data, signer: (certificate: OpaquePointer, key: OpaquePointer)?,
                                 carrying certificates: [X509Certificate]) throws(CryptoError) -> Data {
        guard let stack = OPENSSL_sk_new_null() else { throw CryptoError.openSSL("cannot allocate a certificate stack") }
        // sk_X509_free frees the stack, not the certificates: each X509Certificate keeps its own.
        defer { settle_X509_stack_free(stack) }
        for certificate in certificates {
            guard OPENSSL_sk_push(stack, UnsafeRawPointer(certificate.handle)) > 0 else {
                throw CryptoError.openSSL("cannot add a certificate to the stack")
            }
        }
        // A memory BIO with its own copy of the content (BIO_write), read by PKCS7_sign.
        guard let contentBIO = BIO_new(BIO_s_mem()) else { throw CryptoError.openSSL("cannot allocate a memory BIO") }
        defer { BIO_free(contentBIO) }
        let written = content.withUnsafeBytes { BIO_write(contentBIO, $0.baseAddress, Int32(clamping: $0.count)) }
        guard written == content.count || content.isEmpty else { throw CryptoError.openSSL("cannot write the content to a BIO") }
        let signed = withExtendedLifetime(certificates) {
            PKCS7_sign(signer?.certificate, signer?.key, stack, contentBIO, PKCS7_BINARY | PKCS7_NOATTR)
        }
        guard let signed else { throw CryptoError.openSSL("PKCS7_sign failed") }
        defer { PKCS7_free(signed) }
        guard let der = DEREncoding.bytes({ i2d_PKCS7(signed, $0) }) else {
            throw CryptoError.openSSL("cannot encode the PKCS#7 as DER")
        }
        return Data(der)
    }
}
