import Foundation
import SettleModel

/// Why a call to Google (the token endpoint or the Google Play Developer API) did not give the
/// answer asked for, grouped into the few kinds a caller acts on differently.
///
/// `description` is safe to log and show in `settle status`: it never holds a purchase token
/// (messages are scrubbed of the one the call used), an access token or key material, and
/// `kind.rawValue` is a fixed label fit for metrics.
package struct PlayAPIError: Error, Sendable, Equatable, CustomStringConvertible {
    package enum Kind: String, Sendable {
        /// Google does not know the purchase token, or no longer honours it (400
        /// purchaseTokenInvalid and its kin, 404, 410): final for the order that brought it.
        case purchaseNotFound = "purchase_not_found"
        /// settle's own setup is wrong (the key, the package name, a Play Console permission):
        /// no order can succeed until an operator fixes it; stop the pass (exit 78 in commands).
        case configuration
        /// Google is rate limiting or failing for the time being (429, 5xx, no answer): nothing
        /// is wrong with the order; try again later, `retryAfter` if Google said when.
        case unavailable
        /// settle held the call back to stay within Google's quota, or Google answered 429 while
        /// settle's bucket was above its floor: the work waits, nothing counts against Google.
        /// The message starts "paced: <bucket> at N/s".
        case paced
        /// Google refused this one request for a reason settle does not recognise: the order's
        /// attempt is used and it is tried again, then left to a person.
        case refused
    }

    package var kind: Kind
    package var message: String
    /// The HTTP status of Google's answer, nil when none came.
    package var status: Int?
    /// Google's machine-readable reason (`error.errors[0].reason`, or the OAuth `error`), if any.
    package var reason: String?
    /// Seconds Google asked us to wait (Retry-After on a 429), if it did.
    package var retryAfter: Double?

    package init(_ kind: Kind, _ message: String, status: Int? = nil, reason: String? = nil, retryAfter: Double? = nil) {
        self.kind = kind
        self.message = message
        self.status = status
        self.reason = reason
        self.retryAfter = retryAfter
    }

    package var description: String { "\(kind.rawValue): \(message)" }

    /// Final for the order: never worth asking Google again about this token.
    package var isFinalForOrder: Bool { kind == .purchaseNotFound }

    /// Says nothing about the order, only about Google or settle's setup: the order keeps its attempt.
    package var isStoreWide: Bool { kind == .configuration || kind == .unavailable || kind == .paced }

    /// `message` with every spelling of `token` cut out, for errors built while a token was in play.
    package func redacting(_ token: PurchaseToken?) -> PlayAPIError {
        guard let token else { return self }
        var copy = self
        let encoded = PlayPath.encode(token.value)
        for secret in [token.value, encoded] where copy.message.contains(secret) {
            copy.message = copy.message.replacingOccurrences(of: secret, with: token.fingerprint)
        }
        return copy
    }
}
