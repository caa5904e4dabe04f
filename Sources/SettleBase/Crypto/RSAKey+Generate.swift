import COpenSSL
import Foundation

extension RSAPrivateKey {
    /// A fresh RSA key as an unencrypted PKCS#8 PEM: for tests and the simulator, which play a
    /// Google service account and Google's push signer with throwaway keys rather than shipping any.
    package static func generatePEM(bits: Int32 = 2048) throws(CryptoError) -> String {
        try PrivateKeyPEM.generate(EVP_PKEY_RSA, what: "an RSA key") { context in
            EVP_PKEY_CTX_set_rsa_keygen_bits(context, bits) == 1
        }
    }
}
