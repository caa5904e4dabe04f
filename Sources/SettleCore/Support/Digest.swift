import COpenSSL
import Foundation

/// SHA-256 through OpenSSL's one-shot EVP_Digest.
public enum SHA256 {
    public static func hash(_ data: Data) -> [UInt8] {
        var digest = [UInt8](repeating: 0, count: Int(EVP_MAX_MD_SIZE))
        var length: UInt32 = 0
        let ok = data.withUnsafeBytes { buffer in
            EVP_Digest(buffer.baseAddress, buffer.count, &digest, &length, EVP_sha256(), nil)
        }
        // EVP_Digest fails only when OpenSSL cannot allocate; there is no sensible recovery.
        precondition(ok == 1, "EVP_Digest(SHA-256) failed")
        return Array(digest.prefix(Int(length)))
    }

    public static func hex(_ data: Data) -> String {
        hash(data).map { String(format: "%02x", $0) }.joined()
    }
}
