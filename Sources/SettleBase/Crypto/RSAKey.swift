import COpenSSL
import Foundation

/// An RSA private key used for RS256 (RSASSA-PKCS1-v1_5 with SHA-256, RFC 7518 3.3): the
/// `private_key` of a Google service account, or a test key that mints tokens.
///
/// The class owns its `EVP_PKEY*` and frees it in `deinit`. `@unchecked Sendable` for the same
/// reason as `ES256PrivateKey`: never modified after loading, and every operation makes its own
/// `EVP_MD_CTX`. It has no description of its own, so printing it never shows key material.
package final class RSAPrivateKey: @unchecked Sendable {
    package let handle: OpaquePointer

    /// RFC 7518 3.3: "A key of size 2048 bits or larger MUST be used with these algorithms."
    package static let minimumBits: Int32 = 2048

    /// Loads a PEM private key: PKCS#8 ("BEGIN PRIVATE KEY", what Google's JSON key holds) or
    /// PKCS#1 ("BEGIN RSA PRIVATE KEY"). Errors never quote the PEM.
    package init(pem: String) throws(CryptoError) {
        let loaded = try PrivateKeyPEM.read(pem, expected: "-----BEGIN PRIVATE KEY-----",
                                            unencrypted: "the unencrypted key", formats: "PKCS#8 or PKCS#1")
        if let problem = RSAKeyCheck.problem(with: loaded) {
            EVP_PKEY_free(loaded)
            throw CryptoError("private key is \(problem)")
        }
        handle = loaded
    }

    package init(owning key: OpaquePointer) {
        handle = key
    }

    deinit {
        EVP_PKEY_free(handle)
    }

    /// The RS256 signature of `message`: RSASSA-PKCS1-v1_5 over SHA-256, as long as the modulus.
    package func sign(_ message: Data) throws(CryptoError) -> Data {
        Data(try digestSignSHA256(message, key: handle, algorithm: "RS256"))
    }

    /// The public half, for verifying what this key signed.
    package var publicKey: RSAPublicKey {
        // EVP_PKEY_up_ref adds a reference for the new owner, so each object frees its own.
        EVP_PKEY_up_ref(handle)
        return RSAPublicKey(owning: handle)
    }
}

