import Foundation
import Glibc
import XCTest
@testable import SettleBase

/// One client cannot take every connection of the notifications listener: a client address
/// holds at most a quarter of them (unless configured), so the stores are still served while
/// one address holds connections open. Real sockets from two loopback addresses.
final class NotificationEndpointLimitTests: XCTestCase {
    /// A TCP connection from `source` (a loopback address) to 127.0.0.1:`port`; -1 when refused.
    func connect(from source: String, to port: Int) -> Int32 {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var local = sockaddr_in()
        local.sin_family = sa_family_t(AF_INET)
        inet_pton(AF_INET, source, &local.sin_addr)
        var remote = sockaddr_in()
        remote.sin_family = sa_family_t(AF_INET)
        remote.sin_port = in_port_t(UInt16(port).bigEndian)
        inet_pton(AF_INET, "127.0.0.1", &remote.sin_addr)
        let bound = withUnsafePointer(to: &local) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
            bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) } }
        let connected = withUnsafePointer(to: &remote) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
            Glibc.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) } }
        guard bound == 0, connected == 0 else { close(fd); return -1 }
        var timeout = timeval(tv_sec: 5, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        return fd
    }

    /// Sends a whole notification and returns the status line's code, nil without an answer.
    func post(_ fd: Int32) -> Int? {
        let request = "POST /n HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 2\r\nConnection: close\r\n\r\n{}"
        _ = request.withCString { send(fd, $0, strlen($0), Int32(MSG_NOSIGNAL)) }
        var buffer = [UInt8](repeating: 0, count: 256)
        let read = recv(fd, &buffer, buffer.count, 0)
        guard read > 12 else { return nil }
        return Int(String(decoding: buffer[9..<12], as: UTF8.self))
    }

    func testOneClientHoldingConnections_cannotShutOutAnother() throws {
        let endpoint = try NotificationEndpoint(address: "127.0.0.1:0", path: "/n", limits: .init(timeoutSeconds: 30, maxConnections: 8),
                                                log: .silent, handle: { _ in HTTPServerResponse(status: 200, body: Data("{}".utf8)) })
        defer { endpoint.stop() }
        XCTAssertEqual(endpoint.boundAddress.map { _ in NotificationEndpoint.Limits(maxConnections: 8).perClient }, 2)
        // The flood: eight idle connections from 127.0.0.1, each started and never finished.
        var held: [Int32] = []
        defer { held.forEach { close($0) } }
        for _ in 0..<8 {
            let fd = connect(from: "127.0.0.1", to: endpoint.port)
            if fd >= 0 {
                _ = "POST /n HTTP/1.1\r\n".withCString { send(fd, $0, strlen($0), Int32(MSG_NOSIGNAL)) }
                held.append(fd)
            }
        }
        // The server takes its share of them and closes the rest (waited for, not timed: at most 5 s).
        func closedByServer(_ fd: Int32) -> Bool {
            var byte: UInt8 = 0
            return recv(fd, &byte, 1, Int32(MSG_PEEK | MSG_DONTWAIT)) == 0
        }
        let until = Date().addingTimeInterval(5)
        while held.filter(closedByServer).count < 6 && Date() < until { usleep(10_000) }
        // Another client is still answered.
        let other = connect(from: "127.0.0.2", to: endpoint.port)
        XCTAssertGreaterThanOrEqual(other, 0)
        defer { close(other) }
        XCTAssertEqual(post(other), 200, "a second client is served while the first holds its share")
    }

    func testTheShare_isConfigurable_andNeverOverTheWhole() {
        XCTAssertEqual(NotificationEndpoint.Limits(maxConnections: 64).perClient, 16)
        XCTAssertEqual(NotificationEndpoint.Limits(maxConnections: 64, maxConnectionsPerClient: 64).perClient, 64)
        XCTAssertEqual(NotificationEndpoint.Limits(maxConnections: 2).perClient, 1)
        XCTAssertEqual(NotificationEndpoint.Limits(maxConnections: 8, maxConnectionsPerClient: 100).perClient, 8)
    }
}
