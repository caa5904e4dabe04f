import Glibc

/// An IP address or a CIDR range ("127.0.0.1", "10.0.0.0/8", "::1", "fd00::/8"), for
/// `web.trusted_proxies`: matched against a peer's address in network form.
package struct AddressRange: Sendable, Equatable, CustomStringConvertible {
    package let bytes: [UInt8]
    package let prefixBits: Int
    package let description: String

    package init?(_ text: String) {
        let parts = text.split(separator: "/", maxSplits: 1, omittingEmptySubsequences: false)
        guard let address = Self.parse(String(parts[0])) else { return nil }
        let bits = address.count * 8
        if parts.count == 2 {
            guard let prefix = Int(parts[1]), (0...bits).contains(prefix) else { return nil }
            prefixBits = prefix
        } else {
            prefixBits = bits
        }
        bytes = address
        description = text
    }

    /// The address in network form (4 bytes for IPv4, 16 for IPv6), nil when it is not numeric.
    package static func parse(_ text: String) -> [UInt8]? {
        var v4 = in_addr()
        if inet_pton(AF_INET, text, &v4) == 1 { return withUnsafeBytes(of: v4) { Array($0) } }
        var v6 = in6_addr()
        if inet_pton(AF_INET6, text, &v6) == 1 { return withUnsafeBytes(of: v6) { Array($0) } }
        return nil
    }

    /// Whether `address` (network form) is in the range; an IPv4-mapped IPv6 address counts as its IPv4 address.
    package func contains(_ address: [UInt8]) -> Bool {
        var candidate = address
        if candidate.count == 16, bytes.count == 4, candidate.prefix(12) == [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff][...] {
            candidate = Array(candidate.suffix(4))
        }
        guard candidate.count == bytes.count else { return false }
        var remaining = prefixBits
        for (mine, theirs) in zip(bytes, candidate) where remaining > 0 {
            let bits = min(8, remaining)
            let mask = UInt8(truncatingIfNeeded: 0xFF << (8 - bits))
            guard mine & mask == theirs & mask else { return false }
            remaining -= bits
        }
        return true
    }
}
