import COpenSSL
import Foundation

/// An ECDSA P-256 private key used for ES256 (RFC 7518 3.4): the App Store Connect `.p8`
/// key that signs App Store Server API tokens, or a test key that mints JWS.
///
/// The class owns its `EVP_PKEY*` and frees it in `deinit`. It is `@unchecked Sendable`
/// because the key is never modified after loading and every operation creates its own
/// `EVP_MD_CTX`, which is how OpenSSL 3 supports sharing one key between threads.
package final class ES256PrivateKey: @unchecked Sendable {
    package let handle: OpaquePointer

    /// Loads a PEM private key: PKCS#8 ("BEGIN PRIVATE KEY", the `.p8` App Store Connect
    /// issues) or SEC1 ("BEGIN EC PRIVATE KEY"). Anything that is not an unencrypted EC
    /// P-256 key is refused; error messages never quote the PEM.
    package init(pem: String) throws(CryptoError) {
        let loaded = try PrivateKeyPEM.read(
            pem, expected: "-----BEGIN PRIVATE KEY----- or -----BEGIN EC PRIVATE KEY-----",
            unencrypted: "the unencrypted .p8 key", formats: "PKCS#8 or SEC1")
        if let problem = ES256KeyCheck.problem(with: loaded) {
            EVP_PKEY_free(loaded)
            throw CryptoError("private key is \(problem); ES256 needs an EC P-256 (prime256v1) key")
        }
        handle = loaded
    }

    deinit {
        EVP_PKEY_free(handle)
    }

    /// Signs `message` with ECDSA P-256 over SHA-256 and returns the 64-byte JWS form
    /// `r || s` (each left-padded to 32 bytes), not the DER form OpenSSL produces.
    package func sign(_ message: Data) throws(CryptoError) -> Data {
        let der = try digestSignSHA256(message, key: handle, algorithm: "ES256")
        guard let raw = ECDSASignature.raw(fromDER: der) else {
            throw CryptoError.openSSL("OpenSSL returned an ECDSA signature that cannot be converted to r||s")
        }
        return raw
    }

    /// The public half as a DER SubjectPublicKeyInfo.
    package var publicKeyDER: Data {
        // i2d_PUBKEY writes only the public part (SubjectPublicKeyInfo), never the
        // private scalar.
        Data(DEREncoding.bytes { i2d_PUBKEY(handle, $0) } ?? [])
    }

    /// The public half, for verifying what this key signed.
    package var publicKey: ES256PublicKey {
        // EVP_PKEY_up_ref adds a reference for the new owner, so both objects can free
        // their handle independently. The key was checked to be P-256 when it was loaded.
        EVP_PKEY_up_ref(handle)
        return ES256PublicKey(owning: handle)
    }
}

/// An ECDSA P-256 public key that checks ES256 signatures: the key of a JWS leaf
/// certificate or the public half of an `ES256PrivateKey`.
///
/// The class owns its `EVP_PKEY*` (holding its own reference) and frees it in `deinit`;
/// it is `@unchecked Sendable` for the same reason as `ES256PrivateKey`.
package final class ES256PublicKey: @unchecked Sendable {
    package let handle: OpaquePointer

    /// Parses a DER SubjectPublicKeyInfo; anything but an EC P-256 key is refused.
    package convenience init(der: Data) throws(CryptoError) {
        var consumed = 0
        let parsed: OpaquePointer? = der.withUnsafeBytes { buffer in
            guard let base = buffer.bindMemory(to: UInt8.self).baseAddress else { return nil }
            var cursor: UnsafePointer<UInt8>? = base
            let key = d2i_PUBKEY(nil, &cursor, buffer.count)
            if let cursor { consumed = cursor - base }
            return key
        }
        guard let parsed else { throw CryptoError.openSSL("public key is not a DER SubjectPublicKeyInfo") }
        try self.init(checking: parsed, extraBytes: der.count - consumed)
    }

    /// Takes the public key of a certificate (for a JWS, the leaf of `x5c`); refused unless
    /// it is EC P-256.
    package convenience init(certificate: X509Certificate) throws(CryptoError) {
        // X509_get_pubkey, unlike X509_get0_pubkey, takes a reference, so the key stays
        // valid for this object's lifetime regardless of the certificate's.
        guard let key = X509_get_pubkey(certificate.handle) else {
            throw CryptoError.openSSL("certificate \(certificate.subjectSummary) has no readable public key")
        }
        try self.init(checking: key, extraBytes: 0)
    }

    private convenience init(checking key: OpaquePointer, extraBytes: Int) throws(CryptoError) {
        if extraBytes != 0 {
            EVP_PKEY_free(key)
            throw CryptoError("public key has \(extraBytes) unexpected bytes after its DER encoding")
        }
        if let problem = ES256KeyCheck.problem(with: key) {
            EVP_PKEY_free(key)
            throw CryptoError("public key is \(problem); ES256 needs an EC P-256 (prime256v1) key")
        }
        self.init(owning: key)
    }

    /// Takes ownership of a reference to a key already known to be EC P-256.
    package init(owning key: OpaquePointer) {
        handle = key
    }

    deinit {
        EVP_PKEY_free(handle)
    }
}

