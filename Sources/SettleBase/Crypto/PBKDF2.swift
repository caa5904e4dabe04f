import COpenSSL
import Foundation

/// PBKDF2-HMAC-SHA256 (RFC 8018) through OpenSSL's `PKCS5_PBKDF2_HMAC`: the slow salted hash of
/// the support console's passwords. OWASP's 2023 guidance for PBKDF2-HMAC-SHA256 is 600,000
/// iterations (https://cheatsheetseries.owasp.org/cheatsheets/Password_Storage_Cheat_Sheet.html).
package enum PBKDF2 {
    package static func sha256(password: String, salt: [UInt8], iterations: Int, length: Int = 32) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: length)
        let count = Int32(password.utf8.count)
        let result = password.withCString { chars in
            PKCS5_PBKDF2_HMAC(chars, count, salt, Int32(salt.count), Int32(iterations), EVP_sha256(), Int32(length), &out)
        }
        // It fails only when OpenSSL cannot allocate; there is no sensible recovery.
        precondition(result == 1, "PKCS5_PBKDF2_HMAC failed")
        return out
    }
}

/// Bytes from OpenSSL's CSPRNG (`RAND_bytes`): salts, per-process secrets.
package enum SecureRandom {
    package static func bytes(_ count: Int) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: count)
        // RAND_bytes fails only when the generator cannot be seeded; nothing may go on without it.
        precondition(RAND_bytes(&out, Int32(count)) == 1, "RAND_bytes failed")
        return out
    }
}

/// Comparison whose time does not depend on where two secrets first differ (`CRYPTO_memcmp`).
package enum ConstantTime {
    package static func equal(_ a: [UInt8], _ b: [UInt8]) -> Bool {
        guard a.count == b.count else { return false }
        guard !a.isEmpty else { return true }
        return CRYPTO_memcmp(a, b, a.count) == 0
    }
}
