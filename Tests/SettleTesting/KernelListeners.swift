import Foundation
import Glibc

/// What the kernel says is listening: the TCP sockets in state LISTEN from `/proc/net/tcp` and
/// `/proc/net/tcp6`, read independently of anything settle reports about itself. A test that
/// binds a fixed port checks here that the socket is on exactly the address asked for, never
/// the wildcard (which would answer on 127.0.0.1 too and hide the fault).
package enum KernelListeners {
    /// Every listening TCP address on `port` of one family, as "127.0.0.1:8787", "0.0.0.0:8787"
    /// (IPv4) or "[::1]:8787", "[::]:8787" (IPv6). One family at a time: the kernel may give the
    /// same port number to another process's socket of the other family, and tests run beside
    /// other processes.
    package static func addresses(onPort port: Int, ipv6: Bool = false) -> [String] {
        parse(ipv6 ? "/proc/net/tcp6" : "/proc/net/tcp", ipv6: ipv6).filter { $0.port == port }.map(\.text)
    }

    /// A port that was free a moment ago on 127.0.0.1 and on [::1]: the kernel picks it for a
    /// socket bound to port 0, which is then closed. Tests then bind it by number, as an
    /// operator's configuration does.
    package static func freePort() throws -> Int {
        for _ in 0..<20 {
            let socket4 = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            guard socket4 >= 0 else { throw POSIXError(.EMFILE) }
            defer { close(socket4) }
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_addr.s_addr = inet_addr("127.0.0.1")
            var length = socklen_t(MemoryLayout<sockaddr_in>.size)
            let port: Int = withUnsafeMutablePointer(to: &address) { pointer in
                pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { raw in
                    guard bind(socket4, raw, length) == 0, getsockname(socket4, raw, &length) == 0 else { return 0 }
                    return Int(UInt16(bigEndian: pointer.pointee.sin_port))
                }
            }
            if port > 0 && addresses(onPort: port).isEmpty && addresses(onPort: port, ipv6: true).isEmpty { return port }
        }
        throw POSIXError(.EADDRINUSE)
    }

    private struct Listener {
        var text: String
        var port: Int
    }

    /// Lines of `sl local_address rem_address st …`; the address is hex in the kernel's byte
    /// order (each 32-bit word as the host stores it), the port hex in network order.
    private static func parse(_ path: String, ipv6: Bool) -> [Listener] {
        guard let table = try? String(contentsOfFile: path, encoding: .utf8) else { return [] }
        return table.split(separator: "\n").dropFirst().compactMap { line in
            let fields = line.split(separator: " ")
            guard fields.count > 3, fields[3] == "0A" else { return nil }
            let local = fields[1].split(separator: ":")
            guard local.count == 2, let port = Int(local[1], radix: 16) else { return nil }
            var bytes: [UInt8] = []
            var hex = Substring(local[0])
            while hex.count >= 8, let word = UInt32(hex.prefix(8), radix: 16) {
                withUnsafeBytes(of: word) { bytes.append(contentsOf: $0) }
                hex = hex.dropFirst(8)
            }
            var text = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN))
            _ = bytes.withUnsafeBytes { inet_ntop(ipv6 ? AF_INET6 : AF_INET, $0.baseAddress, &text, socklen_t(text.count)) }
            let host = String(decoding: text.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
            return Listener(text: ipv6 ? "[\(host)]:\(port)" : "\(host):\(port)", port: port)
        }
    }
}
