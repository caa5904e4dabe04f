import COpenSSL
import Foundation

extension ES256PrivateKey {
    /// A fresh P-256 key as an unencrypted PKCS#8 PEM: for `settle demo`, which plays
    /// App Store Connect with a throwaway key rather than shipping one.
    package static func generatePEM() throws(CryptoError) -> String {
        guard let context = EVP_PKEY_CTX_new_id(EVP_PKEY_EC, nil) else { throw CryptoError.openSSL("cannot create a key context") }
        defer { EVP_PKEY_CTX_free(context) }
        var key: OpaquePointer?
        guard EVP_PKEY_keygen_init(context) == 1,
              EVP_PKEY_CTX_set_ec_paramgen_curve_nid(context, NID_X9_62_prime256v1) == 1,
              EVP_PKEY_keygen(context, &key) == 1, let key else {
            throw CryptoError.openSSL("cannot generate a P-256 key")
        }
        defer { EVP_PKEY_free(key) }
        guard let bio = BIO_new(BIO_s_mem()) else { throw CryptoError.openSSL("cannot allocate a memory BIO") }
        defer { BIO_free(bio) }
        guard PEM_write_bio_PKCS8PrivateKey(bio, key, nil, nil, 0, nil, nil) == 1 else {
            throw CryptoError.openSSL("cannot write the key as PKCS#8")
        }
        var bytes = [UInt8](repeating: 0, count: Int(BIO_ctrl_pending(bio)))
        let read = BIO_read(bio, &bytes, Int32(bytes.count))
        guard read == bytes.count else { throw CryptoError.openSSL("cannot read the key back") }
        return String(decoding: bytes, as: UTF8.self)
    }
}
