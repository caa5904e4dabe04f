import Foundation
import SettleBase
import SettleGooglePlay

extension FakeGooglePlay {
    /// Google's OAuth 2.0 token endpoint for service accounts: a form with the JWT-bearer grant
    /// type and an assertion signed by the service account's key, for the Play scope, addressed to
    /// this endpoint, living at most an hour. Anything else is `400 invalid_grant`, as Google answers.
    package func tokenEndpoint(_ request: HTTPServerRequest) -> HTTPServerResponse {
        let failure: Failure? = state.withLock { s in
            s.tokenRequests += 1
            return s.tokenFailures.isEmpty ? nil : s.tokenFailures.removeFirst()
        }
        if let failure = late(failure) { return Self.respond(failure) }
        guard request.method == "POST" else { return oauthError(405, "invalid_request", "POST only") }
        let form = Self.form(String(decoding: request.body, as: UTF8.self))
        guard form["grant_type"] == "urn:ietf:params:oauth:grant-type:jwt-bearer" else {
            return oauthError(400, "unsupported_grant_type", "Invalid grant_type")
        }
        let verified: RS256JWT.Verified
        switch checkAssertion(form["assertion"]) {
        case let .success(good): verified = good
        case let .failure(refusal):
            state.withLock { $0.refusedAssertions.append(refusal.problem) }
            return oauthError(400, "invalid_grant", refusal.problem)
        }
        let accessToken = "ya29.fake-" + UUID().uuidString
        let lifetime = state.withLock { s in
            s.issuedAccessTokens.insert(accessToken)
            s.acceptedAssertions.append(verified)
            return s.accessTokenLifetime
        }
        return .json(200, JSONValue.object([("access_token", .string(accessToken)), ("expires_in", .number(lifetime)),
                                            ("token_type", .string("Bearer"))]).data)
    }

    /// Sets how long the access tokens the fake issues say they live (seconds).
    package func setAccessTokenLifetime(_ seconds: Int64) { state.withLock { $0.accessTokenLifetime = seconds } }

    private struct Refusal: Error {
        var problem: String
    }

    private func checkAssertion(_ assertion: String?) -> Result<RS256JWT.Verified, Refusal> {
        guard let assertion else { return .failure(Refusal(problem: "Missing assertion.")) }
        let verified: RS256JWT.Verified
        switch RS256JWT.verify(assertion, keys: serviceAccountKeys) {
        case let .success(good): verified = good
        case let .failure(failure): return .failure(Refusal(problem: "Invalid JWT Signature. (\(failure.rawValue))"))
        }
        let claims = verified.claims
        guard claims["iss"] == .string(serviceAccountEmail) else { return .failure(Refusal(problem: "Invalid issuer.")) }
        guard case let .string(scope)? = claims["scope"], scope.split(separator: " ").contains(Substring(GoogleAccessTokenSource.scope)) else {
            return .failure(Refusal(problem: "Invalid scope."))
        }
        let expected = state.withLock { $0.tokenURL }
        guard case let .string(audience)? = claims["aud"], expected.map({ audience == $0 }) ?? audience.hasSuffix("/token") else {
            return .failure(Refusal(problem: "Invalid audience."))
        }
        guard let iat = claims["iat"]?.looseInt64, let exp = claims["exp"]?.looseInt64, exp > iat, exp - iat <= 3600,
              abs(iat - time.unixSeconds) <= 300 else {
            return .failure(Refusal(problem: "Invalid JWT: Token must be a short-lived token (60 minutes) and in a reasonable timeframe."))
        }
        return .success(verified)
    }

    private func oauthError(_ status: Int, _ code: String, _ description: String) -> HTTPServerResponse {
        .json(status, JSONValue.object([("error", .string(code)), ("error_description", .string(description))]).data)
    }

    // MARK: Pub/Sub push tokens

    /// The key set a push receiver must trust: the fake's push signing key, as Google publishes its own.
    package var pushKeySet: JSONWebKeySet { JSONWebKeySet(keys: [pushKeyId: pushKey.publicKey]) }

    /// Where the fake publishes its push keys, as Google does at https://www.googleapis.com/oauth2/v3/certs.
    package static let certsPath = "/oauth2/v3/certs"

    /// Google's published keys: the push key and any rotated in, with Google's caching headers.
    func certs() -> HTTPServerResponse {
        let (failure, rotated, cacheControl) = state.withLock { s in
            s.certsRequests += 1
            return (s.certsFailures.isEmpty ? nil : s.certsFailures.removeFirst(), s.rotatedPushKeys, s.certsCacheControl)
        }
        if let failure = late(failure) { return Self.respond(failure) }
        let document = JSONWebKeySet.document([(id: pushKeyId, key: pushKey.publicKey)] + rotated)
        return HTTPServerResponse(status: 200, headers: [HTTPHeader("Content-Type", "application/json; charset=UTF-8"),
                                                         HTTPHeader("Cache-Control", cacheControl)],
                                  body: document.data)
    }

    /// Publishes another push key, as Google does before it signs with it.
    package func rotateIn(pushKey key: RSAPublicKey, id: String) { state.withLock { $0.rotatedPushKeys.append((id, key)) } }
    package func setCertsCacheControl(_ value: String) { state.withLock { $0.certsCacheControl = value } }
    package func failNextCertsRequests(_ failures: Failure...) { state.withLock { $0.certsFailures += failures } }
    package var certsRequests: Int { state.withLock { $0.certsRequests } }

    /// An OIDC token as Pub/Sub puts on an authenticated push, signed with the fake's push key.
    /// Every claim can be set, so tests can forge each way a token can be wrong; `signer` and
    /// `keyId` replace the signing key or the `kid` it is published under.
    package func pushToken(audience: String, email: String, emailVerified: Bool = true, issuer: String = "https://accounts.google.com",
                          issuedAt: Int64? = nil, lifetime: Int64 = 3600, signer: RSAPrivateKey? = nil, keyId: String? = nil) throws -> String {
        let iat = issuedAt ?? time.unixSeconds
        let header = JSONValue.object([("alg", .string("RS256")), ("kid", .string(keyId ?? pushKeyId)), ("typ", .string("JWT"))])
        let claims = JSONValue.object([
            ("aud", .string(audience)), ("azp", .string("113774264463038321964")), ("email", .string(email)),
            ("email_verified", .bool(emailVerified)), ("exp", .number(iat + lifetime)), ("iat", .number(iat)),
            ("iss", .string(issuer)), ("sub", .string("113774264463038321964")),
        ])
        return try RS256JWT.sign(header: header, claims: claims, key: signer ?? pushKey)
    }
}
