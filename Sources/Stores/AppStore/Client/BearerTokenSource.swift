import Foundation
import Synchronization
import SettleBase

/// Mints the App Store Server API's bearer JWT (ES256 with the App Store Connect `.p8` key)
/// and reuses it until shortly before it expires.
/// https://developer.apple.com/documentation/appstoreserverapi/generating-json-web-tokens-for-api-requests
package final class BearerTokenSource: Sendable {
    package let issuerId: String
    package let keyId: String
    package let bundleId: String
    private let key: ES256PrivateKey
    package let time: any TimeSource
    private let cached = Mutex<(token: String, expiresAt: Int64)?>(nil)

    /// Apple refuses tokens that expire more than 60 minutes after `iat`; 30 leaves room for clock skew.
    package static let lifetime: Int64 = 30 * 60
    /// A token this close to expiry is replaced, so none expires in flight.
    package static let renewBefore: Int64 = 5 * 60

    package init(issuerId: String, keyId: String, bundleId: String, key: ES256PrivateKey, time: any TimeSource) {
        self.issuerId = issuerId
        self.keyId = keyId
        self.bundleId = bundleId
        self.key = key
        self.time = time
    }

    package func token() throws(CryptoError) -> String {
        let now = time.unixSeconds
        if let current = cached.withLock({ $0 }), current.expiresAt - BearerTokenSource.renewBefore > now {
            return current.token
        }
        let header = JSONValue.object([("alg", .string("ES256")), ("kid", .string(keyId)), ("typ", .string("JWT"))])
        let claims = JSONValue.object([
            ("iss", .string(issuerId)),
            ("iat", .number(now)),
            ("exp", .number(now + BearerTokenSource.lifetime)),
            ("aud", .string("appstoreconnect-v1")),
            ("bid", .string(bundleId)),
        ])
        let token = try CompactJWS.sign(header: header, payload: claims, key: key)
        cached.withLock { $0 = (token, now + BearerTokenSource.lifetime) }
        return token
    }
}
