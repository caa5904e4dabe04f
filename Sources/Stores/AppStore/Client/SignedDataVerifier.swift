import Foundation
import SettleBase
import SettleModel

/// Verifies StoreKit 2 signed data (compact JWS with an `x5c` chain) the way Apple's App
/// Store Server libraries do offline (apple-protocol.md 3.4).
///
/// A pure function of the token, the configured roots, the time and the expectations: no
/// network (so no OCSP), no clock reading. The chain is checked at the payload's
/// `signedDate`, which is what lets genuine but old data verify after its short-lived leaf
/// certificate has expired.
package struct SignedDataVerifier: Sendable {
    /// Largest token accepted. Apple's tokens are about 5 KiB; the cap bounds the work an
    /// attacker can make us do before any signature has been checked.
    package static let maxTokenBytes = 64 * 1024
    /// Largest DER certificate accepted in `x5c` (Apple's are about 1 KiB).
    package static let maxCertificateBytes = 16 * 1024

    /// When the chain's validity is checked.
    package enum CheckTime {
        /// At the payload's `signedDate`, or at the given time if it has none (the public
        /// behaviour).
        case signedDate(orElse: Date)
        /// At exactly this time, whatever the payload says (used to show that old data
        /// fails at "now").
        case fixed(Date)
    }

    package let rootCertificates: [X509Certificate]
    package let bundleId: String
    package let acceptSandbox: Bool
    /// The app's Apple ID (`server_api.app_apple_id`): production notifications must name it.
    package let appAppleId: String?
    /// Chains already verified against `rootCertificates` (shared by copies of this value,
    /// which have the same roots).
    package let verifiedChains: VerifiedChainCache

    package init(rootCertificates: [X509Certificate], bundleId: String, acceptSandbox: Bool, appAppleId: String? = nil) {
        self.rootCertificates = rootCertificates
        self.bundleId = bundleId
        self.acceptSandbox = acceptSandbox
        self.appAppleId = appAppleId
        verifiedChains = VerifiedChainCache()
    }

    /// Verifies a JWSTransaction (StoreKit 2 signed transaction or Server API
    /// `signedTransactionInfo`) and returns its decoded payload.
    /// `now` is used only when the payload has no `signedDate`; otherwise the chain is
    /// checked at `signedDate` (so genuine old data verifies).
    package func verifyTransaction(_ token: String, now: Date) -> Result<SignedTransaction, SignedDataFailure> {
        verifyTransaction(token, checkTime: .signedDate(orElse: now))
    }

    /// The signature/chain part alone (for renewal info etc.): returns the payload once
    /// the chain and signature are good; checks the environment (Production, or Sandbox
    /// if accepted; never Xcode/LocalTesting) but not the bundle id, which renewal info
    /// does not carry.
    package func verifySignedData(_ token: String, now: Date) -> Result<JSONValue, SignedDataFailure> {
        verifySignedData(token, checkTime: .signedDate(orElse: now))
    }

    package func verifyTransaction(_ token: String, checkTime: CheckTime) -> Result<SignedTransaction, SignedDataFailure> {
        Result { () throws(SignedDataFailure) in
            let payload = try authenticate(token, checkTime: checkTime)
            // Bundle before environment, the order of Apple's libraries, so a foreign
            // app's sandbox data reports the more telling reason.
            guard case let .string(bundle) = payload["bundleId"] else {
                throw .payloadInvalid("transaction payload has no bundleId string")
            }
            guard bundle == bundleId else {
                throw .bundleMismatch("transaction is for \(bundle), expected \(bundleId)")
            }
            try checkEnvironment(payload)
            return try SignedTransaction(decoding: payload)
        }
    }

    package func verifySignedData(_ token: String, checkTime: CheckTime) -> Result<JSONValue, SignedDataFailure> {
        Result { () throws(SignedDataFailure) in
            let payload = try authenticate(token, checkTime: checkTime)
            try checkEnvironment(payload)
            return payload
        }
    }

    /// Steps 1-8 of apple-protocol.md 3.4: format, algorithm, chain, signature. Returns
    /// the payload once it is known to be signed by an Apple leaf under a configured root.
    package func authenticate(_ token: String, checkTime: CheckTime) throws(SignedDataFailure) -> JSONValue {
        let jws = try DecodedJWS(token)

        guard case .string("ES256") = jws.header["alg"] else {
            // The value is unauthenticated input headed for logs: capped, and quoted as JSON
            // so that control characters stay escaped.
            let alg = jws.header["alg"].map { value in
                value.looseString.map { JSONValue.string(String($0.prefix(32))).serialized() } ?? value.typeName
            } ?? "absent"
            throw .unsupportedAlgorithm("alg is \(alg), only ES256 is accepted")
        }
        // RFC 7515 4.1.11: a recipient must reject a JWS whose `crit` lists extensions it
        // does not understand; settle understands none, and Apple never sends `crit`.
        guard jws.header["crit"] == nil else {
            throw .malformed("header has crit parameters, which are not supported")
        }

        let key = try Self.certificateDER(in: jws.header)
        let leafKey = try trustedLeafKey(key, checkTime: checkTime, payload: jws.payload)
        guard ES256.verify(signature: jws.signature, message: jws.signingInput, publicKey: leafKey) else {
            throw .signatureInvalid
        }
        return jws.payload
    }

    /// The key of a leaf whose chain is good at the check time: from the cache when this
    /// pair was verified before and the time is inside its validity, otherwise by the full
    /// check, whose failure is the one reported and whose success is remembered.
    private func trustedLeafKey(_ key: VerifiedChainCache.Key, checkTime: CheckTime,
                                payload: JSONValue) throws(SignedDataFailure) -> ES256PublicKey {
        if let cached = verifiedChains.entry(for: key) {
            let time = try effectiveTime(checkTime, payload: payload)
            if cached.validity.contains(time) { return cached.leafKey }
        }
        // Certificates are parsed before the time is read, so an unreadable certificate is
        // reported ahead of an unreadable signedDate.
        let chain = try Self.certificateChain(key)
        let time = try effectiveTime(checkTime, payload: payload)
        let root = try chain.verify(roots: rootCertificates, at: time).get()
        guard let leafKey = try? ES256PublicKey(certificate: chain.leaf) else { throw .signatureInvalid }
        if let validity = chain.commonValidity(root: root) {
            verifiedChains.insert(VerifiedChainCache.Entry(leafKey: leafKey, validity: validity), for: key)
        }
        return leafKey
    }

    /// The DER bytes of `x5c[0]` (leaf) and `x5c[1]` (intermediate). `x5c[2]` is ignored:
    /// the anchor is one of the configured roots, never a certificate the sender supplies.
    private static func certificateDER(in header: JSONValue) throws(SignedDataFailure) -> VerifiedChainCache.Key {
        guard let entries = header["x5c"]?.arrayValue else {
            throw .malformed("header has no x5c certificate chain")
        }
        guard entries.count == 3 else { throw .invalidChainLength(entries.count) }
        // Standard base64 of at most maxCertificateBytes is at most this many characters.
        let maxEncodedLength = (maxCertificateBytes + 2) / 3 * 4
        var certificates: [Data] = []
        for (index, entry) in entries.enumerated() {
            guard case let .string(encoded) = entry else {
                throw .malformed("x5c[\(index)] is a \(entry.typeName), expected a base64 string")
            }
            guard encoded.utf8.count <= maxEncodedLength else {
                throw .malformed("x5c[\(index)] is over the \(maxCertificateBytes)-byte certificate limit")
            }
            guard index < 2 else { continue }
            guard let der = Data(base64Encoded: encoded) else {
                throw .malformed("x5c[\(index)] is not standard base64")
            }
            certificates.append(der)
        }
        return VerifiedChainCache.Key(leaf: certificates[0], intermediate: certificates[1])
    }

    /// Parses the pair; a certificate OpenSSL cannot read fails the chain.
    private static func certificateChain(_ key: VerifiedChainCache.Key) throws(SignedDataFailure) -> AppleCertificateChain {
        var certificates: [X509Certificate] = []
        for (index, der) in [key.leaf, key.intermediate].enumerated() {
            do {
                certificates.append(try X509Certificate(der: der))
            } catch {
                throw .invalidChain("x5c[\(index)]: \(error.message)")
            }
        }
        return AppleCertificateChain(leaf: certificates[0], intermediate: certificates[1])
    }

    /// The time at which the chain must be valid.
    private func effectiveTime(_ checkTime: CheckTime, payload: JSONValue) throws(SignedDataFailure) -> Date {
        switch checkTime {
        case let .fixed(time):
            return time
        case let .signedDate(fallback):
            guard let value = payload["signedDate"], value != .null else { return fallback }
            // Milliseconds, possibly fractional; read as Double so the fraction is kept.
            guard let milliseconds = value.looseString.flatMap(Double.init), milliseconds.isFinite else {
                throw .malformed("signedDate is not a number of milliseconds")
            }
            return Date(timeIntervalSince1970: milliseconds / 1000)
        }
    }

    /// Production always; Sandbox only when configured; anything else (Xcode,
    /// LocalTesting, missing) never, because it is not App Store-signed data.
    @discardableResult
    package func checkEnvironment(_ payload: JSONValue) throws(SignedDataFailure) -> AppleEnvironment {
        switch payload["environment"] {
        case .string(AppleEnvironment.production.rawValue):
            return .production
        case .string(AppleEnvironment.sandbox.rawValue):
            guard acceptSandbox else { throw .sandboxNotAccepted }
            return .sandbox
        case let .string(other):
            throw .environmentMismatch("environment \(other) is not accepted")
        case nil, .null?:
            throw .payloadInvalid("payload has no environment")
        case let value?:
            throw .payloadInvalid("payload field environment is a \(value.typeName), expected a string")
        }
    }
}

