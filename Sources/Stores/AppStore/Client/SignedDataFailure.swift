import SettleBase

/// Why a JWS from the App Store was refused. `code` is a short stable string shown to
/// support (and usable as a metric label); the associated text is the detail.
///
/// None of these is worth retrying: verification is a pure function of the token, the
/// configured roots and the time, so the same input always fails the same way.
package enum SignedDataFailure: Error, Sendable, Equatable, CustomStringConvertible {
    /// Not three base64url parts, not JSON, over a size cap, or a header field missing:
    /// found before the signature could be checked.
    case malformed(String)
    /// The header's `alg` is not ES256 (e.g. `none`, `HS256`, or absent).
    case unsupportedAlgorithm(String)
    /// `x5c` does not hold exactly three certificates.
    case invalidChainLength(Int)
    /// The certificate chain does not lead to a configured root, a certificate is not
    /// valid at the check time, is unreadable, or lacks Apple's marker extension.
    case invalidChain(String)
    /// The ES256 signature does not verify with the leaf certificate's key.
    case signatureInvalid
    /// The transaction is for another app.
    case bundleMismatch(String)
    /// The data comes from an environment that is not accepted (Xcode, LocalTesting and text
    /// Apple never sends), or its parts disagree on their environment.
    case environmentMismatch(String)
    /// Sandbox data, and this configuration does not accept sandbox purchases
    /// (`accept_sandbox`). Its code stays `environment_mismatch`; orders say `sandbox_not_accepted`.
    case sandboxNotAccepted
    /// The signature verified, but the payload lacks a field Apple always sends or has it
    /// with the wrong type: Apple's data, so not a forgery, but nothing settle can act on.
    case payloadInvalid(String)

    package var code: String {
        switch self {
        case .malformed: return "jws_malformed"
        case .unsupportedAlgorithm: return "algorithm_unsupported"
        case .invalidChainLength, .invalidChain: return "chain_invalid"
        case .signatureInvalid: return "signature_invalid"
        case .bundleMismatch: return "bundle_mismatch"
        case .environmentMismatch, .sandboxNotAccepted: return "environment_mismatch"
        case .payloadInvalid: return "payload_invalid"
        }
    }

    package var description: String {
        switch self {
        case let .malformed(detail), let .unsupportedAlgorithm(detail), let .invalidChain(detail),
             let .bundleMismatch(detail), let .environmentMismatch(detail), let .payloadInvalid(detail):
            return "\(code): \(detail)"
        case let .invalidChainLength(count):
            return "\(code): x5c holds \(Plural.count(count, "certificate")), expected 3"
        case .signatureInvalid:
            return "\(code): the ES256 signature does not verify with the leaf certificate's key"
        case .sandboxNotAccepted:
            return "\(code): Sandbox data is not accepted by this configuration"
        }
    }
}
