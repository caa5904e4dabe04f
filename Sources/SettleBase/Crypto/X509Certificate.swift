import COpenSSL
import Foundation

/// An X.509 certificate parsed by OpenSSL: a trust anchor from the configuration or one
/// entry of a JWS `x5c` chain.
///
/// The class owns its `X509*` and frees it in `deinit`. It is `@unchecked Sendable`
/// because the handle is never mutated after parsing; OpenSSL guards the one piece of
/// lazily computed state (the decoded-extension cache) with the certificate's own lock.
package final class X509Certificate: @unchecked Sendable {
    package let handle: OpaquePointer

    /// Parses one DER-encoded certificate. Trailing bytes after it are refused, so a
    /// certificate has exactly one encoding that is accepted.
    package init(der: Data) throws(CryptoError) {
        guard !der.isEmpty else { throw CryptoError("certificate is empty") }
        var consumed = 0
        let parsed: OpaquePointer? = der.withUnsafeBytes { buffer in
            guard let base = buffer.bindMemory(to: UInt8.self).baseAddress else { return nil }
            // d2i_X509 advances the pointer past what it read, which tells whether the
            // buffer held more than one certificate's worth of bytes.
            var cursor: UnsafePointer<UInt8>? = base
            let certificate = d2i_X509(nil, &cursor, buffer.count)
            if let cursor { consumed = cursor - base }
            return certificate
        }
        guard let parsed else { throw CryptoError.openSSL("certificate is not valid DER X.509") }
        guard consumed == der.count else {
            X509_free(parsed)
            throw CryptoError("certificate has \(der.count - consumed) unexpected bytes after its DER encoding")
        }
        handle = parsed
    }

    /// Takes ownership of a certificate OpenSSL has just allocated.
    private init(owning handle: OpaquePointer) {
        self.handle = handle
    }

    /// Shares a certificate another OpenSSL object owns (one of a PKCS#7's certificates): takes
    /// a reference of its own, so the certificate outlives its container.
    package init(sharing handle: OpaquePointer) {
        // "X509_up_ref() increments the reference count of a by one" (X509_new(3)); deinit's
        // X509_free drops it again.
        X509_up_ref(handle)
        self.handle = handle
    }

    deinit {
        X509_free(handle)
    }

    /// Reads a PEM file holding one or more certificates, or a file holding a single DER
    /// certificate (the form Apple's PKI site offers for download).
    package static func load(path: String) throws(CryptoError) -> [X509Certificate] {
        let contents: Data
        do {
            contents = try Data(contentsOf: URL(fileURLWithPath: path))
        } catch {
            throw CryptoError("cannot read certificate file \(path): \(error.localizedDescription)")
        }
        guard contents.range(of: Data("-----BEGIN".utf8)) != nil else {
            do {
                return [try X509Certificate(der: contents)]
            } catch {
                throw CryptoError("\(path): \(error.message)")
            }
        }
        let certificates = try parsePEM(contents, source: path)
        guard !certificates.isEmpty else { throw CryptoError("\(path) contains no PEM certificate") }
        return certificates
    }

    /// Parses PEM text holding one or more certificates (blocks of other types are skipped).
    package static func parse(pem: String) throws(CryptoError) -> [X509Certificate] {
        try parsePEM(Data(pem.utf8), source: "PEM text")
    }

    private static func parsePEM(_ contents: Data, source: String) throws(CryptoError) -> [X509Certificate] {
        let result: Result<[X509Certificate], CryptoError> = contents.withUnsafeBytes { buffer in
            // BIO_new_mem_buf makes a read-only BIO over our buffer without copying it;
            // the BIO is freed before the buffer goes out of scope.
            guard let bio = BIO_new_mem_buf(buffer.baseAddress, Int32(buffer.count)) else {
                return .failure(CryptoError.openSSL("cannot allocate a memory BIO"))
            }
            defer { BIO_free(bio) }
            var certificates: [X509Certificate] = []
            // PEM_read_bio_X509 skips PEM blocks of other types (e.g. a key in the same
            // file) and returns NULL at the end of the input or on a broken block.
            while let certificate = PEM_read_bio_X509(bio, nil, nil, nil) {
                certificates.append(X509Certificate(owning: certificate))
            }
            // Running out of PEM blocks is reported as PEM_R_NO_START_LINE: that is the
            // normal end (the idiom of OpenSSL's own X509_load_cert_file). Any other
            // error means a certificate block was present but damaged.
            let last = ERR_peek_last_error()
            if ERR_GET_LIB(last) == ERR_LIB_PEM && ERR_GET_REASON(last) == PEM_R_NO_START_LINE {
                ERR_clear_error()
                return .success(certificates)
            }
            return .failure(CryptoError.openSSL("\(source): certificate \(certificates.count + 1) is not valid PEM"))
        }
        return try result.get()
    }

    /// The certificate's DER encoding.
    package var der: Data {
        Data(DEREncoding.bytes { i2d_X509(handle, $0) } ?? [])
    }

    /// The subject in the one-line form `openssl x509 -subject` prints
    /// ("CN = Apple Root CA - G3, OU = ..."), for logs and error messages.
    package var subjectSummary: String {
        Self.summary(of: X509_get_subject_name(handle))
    }

    /// The issuer, in the same form as `subjectSummary`.
    package var issuerSummary: String {
        Self.summary(of: X509_get_issuer_name(handle))
    }

    package static func summary(of name: OpaquePointer?) -> String {
        guard let name, let bio = BIO_new(BIO_s_mem()) else { return "?" }
        defer { BIO_free(bio) }
        // XN_FLAG_ONELINE (through the shim: Swift cannot import the macro) is the format
        // of the openssl command line; clearing ASN1_STRFLGS_ESC_MSB prints UTF-8 names as
        // UTF-8 instead of \XX escapes.
        let flags = settle_XN_FLAG_ONELINE() & ~UInt(ASN1_STRFLGS_ESC_MSB)
        guard X509_NAME_print_ex(bio, name, 0, flags) >= 0 else {
            OpenSSLErrorQueue.drain()
            return "?"
        }
        return readAll(bio)
    }

    // MARK: - Facts used by chain validation

    /// Start of the validity period, or `nil` if OpenSSL cannot interpret the time.
    package var notBefore: Date? { Self.date(X509_get0_notBefore(handle)) }

    /// End of the validity period (inclusive, RFC 5280 4.1.2.5), or `nil` if unreadable.
    package var notAfter: Date? { Self.date(X509_get0_notAfter(handle)) }

    /// Whether `time` lies inside the validity period.
    package func isValid(at time: Date) -> Bool {
        guard let notBefore, let notAfter else { return false }
        return notBefore <= time && time <= notAfter
    }

    /// Whether basicConstraints says CA:TRUE (and keyUsage, if present, allows
    /// certificate signing).
    package var isCertificateAuthority: Bool {
        // X509_check_ca returns 1 for "basicConstraints CA:TRUE"; 3, 4 and 5 are legacy
        // heuristics (v1 self-signed, keyUsage or Netscape cert type only) that an Apple
        // CA never relies on, so only 1 counts.
        guard X509_check_ca(handle) == 1 else {
            OpenSSLErrorQueue.drain()
            return false
        }
        return true
    }

    /// Whether anything in the certificate lets it act as a CA: basicConstraints CA:TRUE, or
    /// without basicConstraints a keyUsage allowing certificate signing (or the other legacy
    /// signs `X509_check_ca` accepts). A leaf must have none of them.
    package var mayActAsCertificateAuthority: Bool {
        // X509_check_ca: "returns 0 if the certificate is not a CA", any other value is some
        // kind of CA (X509_check_ca(3)).
        let result = X509_check_ca(handle)
        OpenSSLErrorQueue.drain()
        return result != 0
    }

    /// Whether the certificate carries an extension OpenSSL cannot process but must not
    /// ignore: a critical extension it does not know, or an extension it failed to decode.
    package var hasUnprocessableExtensions: Bool {
        // X509_get_extension_flags computes and caches the decoded extensions; OpenSSL
        // records unsupported critical extensions as EXFLAG_CRITICAL and undecodable ones
        // as EXFLAG_INVALID.
        let flags = X509_get_extension_flags(handle)
        guard flags & UInt32(EXFLAG_CRITICAL) == 0, flags & UInt32(EXFLAG_INVALID) == 0 else {
            OpenSSLErrorQueue.drain()
            return true
        }
        return false
    }

    /// Whether an extension with the given dotted OID is present (its value is not read:
    /// Apple's marker extensions are checked by presence only).
    package func hasExtension(oid: String) -> Bool {
        // OBJ_txt2obj with no_name = 1 accepts only the numerical form, so a typo can never
        // be silently taken for a short name.
        guard let object = OBJ_txt2obj(oid, 1) else {
            OpenSSLErrorQueue.drain()
            return false
        }
        defer { ASN1_OBJECT_free(object) }
        return X509_get_ext_by_OBJ(handle, object, -1) >= 0
    }

    /// Whether this certificate's issuer name equals `issuer`'s subject name.
    package func isNamed(issuedBy issuer: X509Certificate) -> Bool {
        X509_NAME_cmp(X509_get_issuer_name(handle), X509_get_subject_name(issuer.handle)) == 0
    }

    /// Whether this certificate's signature verifies under `issuer`'s public key.
    package func isSigned(by issuer: X509Certificate) -> Bool {
        // X509_get0_pubkey returns the key without taking a reference; `issuer` keeps it
        // alive for the duration of this call.
        guard let key = X509_get0_pubkey(issuer.handle) else {
            OpenSSLErrorQueue.drain()
            return false
        }
        // X509_verify: "returns 1 if the signature is valid and 0 if the signature check
        // fails ... -1 for errors" (X509_verify(3)); only 1 is a yes.
        let verified = X509_verify(handle, key) == 1
        if !verified { OpenSSLErrorQueue.drain() }
        return verified
    }

    private static func date(_ time: UnsafePointer<ASN1_TIME>?) -> Date? {
        guard let time else { return nil }
        var parts = tm()
        // ASN1_TIME_to_tm converts both UTCTime and GeneralizedTime to a broken-down UTC
        // time; timegm then gives seconds since the epoch without consulting the local zone.
        guard ASN1_TIME_to_tm(time, &parts) == 1 else {
            OpenSSLErrorQueue.drain()
            return nil
        }
        return Date(timeIntervalSince1970: TimeInterval(timegm(&parts)))
    }

    /// Reads everything a memory BIO holds, as UTF-8 text.
    private static func readAll(_ bio: OpaquePointer) -> String {
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 256)
        while true {
            let count = BIO_read(bio, &chunk, Int32(chunk.count))
            guard count > 0 else { break }
            bytes.append(contentsOf: chunk[0..<Int(count)])
        }
        return String(decoding: bytes, as: UTF8.self)
    }
}
