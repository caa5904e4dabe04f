import Foundation
import SettleBase

/// A console password as `settle web-passwd` writes it and `web.users_file` holds it:
/// `pbkdf2-sha256$ITERATIONS$SALT$HASH` (salt and hash in base64), PBKDF2-HMAC-SHA256 over a
/// 16-byte random salt. Checking a password costs the iterations again, and compares in
/// constant time.
struct WebPasswordHash: Sendable, Equatable {
    static let scheme = "pbkdf2-sha256"
    static let defaultIterations = 600_000

    var iterations: Int
    var salt: [UInt8]
    var hash: [UInt8]

    /// Hashes `password` under a fresh random salt.
    static func make(_ password: String, iterations: Int = defaultIterations) -> WebPasswordHash {
        let salt = SecureRandom.bytes(16)
        return WebPasswordHash(iterations: iterations, salt: salt, hash: PBKDF2.sha256(password: password, salt: salt, iterations: iterations))
    }

    init(iterations: Int, salt: [UInt8], hash: [UInt8]) {
        self.iterations = iterations
        self.salt = salt
        self.hash = hash
    }

    /// Reads the written form; nil when it is not one.
    init?(_ text: String) {
        let parts = text.split(separator: "$", omittingEmptySubsequences: false)
        guard parts.count == 4, parts[0] == Self.scheme, let iterations = Int(parts[1]), (1...100_000_000).contains(iterations),
              let salt = Data(base64Encoded: String(parts[2])), salt.count >= 8,
              let hash = Data(base64Encoded: String(parts[3])), hash.count >= 16 else { return nil }
        self.init(iterations: iterations, salt: Array(salt), hash: Array(hash))
    }

    var text: String {
        "\(Self.scheme)$\(iterations)$\(Data(salt).base64EncodedString())$\(Data(hash).base64EncodedString())"
    }

    func verifies(_ password: String) -> Bool {
        ConstantTime.equal(PBKDF2.sha256(password: password, salt: salt, iterations: iterations, length: hash.count), hash)
    }
}
