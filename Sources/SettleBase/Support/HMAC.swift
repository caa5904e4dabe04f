import COpenSSL
import Foundation

/// HMAC-SHA256 through OpenSSL's one-shot HMAC().
package enum HMACSHA256 {
    package static func hex(key: Data, message: Data) -> String {
        var digest = [UInt8](repeating: 0, count: Int(EVP_MAX_MD_SIZE))
        var length: UInt32 = 0
        let result = key.withUnsafeBytes { k in
            message.withUnsafeBytes { m in
                HMAC(EVP_sha256(), k.baseAddress, Int32(k.count), m.baseAddress?.assumingMemoryBound(to: UInt8.self), m.count,
                     &digest, &length)
            }
        }
        // HMAC fails only when OpenSSL cannot allocate; there is no sensible recovery.
        precondition(result != nil, "HMAC-SHA256 failed")
        return LowercaseHex.encode(digest.prefix(Int(length)))
    }
}
