import COpenSSL
import Foundation

/// SHA-1, for name-based (version 5) UUIDs only: never for anything that must resist forgery.
package enum SHA1 {
    package static func hash(_ bytes: [UInt8]) -> [UInt8] {
        var digest = [UInt8](repeating: 0, count: Int(SHA_DIGEST_LENGTH))
        _ = bytes.withUnsafeBufferPointer { COpenSSL.SHA1($0.baseAddress, $0.count, &digest) }
        return digest
    }
}

/// SHA-256 through OpenSSL's one-shot EVP_Digest.
package enum SHA256 {
    /// Fetched once: `EVP_sha256()` makes OpenSSL 3 look the implementation up again at every
    /// digest (a lock and a method-store search), and every order's receipt is hashed.
    /// Shared by every thread: a fetched EVP_MD is immutable and OpenSSL allows that.
    nonisolated(unsafe) static let fetched: OpaquePointer? = EVP_MD_fetch(nil, "SHA256", nil)

    package static func hash(_ data: Data) -> [UInt8] {
        var digest = [UInt8](repeating: 0, count: Int(EVP_MAX_MD_SIZE))
        var length: UInt32 = 0
        let ok = data.withUnsafeBytes { buffer in
            EVP_Digest(buffer.baseAddress, buffer.count, &digest, &length, fetched ?? EVP_sha256(), nil)
        }
        // EVP_Digest fails only when OpenSSL cannot allocate; there is no sensible recovery.
        precondition(ok == 1, "EVP_Digest(SHA-256) failed")
        return Array(digest.prefix(Int(length)))
    }

    /// Lowercase hex of the digest.
    package static func hex(_ data: Data) -> String {
        LowercaseHex.encode(hash(data))
    }
}

/// Lowercase hex of digests, built from a table: `String(format: "%02x")` per byte cost
/// ~5 % of a pass (issue 11).
package enum LowercaseHex {
    package static func encode(_ bytes: some Collection<UInt8>) -> String {
        String(unsafeUninitializedCapacity: bytes.count * 2) { buffer in
            var index = 0
            for byte in bytes {
                buffer[index] = digits[Int(byte >> 4)]
                buffer[index + 1] = digits[Int(byte & 0x0F)]
                index += 2
            }
            return index
        }
    }

    private static let digits = Array("0123456789abcdef".utf8)
}
