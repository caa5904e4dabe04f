import Foundation
import SettleBase

/// Verifies what Huawei's IAP server signs (the `jws*` strings of its answers and its key-event
/// notifications) as Huawei's own sample does: compact JWS, `alg` ES256, an `x5c` of exactly
/// three certificates (leaf, intermediate, root), the leaf and intermediate chained by name and
/// signature to one of the configured roots (the `x5c` root is ignored: the anchor is never
/// the sender's), the leaf carrying Huawei's IAP signing extension, then the signature.
/// Reference: huawei-appgallery.md section 1.3.
///
/// A pure function of the token, the roots and the time: no network, no clock reading. The
/// chain is checked at the payload's `signedTime` when it has one (so a genuine old answer in the
/// notification history still verifies), else at `now`.
package struct HuaweiSignedData: Sendable {
    /// Marks a certificate as a Huawei IAP signing leaf (non-critical in Huawei's sample).
    package static let leafMarkerOID = "1.3.6.1.4.1.2011.2.415.1.1"
    /// Largest token accepted: bounds the work before any signature was checked.
    package static let maxTokenBytes = 64 * 1024
    /// Largest DER certificate accepted in `x5c`.
    package static let maxCertificateBytes = 16 * 1024

    package let roots: [X509Certificate]

    package init(roots: [X509Certificate]) {
        self.roots = roots
    }

    /// Why a token is not trusted: every message names what was wrong, never the token.
    package struct Failure: Error, Sendable, Equatable, CustomStringConvertible {
        package var message: String
        package init(_ message: String) { self.message = message }
        package var description: String { message }
    }

    /// The payload of `token` once its chain and signature are good.
    package func verify(_ token: String, now: Date) -> Result<JSONValue, Failure> {
        Result { () throws(Failure) in try authenticate(token, now: now) }
    }

    private func authenticate(_ token: String, now: Date) throws(Failure) -> JSONValue {
        guard token.utf8.count <= Self.maxTokenBytes else {
            throw Failure("the JWS is \(token.utf8.count) bytes, over the \(Self.maxTokenBytes)-byte limit")
        }
        let parts = token.utf8.split(separator: UInt8(ascii: "."), omittingEmptySubsequences: false)
        guard parts.count == 3 else { throw Failure("the JWS has \(parts.count) dot-separated parts, expected 3") }
        let header = try Self.object(parts[0], name: "header")
        let payload = try Self.object(parts[1], name: "payload")
        guard let signature = Base64URL.decode(Substring(parts[2])) else {
            throw Failure("the JWS signature is not base64url")
        }
        guard case .string("ES256") = header["alg"] else {
            let alg =
                header["alg"]?.looseString.map { JSONValue.string(String($0.prefix(32))).serialized() } ?? "absent"
            throw Failure("the JWS alg is \(alg), only ES256 is accepted")
        }
        guard header["crit"] == nil else {
            throw Failure("the JWS header has crit parameters, which are not supported")
        }
        let (leaf, intermediate) = try Self.chain(header)
        let time = try Self.checkTime(payload, now: now)
        try check(leaf: leaf, intermediate: intermediate, at: time)
        let signingInput = Data(token.utf8[parts[0].startIndex..<parts[1].endIndex])
        guard ES256.verify(signature: signature, message: signingInput, certificate: leaf) else {
            throw Failure("the JWS signature does not verify with its leaf certificate's key")
        }
        return payload
    }

    /// `x5c[0]` and `x5c[1]`, parsed; `x5c[2]` must be there (Huawei sends three) but is never trusted.
    private static func chain(_ header: JSONValue) throws(Failure) -> (X509Certificate, X509Certificate) {
        guard let entries = header["x5c"]?.arrayValue else {
            throw Failure("the JWS header has no x5c certificate chain")
        }
        guard entries.count == 3 else {
            throw Failure("the JWS x5c holds \(Plural.count(entries.count, "certificate")), "
                          + "expected 3 (leaf, intermediate, root)")
        }
        let maxEncoded = (maxCertificateBytes + 2) / 3 * 4
        var certificates: [X509Certificate] = []
        for (index, entry) in entries.enumerated() {
            guard case let .string(encoded) = entry, encoded.utf8.count <= maxEncoded else {
                throw Failure("x5c[\(index)] is not a base64 certificate of at most \(maxCertificateBytes) bytes")
            }
            guard index < 2 else { continue }
            guard let der = Data(base64Encoded: encoded) else { throw Failure("x5c[\(index)] is not standard base64") }
            do {
                certificates.append(try X509Certificate(der: der))
            } catch {
                throw Failure("x5c[\(index)]: \(error.message)")
            }
        }
        return (certificates[0], certificates[1])
    }

    private func check(leaf: X509Certificate, intermediate: X509Certificate, at time: Date) throws(Failure) {
        for (role, certificate) in [("leaf", leaf), ("intermediate", intermediate)]
        where certificate.hasUnprocessableExtensions {
            throw Failure(
                "the \(role) \(Self.quoted(certificate.subjectSummary)) has an unsupported critical or undecodable extension"
            )
        }
        guard let root = roots.first(where: { intermediate.isNamed(issuedBy: $0) && intermediate.isSigned(by: $0) })
        else {
            throw Failure(
                "the intermediate \(Self.quoted(intermediate.subjectSummary)) (issuer \(Self.quoted(intermediate.issuerSummary))) "
                    + "is not signed by a configured root (huawei.root_certificates)")
        }
        guard leaf.isNamed(issuedBy: intermediate), leaf.isSigned(by: intermediate) else {
            throw Failure("the leaf \(Self.quoted(leaf.subjectSummary)) is not signed by the intermediate")
        }
        guard intermediate.isCertificateAuthority else {
            throw Failure("the intermediate is not a CA (basicConstraints CA:TRUE)")
        }
        guard !leaf.mayActAsCertificateAuthority else {
            throw Failure("the leaf is a CA certificate, not an end entity")
        }
        for (role, certificate) in [("leaf", leaf), ("intermediate", intermediate), ("root", root)]
        where !certificate.isValid(at: time) {
            throw Failure(
                "the \(role) \(Self.quoted(certificate.subjectSummary)) is not valid at \(time.formatted(.iso8601))")
        }
        guard leaf.hasExtension(oid: Self.leafMarkerOID) else {
            throw Failure(
                "the leaf \(Self.quoted(leaf.subjectSummary)) lacks Huawei's IAP signing extension \(Self.leafMarkerOID)"
            )
        }
    }

    /// `signedTime` (milliseconds) when the payload has one, else `now`.
    private static func checkTime(_ payload: JSONValue, now: Date) throws(Failure) -> Date {
        guard let value = payload["signedTime"], value != .null else { return now }
        guard let ms = value.looseString.flatMap(Double.init), ms.isFinite, ms >= 0 else {
            throw Failure("the payload's signedTime is not a number of milliseconds")
        }
        return Date(timeIntervalSince1970: ms / 1000)
    }

    private static func object(_ part: Substring.UTF8View, name: String) throws(Failure) -> JSONValue {
        guard let bytes = Base64URL.decode(Substring(part)) else { throw Failure("the JWS \(name) is not base64url") }
        guard let value = try? JSONValue.parse(bytes), value.objectMembers != nil else {
            throw Failure("the JWS \(name) is not a JSON object")
        }
        return value
    }

    /// A sender-chosen name for a message, capped.
    private static func quoted(_ name: String) -> String {
        "\"\(name.count > 200 ? name.prefix(200) + "..." : name)\""
    }
}
