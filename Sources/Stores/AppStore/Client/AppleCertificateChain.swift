import Foundation
import SettleBase

/// The certificate checks Apple's App Store Server libraries apply to a JWS `x5c` chain
/// (apple-protocol.md 3.4, steps 4-6), done with explicit OpenSSL calls. App receipts read
/// locally (`AppReceiptSignature`) are held to the same rules: the same receipt-signing leaf
/// under the same WWDR intermediate, so a developer's own certificate from that intermediate
/// (push, Pass Type, merchant; their keys are the developers') signs nothing settle trusts.
///
/// Why not `X509_verify_cert`: Apple's rules are narrower and different from a generic
/// path build. `x5c[2]` must be ignored in favour of the configured roots, Apple's test
/// PKI has no key identifiers (so strict mode must stay off), and the two marker OIDs are
/// Apple-specific. Spelling the rules out keeps each failure message precise.
package struct AppleCertificateChain {
    /// Marks a certificate as the App Store "receipt signer" leaf.
    package static let leafMarkerOID = "1.2.840.113635.100.6.11.1"
    /// Marks the Apple Worldwide Developer Relations intermediate.
    package static let intermediateMarkerOID = "1.2.840.113635.100.6.2.1"

    package let leaf: X509Certificate
    package let intermediate: X509Certificate

    /// Checks the chain against `roots` at `time` and returns the root it chains to.
    package func verify(roots: [X509Certificate], at time: Date) -> Result<X509Certificate, SignedDataFailure> {
        // Extensions first: a certificate OpenSSL cannot fully understand must not be
        // trusted for anything, which is what RFC 5280 4.2 requires of critical ones.
        for (role, certificate) in [("leaf", leaf), ("intermediate", intermediate)]
        where certificate.hasUnprocessableExtensions {
            return .failure(.invalidChain("\(Self.describe(role, certificate)) has an unsupported critical or undecodable extension"))
        }

        // The anchor must be one of ours: name chaining plus a signature check, as
        // Apple's node library does (`checkIssued` + `verify`).
        guard let root = roots.first(where: { intermediate.isNamed(issuedBy: $0) && intermediate.isSigned(by: $0) }) else {
            let issuer = Self.quoted(intermediate.issuerSummary)
            return .failure(.invalidChain("\(Self.describe("intermediate", intermediate)) (issuer \(issuer)) is not signed by a configured root"))
        }
        guard leaf.isNamed(issuedBy: intermediate), leaf.isSigned(by: intermediate) else {
            return .failure(.invalidChain("\(Self.describe("leaf", leaf)) is not signed by the \(Self.describe("intermediate", intermediate))"))
        }
        guard intermediate.isCertificateAuthority else {
            return .failure(.invalidChain("\(Self.describe("intermediate", intermediate)) is not a CA (basicConstraints CA:TRUE)"))
        }
        guard !leaf.mayActAsCertificateAuthority else {
            return .failure(.invalidChain("\(Self.describe("leaf", leaf)) is a CA certificate, not an end entity"))
        }

        for (role, certificate) in [("leaf", leaf), ("intermediate", intermediate), ("root", root)] {
            if let problem = Self.validityProblem(certificate, at: time) {
                return .failure(.invalidChain("\(Self.describe(role, certificate)) \(problem)"))
            }
        }

        guard leaf.hasExtension(oid: Self.leafMarkerOID) else {
            return .failure(.invalidChain("\(Self.describe("leaf", leaf)) lacks Apple's receipt-signer extension \(Self.leafMarkerOID)"))
        }
        guard intermediate.hasExtension(oid: Self.intermediateMarkerOID) else {
            return .failure(.invalidChain("\(Self.describe("intermediate", intermediate)) lacks Apple's WWDR extension \(Self.intermediateMarkerOID)"))
        }
        return .success(root)
    }

    /// The time span in which the leaf, the intermediate and `root` are all valid (each
    /// validity period is inclusive at both ends, as `isValid(at:)`), or `nil` if a
    /// period is unreadable. A chain `verify` accepted at one time is accepted at exactly
    /// the times inside this span: nothing else it checks depends on time.
    package func commonValidity(root: X509Certificate) -> ClosedRange<Date>? {
        var start = Date.distantPast, end = Date.distantFuture
        for certificate in [leaf, intermediate, root] {
            guard let notBefore = certificate.notBefore, let notAfter = certificate.notAfter else { return nil }
            start = max(start, notBefore)
            end = min(end, notAfter)
        }
        return start <= end ? start...end : nil
    }

    private static func describe(_ role: String, _ certificate: X509Certificate) -> String {
        "\(role) \(quoted(certificate.subjectSummary))"
    }

    /// A name for a message. Before the chain is trusted names are chosen by the sender, so
    /// they are capped (OpenSSL has already escaped control characters).
    private static func quoted(_ name: String) -> String {
        "\"\(name.count > 200 ? name.prefix(200) + "..." : name)\""
    }

    private static func validityProblem(_ certificate: X509Certificate, at time: Date) -> String? {
        guard let notBefore = certificate.notBefore, let notAfter = certificate.notAfter else {
            return "has an unreadable validity period"
        }
        let checked = time.formatted(.iso8601)
        if time < notBefore {
            return "is not yet valid at \(checked) (valid from \(notBefore.formatted(.iso8601)))"
        }
        if time > notAfter {
            return "has expired at \(checked) (valid until \(notAfter.formatted(.iso8601)))"
        }
        return nil
    }
}
