import COpenSSL
import Foundation

/// Private keys as PEM text, read and written the one way both signing keys (ES256 and RS256)
/// need: unencrypted only, never prompting for a passphrase, and never quoting the key in an
/// error.
enum PrivateKeyPEM {
    /// Reads an unencrypted PEM private key of any algorithm; the caller checks it is the kind
    /// it signs with. `expected` names the PEM header a user should have given, `unencrypted`
    /// what settle needs instead of an encrypted key, `formats` the encodings it reads.
    static func read(_ pem: String, expected: String, unencrypted: String, formats: String) throws(CryptoError) -> OpaquePointer {
        guard pem.contains("-----BEGIN") else {
            throw CryptoError("private key is not PEM (expected \(expected))")
        }
        // PKCS#8 and legacy OpenSSL encryption markers: caught here to give a clear message
        // rather than OpenSSL's "bad decrypt".
        guard !pem.contains("-----BEGIN ENCRYPTED PRIVATE KEY-----"), !pem.contains("Proc-Type: 4,ENCRYPTED") else {
            throw CryptoError("private key is encrypted; settle needs \(unencrypted)")
        }
        let bytes = Array(pem.utf8)
        let loaded: OpaquePointer? = bytes.withUnsafeBytes { buffer in
            guard let bio = BIO_new_mem_buf(buffer.baseAddress, Int32(buffer.count)) else { return nil }
            defer { BIO_free(bio) }
            // The password callback refuses to supply a passphrase. With a NULL callback
            // OpenSSL would fall back to prompting on the controlling terminal, which must
            // never happen inside a daemon.
            return PEM_read_bio_PrivateKey(bio, nil, { _, _, _, _ in 0 }, nil)
        }
        guard let loaded else { throw CryptoError.openSSL("private key is not a readable \(formats) PEM key") }
        return loaded
    }

    /// A fresh key of `algorithm` (an `EVP_PKEY_*` id), set up by `configure` before it is
    /// generated, as an unencrypted PKCS#8 PEM: for the demo, the tests and the simulators,
    /// which play a store's credentials with throwaway keys rather than shipping any.
    static func generate(_ algorithm: Int32, what: String,
                         configure: (OpaquePointer) -> Bool) throws(CryptoError) -> String {
        guard let context = EVP_PKEY_CTX_new_id(algorithm, nil) else { throw CryptoError.openSSL("cannot create a key context") }
        defer { EVP_PKEY_CTX_free(context) }
        var key: OpaquePointer?
        guard EVP_PKEY_keygen_init(context) == 1, configure(context), EVP_PKEY_keygen(context, &key) == 1, let key else {
            throw CryptoError.openSSL("cannot generate \(what)")
        }
        defer { EVP_PKEY_free(key) }
        guard let bio = BIO_new(BIO_s_mem()) else { throw CryptoError.openSSL("cannot allocate a memory BIO") }
        defer { BIO_free(bio) }
        guard PEM_write_bio_PKCS8PrivateKey(bio, key, nil, nil, 0, nil, nil) == 1 else {
            throw CryptoError.openSSL("cannot write the key as PKCS#8")
        }
        var bytes = [UInt8](repeating: 0, count: Int(BIO_ctrl_pending(bio)))
        guard BIO_read(bio, &bytes, Int32(bytes.count)) == bytes.count else { throw CryptoError.openSSL("cannot read the key back") }
        return String(decoding: bytes, as: UTF8.self)
    }
}