/// The three parts of a compact JWS, decoded but not yet trusted.
private struct DecodedJWS {
    let header: JSONValue
    let payload: JSONValue
    let signature: Data
    /// `header_b64 "." payload_b64` exactly as received: the bytes the signature covers.
    let signingInput: Data

    init(_ token: String) throws(SignedDataFailure) {
        guard token.utf8.count <= SignedDataVerifier.maxTokenBytes else {
            throw .malformed("token is \(token.utf8.count) bytes, over the \(SignedDataVerifier.maxTokenBytes)-byte limit")
        }
        let parts = token.utf8.split(separator: UInt8(ascii: "."), omittingEmptySubsequences: false)
        guard parts.count == 3 else {
            throw .malformed("expected 3 dot-separated parts, found \(parts.count)")
        }
        header = try Self.jsonObject(parts[0], name: "header")
        payload = try Self.jsonObject(parts[1], name: "payload")
        guard let signature = Base64URL.decode(Substring(parts[2])) else {
            throw .malformed("signature is not base64url")
        }
        self.signature = signature
        signingInput = Data(token.utf8[parts[0].startIndex..<parts[1].endIndex])
    }

    private static func jsonObject(_ part: Substring.UTF8View, name: String) throws(SignedDataFailure) -> JSONValue {
        guard let bytes = Base64URL.decode(Substring(part)) else {
            throw .malformed("\(name) is not base64url")
        }
        let value: JSONValue
        do {
            value = try JSONValue.parse(bytes)
        } catch {
            throw .malformed("\(name) is not JSON: \(error)")
        }
        guard value.objectMembers != nil else { throw .malformed("\(name) is a JSON \(value.typeName), expected an object") }
        return value
    }
}
