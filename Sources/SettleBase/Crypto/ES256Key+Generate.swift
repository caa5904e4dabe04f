import COpenSSL
import Foundation

extension ES256PrivateKey {
    /// A fresh P-256 key as an unencrypted PKCS#8 PEM: for `settle demo`, which plays
    /// App Store Connect with a throwaway key rather than shipping one.
    package static func generatePEM() throws(CryptoError) -> String {
        try PrivateKeyPEM.generate(EVP_PKEY_EC, what: "a P-256 key") { context in
            EVP_PKEY_CTX_set_ec_paramgen_curve_nid(context, NID_X9_62_prime256v1) == 1
        }
    }
}
