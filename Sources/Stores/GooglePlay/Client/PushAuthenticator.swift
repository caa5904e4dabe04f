import Foundation
import SettleBase

/// Checks that a Pub/Sub push really comes from Google for settle's subscription: the
/// `Authorization: Bearer` OIDC token Pub/Sub signs for authenticated push subscriptions.
/// https://cloud.google.com/pubsub/docs/authenticate-push-subscriptions
///
/// Required: a JWT signed RS256 by one of Google's keys (found by `kid` in `keys`: Google's
/// published set, read again when a token names a key it lacks), issued by
/// `https://accounts.google.com` (or `accounts.google.com`), for the configured audience,
/// naming the push subscription's service account as a verified `email`, not expired and not
/// issued in the future beyond `allowedSkew`. Everything else is refused with a reason.
package struct PushAuthenticator: Sendable {
    package var keys: any PushKeys
    package var audience: String
    package var serviceAccountEmail: String
    package var time: any TimeSource
    /// Seconds a token's `iat` may lie ahead of settle's clock, for clocks a little apart.
    package var allowedSkew: Int64

    package static let issuers: Set<String> = ["https://accounts.google.com", "accounts.google.com"]

    package init(keys: any PushKeys, audience: String, serviceAccountEmail: String, time: any TimeSource, allowedSkew: Int64 = 60) {
        self.keys = keys
        self.audience = audience
        self.serviceAccountEmail = serviceAccountEmail
        self.time = time
        self.allowedSkew = allowedSkew
    }

    /// Why a push was refused. The raw values are fixed and short: safe as metric labels and in
    /// logs (never the token or its claims).
    package enum Refusal: String, Error, Sendable, CaseIterable {
        case missingToken = "missing_token"
        case malformed
        case unsupportedAlgorithm = "unsupported_algorithm"
        case unknownKey = "unknown_key"
        case badSignature = "bad_signature"
        case wrongIssuer = "wrong_issuer"
        case wrongAudience = "wrong_audience"
        case wrongEmail = "wrong_email"
        case emailNotVerified = "email_not_verified"
        case expired
        case issuedInFuture = "issued_in_future"
        /// No key set could be read and no file holds one: nothing can be checked for now.
        case keysUnavailable = "keys_unavailable"
    }

    /// Judges the request's `Authorization` header value; nil when there was none.
    package func authenticate(authorization: String?) -> Result<Void, Refusal> {
        guard let authorization else { return .failure(.missingToken) }
        // RFC 9110 11.1: the scheme is case-insensitive.
        let parts = authorization.split(separator: " ", maxSplits: 1, omittingEmptySubsequences: true)
        guard parts.count == 2, parts[0].lowercased() == "bearer" else { return .failure(.missingToken) }
        let token = parts[1].trimmingCharacters(in: .whitespaces)
        guard let current = keys.current() else { return .failure(.keysUnavailable) }
        var checked = RS256JWT.verify(token, keys: current)
        if case .failure(.unknownKey) = checked, let fresher = keys.afterUnknownKey() {
            checked = RS256JWT.verify(token, keys: fresher)
        }
        let claims: JSONValue
        switch checked {
        case let .success(verified): claims = verified.claims
        case .failure(.malformed): return .failure(.malformed)
        case .failure(.unsupportedAlgorithm): return .failure(.unsupportedAlgorithm)
        case .failure(.unknownKey): return .failure(.unknownKey)
        case .failure(.badSignature): return .failure(.badSignature)
        }
        guard case let .string(issuer)? = claims["iss"], Self.issuers.contains(issuer) else { return .failure(.wrongIssuer) }
        // RFC 7519 4.1.3: `aud` is one string or an array of them.
        let audiences: [String]
        switch claims["aud"] {
        case let .string(single)?: audiences = [single]
        case let .array(many)?: audiences = many.compactMap { if case let .string(s) = $0 { return s } else { return nil } }
        default: audiences = []
        }
        guard audiences.contains(audience) else { return .failure(.wrongAudience) }
        guard case let .string(email)? = claims["email"], email == serviceAccountEmail else { return .failure(.wrongEmail) }
        guard claims["email_verified"]?.looseBool == true else { return .failure(.emailNotVerified) }
        guard let expires = claims["exp"]?.looseInt64, let issued = claims["iat"]?.looseInt64 else { return .failure(.malformed) }
        let now = time.unixSeconds
        guard expires > now else { return .failure(.expired) }
        guard issued <= now + allowedSkew else { return .failure(.issuedInFuture) }
        return .success(())
    }
}
