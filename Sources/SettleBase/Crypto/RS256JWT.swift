import Foundation

/// JSON Web Tokens signed RS256 (RFC 7519 on RFC 7515's compact form): the assertion a Google
/// service account signs to get an access token, and the OIDC token Pub/Sub puts on each push.
package enum RS256JWT {
    /// `b64url(header) "." b64url(claims) "." b64url(signature)`. The header is taken as given:
    /// the caller supplies `alg` ("RS256"), `typ` and `kid`.
    package static func sign(header: JSONValue, claims: JSONValue, key: RSAPrivateKey) throws(CryptoError) -> String {
        let signingInput = Base64URL.encode(header.data) + "." + Base64URL.encode(claims.data)
        return signingInput + "." + Base64URL.encode(try key.sign(Data(signingInput.utf8)))
    }

    /// Why a token was not accepted. The raw values are short and fixed: safe as metric labels.
    package enum Failure: String, Sendable, Error {
        /// Not three base64url parts of JSON objects.
        case malformed
        /// `alg` is anything but RS256 ("none" included): the key type decides the algorithm, never the token.
        case unsupportedAlgorithm = "unsupported_algorithm"
        /// No `kid`, or one the key set does not hold.
        case unknownKey = "unknown_key"
        case badSignature = "bad_signature"
    }

    /// A token whose signature checked out: its header and claims, still to be judged.
    package struct Verified: Sendable, Equatable {
        package var header: JSONValue
        package var claims: JSONValue
    }

    /// Checks the signature of `token` with the key its `kid` names in `keys`. Claims are not
    /// judged here: what a caller must require of them depends on who issued the token.
    package static func verify(_ token: String, keys: JSONWebKeySet) -> Result<Verified, Failure> {
        let parts = token.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3, let headerBytes = Base64URL.decode(parts[0]), let claimBytes = Base64URL.decode(parts[1]),
              let signature = Base64URL.decode(parts[2]),
              let header = try? JSONValue.parse(headerBytes), header.objectMembers != nil,
              let claims = try? JSONValue.parse(claimBytes), claims.objectMembers != nil else {
            return .failure(.malformed)
        }
        guard header["alg"] == .string("RS256") else { return .failure(.unsupportedAlgorithm) }
        guard case let .string(id)? = header["kid"], let key = keys.key(id: id) else { return .failure(.unknownKey) }
        // The signed bytes are the token's own text, not a re-encoding of what was parsed.
        let signingInput = Data(token.utf8.prefix(parts[0].utf8.count + 1 + parts[1].utf8.count))
        guard key.verify(signature: signature, message: signingInput) else { return .failure(.badSignature) }
        return .success(Verified(header: header, claims: claims))
    }
}
