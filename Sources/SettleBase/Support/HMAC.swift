import COpenSSL
import Foundation
import Synchronization

/// HMAC-SHA256 through OpenSSL's EVP_MAC.
///
/// The one-shot HMAC() fetches the MAC and the digest again at every call (OpenSSL 3); every
/// webhook request is signed. Here the MAC is fetched once, and a context keyed with each key
/// is kept and copied per message, so a signature costs the hashing alone.
package enum HMACSHA256 {
    package static func hex(key: Data, message: Data) -> String {
        var digest = [UInt8](repeating: 0, count: Int(EVP_MAX_MD_SIZE))
        var length = 0
        let context = keyedContext(key)
        defer { EVP_MAC_CTX_free(context) }
        let ok = context != nil && message.withUnsafeBytes { m in
            EVP_MAC_update(context, m.baseAddress?.assumingMemoryBound(to: UInt8.self), m.count) == 1
        } && EVP_MAC_final(context, &digest, &length, digest.count) == 1
        // It fails only when OpenSSL cannot allocate; there is no sensible recovery.
        precondition(ok, "HMAC-SHA256 failed")
        return LowercaseHex.encode(digest.prefix(length))
    }

    /// Shared by every thread: a fetched EVP_MAC is immutable and OpenSSL allows that.
    nonisolated(unsafe) private static let mac: OpaquePointer? = EVP_MAC_fetch(nil, "HMAC", nil)

    /// Keyed contexts, one per key seen (a webhook secret, and its successor after a reload);
    /// never more than a handful kept.
    private static let keyed = Mutex<[Data: KeyedContext]>([:])
    private static let keptKeys = 8

    /// A fresh copy of the context keyed with `key`; nil when OpenSSL cannot make one.
    private static func keyedContext(_ key: Data) -> OpaquePointer? {
        keyed.withLock { contexts in
            if let kept = contexts[key] { return EVP_MAC_CTX_dup(kept.handle) }
            guard let made = KeyedContext(key: key) else { return nil }
            if contexts.count >= keptKeys { contexts.removeAll() }
            contexts[key] = made
            return EVP_MAC_CTX_dup(made.handle)
        }
    }

    /// One EVP_MAC_CTX initialised with a key, freed with it.
    private final class KeyedContext: @unchecked Sendable {
        let handle: OpaquePointer

        init?(key: Data) {
            guard let mac = HMACSHA256.mac, let handle = EVP_MAC_CTX_new(mac) else { return nil }
            var digestName = Array("SHA256".utf8CString)
            let ok = digestName.withUnsafeMutableBufferPointer { name in
                var params = [OSSL_PARAM_construct_utf8_string("digest", name.baseAddress, 0), OSSL_PARAM_construct_end()]
                return key.withUnsafeBytes { k in
                    if let bytes = k.baseAddress?.assumingMemoryBound(to: UInt8.self) {
                        return EVP_MAC_init(handle, bytes, k.count, &params) == 1
                    }
                    // A zero-length key is a valid HMAC key; OpenSSL needs a pointer for it all the
                    // same, one that lives through the call.
                    var empty: UInt8 = 0
                    return withUnsafePointer(to: &empty) { EVP_MAC_init(handle, $0, 0, &params) == 1 }
                }
            }
            guard ok else {
                EVP_MAC_CTX_free(handle)
                return nil
            }
            self.handle = handle
        }

        deinit { EVP_MAC_CTX_free(handle) }
    }
}
