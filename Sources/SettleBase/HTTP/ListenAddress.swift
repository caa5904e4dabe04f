import Glibc

/// A numeric listen address ("127.0.0.1:8787", "[::1]:8787"; port 0 picks one) as a `sockaddr`.
package struct ListenAddress: Sendable, Equatable, CustomStringConvertible {
    /// Which kind of socket the address needs: libmicrohttpd opens an IPv6 socket only when told.
    package enum Family: Sendable, Equatable { case ipv4, ipv6 }

    package let family: Family
    /// The address in network form: 4 bytes for IPv4, 16 for IPv6.
    package let host: [UInt8]
    package let port: UInt16

    package init?(_ text: String) {
        guard let colon = text.lastIndex(of: ":"), let port = UInt16(text[text.index(after: colon)...]) else { return nil }
        let host = String(text[..<colon])
        if host.hasPrefix("[") && host.hasSuffix("]") {
            var address = in6_addr()
            guard inet_pton(AF_INET6, String(host.dropFirst().dropLast()), &address) == 1 else { return nil }
            self.init(family: .ipv6, host: withUnsafeBytes(of: address) { Array($0) }, port: port)
        } else {
            var address = in_addr()
            guard inet_pton(AF_INET, host, &address) == 1 else { return nil }
            self.init(family: .ipv4, host: withUnsafeBytes(of: address) { Array($0) }, port: port)
        }
    }

    private init(family: Family, host: [UInt8], port: UInt16) {
        self.family = family
        self.host = host
        self.port = port
    }

    /// What the kernel bound `socket` to (`getsockname(2)`), or nil when it is not an IPv4 or
    /// IPv6 socket: the address a listener really has, whatever it was asked for.
    package init?(boundTo socket: Int32) {
        var storage = sockaddr_storage()
        var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        let named = withUnsafeMutablePointer(to: &storage) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(socket, $0, &length) }
        }
        guard named == 0 else { return nil }
        self.init(storage: storage)
    }

    /// The address a `sockaddr` holds (a peer's, as libmicrohttpd reports it), or nil when it is
    /// not IPv4 or IPv6.
    package init?(socketAddress pointer: UnsafePointer<sockaddr>) {
        var storage = sockaddr_storage()
        let size = Int32(pointer.pointee.sa_family) == AF_INET6 ? MemoryLayout<sockaddr_in6>.size : MemoryLayout<sockaddr_in>.size
        withUnsafeMutableBytes(of: &storage) { $0.copyMemory(from: UnsafeRawBufferPointer(start: pointer, count: size)) }
        self.init(storage: storage)
    }

    private init?(storage: sockaddr_storage) {
        switch Int32(storage.ss_family) {
        case AF_INET:
            let address = withUnsafeBytes(of: storage) { $0.loadUnaligned(as: sockaddr_in.self) }
            self.init(family: .ipv4, host: withUnsafeBytes(of: address.sin_addr) { Array($0) }, port: UInt16(bigEndian: address.sin_port))
        case AF_INET6:
            let address = withUnsafeBytes(of: storage) { $0.loadUnaligned(as: sockaddr_in6.self) }
            self.init(family: .ipv6, host: withUnsafeBytes(of: address.sin6_addr) { Array($0) }, port: UInt16(bigEndian: address.sin6_port))
        default:
            return nil
        }
    }

    /// The host alone ("127.0.0.1", "::1"), as logs name a client.
    package var hostText: String {
        let text = description
        let host = text[..<(text.lastIndex(of: ":") ?? text.endIndex)]
        return family == .ipv4 ? String(host) : String(host.dropFirst().dropLast())
    }

    /// 127.0.0.0/8 or ::1 (and an IPv4-mapped loopback): an address only this machine reaches.
    package var isLoopback: Bool {
        switch family {
        case .ipv4: return host.first == 127
        case .ipv6:
            if host == Array(repeating: 0, count: 15) + [1] { return true }
            return host.prefix(12) == [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff][...] && host[12] == 127
        }
    }

    /// Whether a socket the kernel bound to `bound` is what this address asked for: the same
    /// family, host and port, except that port 0 lets the kernel choose the port (and only that).
    package func isSatisfied(by bound: ListenAddress) -> Bool {
        family == bound.family && host == bound.host && (port == 0 ? bound.port != 0 : port == bound.port)
    }

    /// "127.0.0.1:8787" or "[::1]:8787", as `inet_ntop(3)` writes the host.
    package var description: String {
        var text = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN))
        let domain = family == .ipv4 ? AF_INET : AF_INET6
        _ = host.withUnsafeBytes { inet_ntop(domain, $0.baseAddress, &text, socklen_t(text.count)) }
        let written = String(decoding: text.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        return family == .ipv4 ? "\(written):\(port)" : "[\(written)]:\(port)"
    }

    /// Calls `body` with the address as a `sockaddr` whose storage lives for the whole call (and
    /// no longer: the pointer must not escape `body`).
    package func withSocketAddress<T>(_ body: (UnsafePointer<sockaddr>, socklen_t) -> T) -> T {
        switch family {
        case .ipv4:
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_port = port.bigEndian
            withUnsafeMutableBytes(of: &address.sin_addr) { $0.copyBytes(from: host) }
            return withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { body($0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
            }
        case .ipv6:
            var address = sockaddr_in6()
            address.sin6_family = sa_family_t(AF_INET6)
            address.sin6_port = port.bigEndian
            withUnsafeMutableBytes(of: &address.sin6_addr) { $0.copyBytes(from: host) }
            return withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { body($0, socklen_t(MemoryLayout<sockaddr_in6>.size)) }
            }
        }
    }
}