/// An RSA public key that checks RS256 signatures: one of Google's signing keys from a JWKS, or
/// the public half of an `RSAPrivateKey`. Owns its `EVP_PKEY*` reference and frees it in `deinit`.
package final class RSAPublicKey: @unchecked Sendable {
    package let handle: OpaquePointer

    package init(owning key: OpaquePointer) {
        handle = key
    }

    private static let modulusName: StaticString = "n"
    private static let exponentName: StaticString = "e"

    private static func cString(_ text: StaticString) -> UnsafePointer<CChar> {
        UnsafeRawPointer(text.utf8Start).assumingMemoryBound(to: CChar.self)
    }

    /// Builds the key from a JWK's `n` and `e` (RFC 7518 6.3.1: unsigned big-endian integers).
    package convenience init(modulus: Data, exponent: Data) throws(CryptoError) {
        guard !modulus.isEmpty, !exponent.isEmpty, exponent.count <= 8 else {
            throw CryptoError("RSA key has an empty modulus or an unusable exponent")
        }
        guard let builder = OSSL_PARAM_BLD_new() else { throw CryptoError.openSSL("cannot allocate a parameter builder") }
        defer { OSSL_PARAM_BLD_free(builder) }
        let n = [UInt8](modulus), e = [UInt8](exponent)
        // BN_bin2bn reads big-endian bytes into a new BIGNUM; the builder copies what it is given.
        guard let bigN = BN_bin2bn(n, Int32(n.count), nil) else { throw CryptoError.openSSL("cannot read the modulus") }
        defer { BN_free(bigN) }
        guard let bigE = BN_bin2bn(e, Int32(e.count), nil) else { throw CryptoError.openSSL("cannot read the exponent") }
        defer { BN_free(bigE) }
        // "n" and "e" are OSSL_PKEY_PARAM_RSA_N and OSSL_PKEY_PARAM_RSA_E (provider-keymgmt(7)). The
        // builder keeps the name pointers until OSSL_PARAM_BLD_to_param, so they must be static
        // strings, not the temporary C strings Swift makes for a String argument.
        guard OSSL_PARAM_BLD_push_BN(builder, Self.cString(Self.modulusName), bigN) == 1,
              OSSL_PARAM_BLD_push_BN(builder, Self.cString(Self.exponentName), bigE) == 1,
              let params = OSSL_PARAM_BLD_to_param(builder) else {
            throw CryptoError.openSSL("cannot build RSA key parameters")
        }
        defer { OSSL_PARAM_free(params) }
        guard let context = EVP_PKEY_CTX_new_from_name(nil, "RSA", nil) else { throw CryptoError.openSSL("cannot create an RSA context") }
        defer { EVP_PKEY_CTX_free(context) }
        var key: OpaquePointer?
        guard EVP_PKEY_fromdata_init(context) == 1,
              EVP_PKEY_fromdata(context, &key, settle_EVP_PKEY_PUBLIC_KEY(), params) == 1, let key else {
            throw CryptoError.openSSL("cannot make an RSA public key from n and e")
        }
        if let problem = RSAKeyCheck.problem(with: key) {
            EVP_PKEY_free(key)
            throw CryptoError("public key is \(problem)")
        }
        self.init(owning: key)
    }

    deinit {
        EVP_PKEY_free(handle)
    }

    /// The JWK `n` and `e` of this key (for publishing a test key in a JWKS).
    package var components: (modulus: Data, exponent: Data) {
        (bigNumberParameter("n"), bigNumberParameter("e"))
    }

    private func bigNumberParameter(_ name: String) -> Data {
        var number: OpaquePointer?
        guard EVP_PKEY_get_bn_param(handle, name, &number) == 1, let number else {
            OpenSSLErrorQueue.drain()
            return Data()
        }
        defer { BN_free(number) }
        // BN_num_bytes is a macro over BN_num_bits.
        var bytes = [UInt8](repeating: 0, count: (Int(BN_num_bits(number)) + 7) / 8)
        let written = BN_bn2bin(number, &bytes)
        return Data(bytes.prefix(Int(max(0, written))))
    }

    /// Whether `signature` is a valid RS256 signature of `message` under this key.
    package func verify(signature: Data, message: Data) -> Bool {
        verify(signature: signature, message: message, digest: EVP_sha256(), pss: false)
    }

    /// Whether `signature` signs `message` with `digest`, padded PKCS#1 v1.5 or PSS (MGF1 with the
    /// same digest, any salt length).
    func verify(signature: Data, message: Data, digest: OpaquePointer?, pss: Bool) -> Bool {
        // An RSA signature is exactly as long as the modulus (RFC 8017 8.2.2 step 1, 8.1.2 step 1).
        guard signature.count == Int(EVP_PKEY_get_size(handle)) else { return false }
        guard let context = EVP_MD_CTX_new() else { return false }
        defer { EVP_MD_CTX_free(context) }
        var keyContext: OpaquePointer?
        guard EVP_DigestVerifyInit(context, &keyContext, digest, nil, handle) == 1,
              !pss || (EVP_PKEY_CTX_set_rsa_padding(keyContext, RSA_PKCS1_PSS_PADDING) == 1
                  && EVP_PKEY_CTX_set_rsa_mgf1_md(keyContext, digest) == 1
                  && EVP_PKEY_CTX_set_rsa_pss_saltlen(keyContext, RSA_PSS_SALTLEN_AUTO) == 1) else {
            OpenSSLErrorQueue.drain()
            return false
        }
        let signatureBytes = [UInt8](signature)
        let result = message.withUnsafeBytes { buffer in
            EVP_DigestVerify(context, signatureBytes, signatureBytes.count, buffer.bindMemory(to: UInt8.self).baseAddress, buffer.count)
        }
        // "returns 1 for success; any other value indicates failure" (EVP_DigestVerifyInit(3)); a bad
        // signature leaves entries on the thread's error queue, dropped here.
        guard result == 1 else {
            OpenSSLErrorQueue.drain()
            return false
        }
        return true
    }
}

/// Why a key cannot be used for RS256, if it cannot.
package enum RSAKeyCheck {
    package static func problem(with key: OpaquePointer) -> String? {
        guard EVP_PKEY_get_base_id(key) == EVP_PKEY_RSA else {
            let type = EVP_PKEY_get0_type_name(key).map { String(cString: $0) } ?? "of an unknown type"
            return "not an RSA key (\(type)); RS256 needs RSA"
        }
        let bits = EVP_PKEY_get_bits(key)
        guard bits >= RSAPrivateKey.minimumBits else { return "a \(bits)-bit RSA key; RS256 needs at least 2048 bits" }
        return nil
    }
}