/// ES256 signature verification (ECDSA P-256 with SHA-256, signature as JWS `r || s`).
package enum ES256 {
    /// Whether `rs` is a valid ES256 signature of `message` under `publicKey`. Signatures
    /// that are not exactly 64 bytes are refused before OpenSSL sees them.
    package static func verify(signature rs: Data, message: Data, publicKey: ES256PublicKey) -> Bool {
        guard rs.count == 64, let der = ECDSASignature.der(fromRaw: rs) else { return false }
        guard let context = EVP_MD_CTX_new() else { return false }
        defer { EVP_MD_CTX_free(context) }
        guard EVP_DigestVerifyInit(context, nil, EVP_sha256(), nil, publicKey.handle) == 1 else {
            OpenSSLErrorQueue.drain()
            return false
        }
        let result = message.withUnsafeBytes { buffer in
            EVP_DigestVerify(context, der, der.count, buffer.bindMemory(to: UInt8.self).baseAddress, buffer.count)
        }
        // EVP_DigestVerify: "returns 1 for success; any other value indicates failure"
        // (EVP_DigestVerifyInit(3)). A bad signature leaves entries on the thread's error
        // queue, which are dropped so they are not reported against a later call.
        guard result == 1 else {
            OpenSSLErrorQueue.drain()
            return false
        }
        return true
    }

    /// Whether `rs` is a valid ES256 signature of `message` by the key of `certificate`;
    /// false as well when that key is not EC P-256.
    package static func verify(signature rs: Data, message: Data, certificate: X509Certificate) -> Bool {
        guard let key = try? ES256PublicKey(certificate: certificate) else { return false }
        return verify(signature: rs, message: message, publicKey: key)
    }
}

/// Why a key cannot be used for ES256, if it cannot.
package enum ES256KeyCheck {
    package static func problem(with key: OpaquePointer) -> String? {
        // EVP_PKEY_get_base_id maps key-type aliases (e.g. SM2 keys) to their base type;
        // EVP_PKEY_EC is the id of "id-ecPublicKey" keys.
        guard EVP_PKEY_get_base_id(key) == EVP_PKEY_EC else {
            let type = EVP_PKEY_get0_type_name(key).map { String(cString: $0) } ?? "of an unknown type"
            return "not an EC key (\(type))"
        }
        var name = [CChar](repeating: 0, count: 80)
        var length = 0
        // EVP_PKEY_get_group_name gives the curve's short name, e.g. "prime256v1"; keys
        // with explicit curve parameters instead of a named curve have none and are refused.
        guard EVP_PKEY_get_group_name(key, &name, name.count, &length) == 1 else {
            OpenSSLErrorQueue.drain()
            return "an EC key without a named curve"
        }
        let curve = String(decoding: name.prefix(length).map { UInt8(bitPattern: $0) }, as: UTF8.self)
        guard curve == SN_X9_62_prime256v1 else { return "an EC key on curve \(curve)" }
        return nil
    }
}

/// Conversion between the two encodings of an ECDSA P-256 signature: the DER
/// `ECDSA-Sig-Value` OpenSSL speaks and the fixed 64-byte `r || s` JWS uses (RFC 7518 3.4).
package enum ECDSASignature {
    package static let scalarLength = 32

    package static func raw(fromDER der: [UInt8]) -> Data? {
        let signature: OpaquePointer? = der.withUnsafeBufferPointer { buffer in
            var cursor = buffer.baseAddress
            return d2i_ECDSA_SIG(nil, &cursor, buffer.count)
        }
        guard let signature else {
            OpenSSLErrorQueue.drain()
            return nil
        }
        defer { ECDSA_SIG_free(signature) }
        var r = [UInt8](repeating: 0, count: scalarLength)
        var s = [UInt8](repeating: 0, count: scalarLength)
        // BN_bn2binpad writes big-endian and left-pads with zeros to exactly
        // `scalarLength` bytes (r and s are often shorter); it returns -1 if the number
        // does not fit, which cannot happen for a P-256 signature but is checked anyway.
        guard BN_bn2binpad(ECDSA_SIG_get0_r(signature), &r, Int32(scalarLength)) == Int32(scalarLength),
              BN_bn2binpad(ECDSA_SIG_get0_s(signature), &s, Int32(scalarLength)) == Int32(scalarLength)
        else { return nil }
        return Data(r + s)
    }

    package static func der(fromRaw raw: Data) -> [UInt8]? {
        guard raw.count == 2 * scalarLength, let signature = ECDSA_SIG_new() else { return nil }
        defer { ECDSA_SIG_free(signature) }
        let bytes = [UInt8](raw)
        // BN_bin2bn reads big-endian bytes into newly allocated BIGNUMs.
        guard let r = BN_bin2bn(bytes, Int32(scalarLength), nil) else { return nil }
        guard let s = BN_bin2bn(Array(bytes[scalarLength...]), Int32(scalarLength), nil) else {
            BN_free(r)
            return nil
        }
        // ECDSA_SIG_set0 takes ownership of r and s only when it succeeds.
        guard ECDSA_SIG_set0(signature, r, s) == 1 else {
            BN_free(r)
            BN_free(s)
            return nil
        }
        return DEREncoding.bytes { i2d_ECDSA_SIG(signature, $0) }
    }
}
