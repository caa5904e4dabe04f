import Foundation
import SettleBase
import SettleConfig

/// A Google Cloud service account's JSON key, the file Google Cloud Console downloads and the
/// Play Console grants access to: the identity settle uses for the Google Play Developer API.
/// https://developers.google.com/identity/protocols/oauth2/service-account#creatinganaccount
///
/// The private key is loaded into OpenSSL at once (a bad key fails here, not on the first call)
/// and the PEM text is not kept; the description names the account and key id only.
package struct ServiceAccountKey: Sendable, CustomStringConvertible {
    package var clientEmail: String
    /// `private_key_id`: the JWT header's `kid`, so Google knows which of the account's keys signed.
    package var privateKeyId: String
    package var tokenURI: String
    package let privateKey: RSAPrivateKey

    /// Google's OAuth 2.0 token endpoint, used when the key names none.
    package static let defaultTokenURI = Configuration.GooglePlayConfiguration.defaultTokenURL

    package init(clientEmail: String, privateKeyId: String, tokenURI: String = ServiceAccountKey.defaultTokenURI,
                privateKey: RSAPrivateKey) {
        (self.clientEmail, self.privateKeyId, self.tokenURI, self.privateKey) = (clientEmail, privateKeyId, tokenURI, privateKey)
    }

    /// Why a key file cannot be used. Messages name the field, never its value.
    package struct Problem: Error, Sendable, CustomStringConvertible {
        package var message: String
        package var description: String { message }
    }

    /// Reads the JSON key. `type` must be "service_account" when present (an OAuth client's
    /// secret file looks similar and cannot sign); `client_email`, `private_key_id` and
    /// `private_key` are required; `token_uri` defaults to Google's.
    package init(json data: Data) throws(Problem) {
        let document: JSONValue
        do {
            document = try JSONValue.parse(data)
        } catch {
            // The parse error names a byte offset and a reason, never the text around it.
            throw Problem(message: "the service account key is not JSON (\(error))")
        }
        guard document.objectMembers != nil else { throw Problem(message: "the service account key is not a JSON object") }
        if let type = document["type"], type != .string("service_account") {
            throw Problem(message: "the key's \"type\" is not \"service_account\": download a service account key (JSON), not an OAuth client secret")
        }
        func field(_ name: String) throws(Problem) -> String {
            guard let value = document[name] else { throw Problem(message: "the service account key has no \"\(name)\"") }
            guard case let .string(text) = value, !text.isEmpty else {
                throw Problem(message: "the service account key's \"\(name)\" is not a non-empty string")
            }
            return text
        }
        let email = try field("client_email")
        let keyId = try field("private_key_id")
        let pem = try field("private_key")
        let tokenURI = document["token_uri"] == nil ? ServiceAccountKey.defaultTokenURI : try field("token_uri")
        let key: RSAPrivateKey
        do {
            key = try RSAPrivateKey(pem: pem)
        } catch {
            throw Problem(message: "the service account key's \"private_key\" is unusable: \(error)")
        }
        self.init(clientEmail: email, privateKeyId: keyId, tokenURI: tokenURI, privateKey: key)
    }

    package var description: String { "service account \(clientEmail) (key \(privateKeyId))" }

    /// The JSON key file for a generated key: for tests and the simulator, never for a real account.
    package static func document(clientEmail: String, privateKeyId: String, privateKeyPEM: String, tokenURI: String) -> JSONValue {
        .object([("type", .string("service_account")), ("project_id", .string("settle-test")),
                 ("private_key_id", .string(privateKeyId)), ("private_key", .string(privateKeyPEM)),
                 ("client_email", .string(clientEmail)), ("token_uri", .string(tokenURI))])
    }
}

extension Configuration.GooglePlayConfiguration {
    /// The service account key, read from its secret file and loaded into OpenSSL.
    package func loadServiceAccountKey() throws(ConfigError) -> ServiceAccountKey {
        let secret = try serviceAccountFile.read()
        do {
            return try ServiceAccountKey(json: Data(secret.value.utf8))
        } catch {
            throw ConfigError("\(serviceAccountFile.key): \(serviceAccountFile.path): \(error)")
        }
    }
}
