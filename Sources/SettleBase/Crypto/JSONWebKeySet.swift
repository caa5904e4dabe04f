import Foundation

/// A set of RSA signing keys by key id, read from a JWKS document (RFC 7517 section 5): how
/// Google publishes the keys that sign its OIDC tokens (https://www.googleapis.com/oauth2/v3/certs).
///
/// Only keys fit for RS256 signatures are kept: `kty` "RSA", `alg` absent or "RS256", `use`
/// absent or "sig", and a `kid` to find them by. Other keys are skipped, so a set that gains a
/// new key type keeps working; a usable-looking RSA key that cannot be read is an error.
package struct JSONWebKeySet: Sendable {
    package let keys: [String: RSAPublicKey]

    package init(keys: [String: RSAPublicKey]) {
        self.keys = keys
    }

    package init(json data: Data) throws(CryptoError) {
        let document: JSONValue
        do {
            document = try JSONValue.parse(data)
        } catch {
            throw CryptoError("key set is not JSON: \(error)")
        }
        guard let entries = document["keys"]?.arrayValue else { throw CryptoError("key set has no \"keys\" array") }
        var keys: [String: RSAPublicKey] = [:]
        for (index, entry) in entries.enumerated() {
            guard case let .string(type)? = entry["kty"], type == "RSA",
                  entry["alg"].map({ $0 == .string("RS256") }) ?? true,
                  entry["use"].map({ $0 == .string("sig") }) ?? true,
                  case let .string(id)? = entry["kid"], !id.isEmpty else { continue }
            guard case let .string(n)? = entry["n"], case let .string(e)? = entry["e"],
                  let modulus = Base64URL.decode(n), let exponent = Base64URL.decode(e) else {
                throw CryptoError("key #\(index + 1) (kid \(id)) has no base64url \"n\" and \"e\"")
            }
            do {
                keys[id] = try RSAPublicKey(modulus: modulus, exponent: exponent)
            } catch {
                throw CryptoError("key #\(index + 1) (kid \(id)): \(error)")
            }
        }
        guard !keys.isEmpty else { throw CryptoError("key set holds no RSA signing key with a kid") }
        self.keys = keys
    }

    package func key(id: String) -> RSAPublicKey? { keys[id] }

    /// The JWKS document for `keys`, as Google serves it: for tests and the simulator.
    package static func document(_ keys: [(id: String, key: RSAPublicKey)]) -> JSONValue {
        .object([("keys", .array(keys.map { entry in
            let (n, e) = entry.key.components
            return .object([("kty", .string("RSA")), ("alg", .string("RS256")), ("use", .string("sig")),
                            ("kid", .string(entry.id)), ("n", .string(Base64URL.encode(n))), ("e", .string(Base64URL.encode(e)))])
        }))])
    }
}
