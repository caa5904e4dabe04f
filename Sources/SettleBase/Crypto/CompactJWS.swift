import Foundation

/// Compact JWS serialisation (RFC 7515 section 7.1) signed with ES256: the bearer token of
/// the App Store Server API, and the signed data the tests and the Apple simulator mint.
package enum CompactJWS {
    /// Returns `b64url(header) "." b64url(payload) "." b64url(r||s)`.
    ///
    /// The header is taken as given: the caller supplies `alg` ("ES256") and whatever else
    /// the recipient expects (`kid`/`typ` for Apple's API, `x5c` for StoreKit-style data).
    package static func sign(header: JSONValue, payload: JSONValue, key: ES256PrivateKey) throws(CryptoError) -> String {
        let signingInput = Base64URL.encode(header.data) + "." + Base64URL.encode(payload.data)
        let signature = try key.sign(Data(signingInput.utf8))
        return signingInput + "." + Base64URL.encode(signature)
    }
}
