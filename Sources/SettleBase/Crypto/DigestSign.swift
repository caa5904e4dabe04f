import COpenSSL
import Foundation

/// The one-shot EVP_DigestSign both JWS algorithms settle signs with (RS256, ES256): SHA-256 of
/// `message`, signed by `key`, as OpenSSL writes it (for ECDSA, DER; ES256 converts it to r||s).
/// `algorithm` names the algorithm in errors.
func digestSignSHA256(_ message: Data, key: OpaquePointer, algorithm: String) throws(CryptoError) -> [UInt8] {
    guard let context = EVP_MD_CTX_new() else { throw CryptoError.openSSL("cannot allocate a digest context") }
    defer { EVP_MD_CTX_free(context) }
    // EVP_sha256() makes the one-shot EVP_DigestSign hash the message itself; for RSA, PKCS#1 v1.5
    // is OpenSSL's default padding (EVP_PKEY_CTX_set_rsa_padding(3)), which is RS256's.
    guard EVP_DigestSignInit(context, nil, EVP_sha256(), nil, key) == 1 else {
        throw CryptoError.openSSL("cannot start an \(algorithm) signature")
    }
    // A first call with a NULL buffer reports the maximum size; the second sets `length` to
    // the size actually written.
    var length = 0
    guard EVP_DigestSign(context, nil, &length, nil, 0) == 1 else { throw CryptoError.openSSL("cannot size an \(algorithm) signature") }
    var signature = [UInt8](repeating: 0, count: length)
    let signed = message.withUnsafeBytes { buffer in
        EVP_DigestSign(context, &signature, &length, buffer.bindMemory(to: UInt8.self).baseAddress, buffer.count)
    }
    guard signed == 1 else { throw CryptoError.openSSL("\(algorithm) signing failed") }
    return Array(signature.prefix(length))
}
