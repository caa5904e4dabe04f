import COpenSSL
import Foundation

/// RSA beyond RS256: a public key given as an X.509 SubjectPublicKeyInfo (how AppGallery Connect
/// shows an app's IAP public key and ONE store its license key, base64), SHA-256 signatures with
/// PSS padding (MGF1-SHA-256), which Huawei signs with when asked (`SHA256WithRSA/PSS`), and
/// SHA-512 PKCS#1 v1.5 ones (`SHA512withRSA`), which ONE store signs with.
extension RSAPublicKey {
    /// The key from its DER SubjectPublicKeyInfo; refuses anything but an RSA key settle accepts.
    package convenience init(subjectPublicKeyInfo der: Data) throws(CryptoError) {
        let key: OpaquePointer? = der.withUnsafeBytes { buffer in
            var cursor = buffer.bindMemory(to: UInt8.self).baseAddress
            return d2i_PUBKEY(nil, &cursor, buffer.count)
        }
        guard let key else {
            OpenSSLErrorQueue.drain()
            throw CryptoError("not a DER SubjectPublicKeyInfo")
        }
        guard EVP_PKEY_get_base_id(key) == EVP_PKEY_RSA else {
            EVP_PKEY_free(key)
            throw CryptoError("not an RSA public key")
        }
        if let problem = RSAKeyCheck.problem(with: key) {
            EVP_PKEY_free(key)
            throw CryptoError("public key is \(problem)")
        }
        self.init(owning: key)
    }

    /// Whether `signature` is a SHA-512 RSASSA-PKCS1-v1_5 signature of `message` (Java's
    /// `SHA512withRSA`, which ONE store signs with).
    package func verifySHA512(signature: Data, message: Data) -> Bool {
        verify(signature: signature, message: message, digest: EVP_sha512(), pss: false)
    }

    /// Whether `signature` is a SHA-256 RSASSA-PSS signature (MGF1-SHA-256, any salt length) of `message`.
    package func verifyPSS(signature: Data, message: Data) -> Bool {
        verify(signature: signature, message: message, digest: EVP_sha256(), pss: true)
    }
}

extension RSAPrivateKey {
    /// A SHA-256 RSASSA-PSS signature (MGF1-SHA-256, salt as long as the digest) of `message`:
    /// what the Huawei simulator signs with when asked for PSS.
    package func signPSS(_ message: Data) throws(CryptoError) -> Data {
        guard let context = EVP_MD_CTX_new() else { throw CryptoError.openSSL("cannot allocate a digest context") }
        defer { EVP_MD_CTX_free(context) }
        var keyContext: OpaquePointer?
        guard EVP_DigestSignInit(context, &keyContext, EVP_sha256(), nil, handle) == 1,
              EVP_PKEY_CTX_set_rsa_padding(keyContext, RSA_PKCS1_PSS_PADDING) == 1,
              EVP_PKEY_CTX_set_rsa_mgf1_md(keyContext, EVP_sha256()) == 1,
              EVP_PKEY_CTX_set_rsa_pss_saltlen(keyContext, 32) == 1 else {
            throw CryptoError.openSSL("cannot start a PSS signature")
        }
        var length = 0
        guard EVP_DigestSign(context, nil, &length, nil, 0) == 1 else { throw CryptoError.openSSL("cannot size a PSS signature") }
        var signature = [UInt8](repeating: 0, count: length)
        let signed = message.withUnsafeBytes { buffer in
            EVP_DigestSign(context, &signature, &length, buffer.bindMemory(to: UInt8.self).baseAddress, buffer.count)
        }
        guard signed == 1 else { throw CryptoError.openSSL("PSS signing failed") }
        return Data(signature.prefix(length))
    }

    /// A SHA-512 RSASSA-PKCS1-v1_5 signature (`SHA512withRSA`): what the ONE store simulator signs with.
    package func signSHA512(_ message: Data) throws(CryptoError) -> Data {
        guard let context = EVP_MD_CTX_new() else { throw CryptoError.openSSL("cannot allocate a digest context") }
        defer { EVP_MD_CTX_free(context) }
        guard EVP_DigestSignInit(context, nil, EVP_sha512(), nil, handle) == 1 else { throw CryptoError.openSSL("cannot start a signature") }
        var length = 0
        guard EVP_DigestSign(context, nil, &length, nil, 0) == 1 else { throw CryptoError.openSSL("cannot size a signature") }
        var signature = [UInt8](repeating: 0, count: length)
        let signed = message.withUnsafeBytes { buffer in
            EVP_DigestSign(context, &signature, &length, buffer.bindMemory(to: UInt8.self).baseAddress, buffer.count)
        }
        guard signed == 1 else { throw CryptoError.openSSL("SHA512withRSA signing failed") }
        return Data(signature.prefix(length))
    }

    /// The DER SubjectPublicKeyInfo of the public half, as AppGallery Connect shows it (base64).
    package var subjectPublicKeyInfo: Data {
        var buffer: UnsafeMutablePointer<UInt8>?
        let length = i2d_PUBKEY(handle, &buffer)
        guard length > 0, let buffer else { return Data() }
        defer { CRYPTO_free(buffer, #file, #line) }
        return Data(bytes: buffer, count: Int(length))
    }
}
