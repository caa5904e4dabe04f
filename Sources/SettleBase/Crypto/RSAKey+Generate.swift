import COpenSSL
import Foundation

extension RSAPrivateKey {
    /// A fresh RSA key as an unencrypted PKCS#8 PEM: for tests and the simulator, which play a
    /// Google service account and Google's push signer with throwaway keys rather than shipping any.
    package static func generatePEM(bits: Int32 = 2048) throws(CryptoError) -> String {
        guard let context = EVP_PKEY_CTX_new_id(EVP_PKEY_RSA, nil) else { throw CryptoError.openSSL("cannot create a key context") }
        defer { EVP_PKEY_CTX_free(context) }
        var key: OpaquePointer?
        guard EVP_PKEY_keygen_init(context) == 1, EVP_PKEY_CTX_set_rsa_keygen_bits(context, bits) == 1,
              EVP_PKEY_keygen(context, &key) == 1, let key else {
            throw CryptoError.openSSL("cannot generate an RSA key")
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
