import Foundation
import SettleBase

/// Mints the bearer JWT of Huawei's IAP Kit server API: ES256 with the AppGallery Connect `.p8`
/// key, one token per request body because the payload carries the body's digest.
/// Reference: /work/shared/reference/huawei-appgallery.md section 1.2.
package struct IAPKitToken: Sendable {
    package let issuerId: String
    package let keyId: String
    package let appId: String
    private let key: ES256PrivateKey
    package let time: any TimeSource

    /// Huawei refuses `exp - iat` above one hour; the demo uses exactly one hour.
    package static let lifetime: Int64 = 3600
    /// The fixed audience of IAP Kit.
    package static let audience = "iap-v1"

    package init(issuerId: String, keyId: String, appId: String, key: ES256PrivateKey, time: any TimeSource) {
        self.issuerId = issuerId
        self.keyId = keyId
        self.appId = appId
        self.key = key
        self.time = time
    }

    /// The token for exactly `body`, the bytes sent (an empty body digests `""`).
    package func token(for body: Data) throws(CryptoError) -> String {
        let now = time.unixSeconds
        let header = JSONValue.object([("alg", .string("ES256")), ("typ", .string("JWT")), ("kid", .string(keyId))])
        let claims = JSONValue.object([
            ("iss", .string(issuerId)),
            ("aud", .string(IAPKitToken.audience)),
            ("iat", .number(now)),
            ("exp", .number(now + IAPKitToken.lifetime)),
            ("aid", .string(appId)),
            ("digest", .string(SHA256.hex(body))),
        ])
        return try CompactJWS.sign(header: header, payload: claims, key: key)
    }
}
