import Foundation
import SettleBase
import SettleTesting
import XCTest

/// Every server settle starts listens on exactly the address it was given: checked against the
/// kernel's own table, on fixed ports (port 0 and a wildcard socket would hide a wrong bind).
final class ListenAddressTests: XCTestCase {
    func testParsing_keepsTheFamilyHostAndPort_andPrintsTheAddressAsGiven() throws {
        let v4 = try XCTUnwrap(ListenAddress("127.0.0.1:8787"))
        XCTAssertEqual(v4.family, .ipv4)
        XCTAssertEqual(v4.host, [127, 0, 0, 1])
        XCTAssertEqual(v4.port, 8787)
        XCTAssertEqual(v4.description, "127.0.0.1:8787")
        let v6 = try XCTUnwrap(ListenAddress("[::1]:8788"))
        XCTAssertEqual(v6.family, .ipv6)
        XCTAssertEqual(v6.host, [UInt8](repeating: 0, count: 15) + [1])
        XCTAssertEqual(v6.description, "[::1]:8788")
        XCTAssertEqual(ListenAddress("[fe80::1%eth0]:80")?.description, nil, "a scope id is not a numeric host")
        for bad in ["localhost:80", "127.0.0.1", "127.0.0.1:65536", "::1:80", "[::1]", "300.1.1.1:80", ""] {
            XCTAssertNil(ListenAddress(bad), bad)
        }
    }

    func testWhatTheKernelBound_satisfiesTheAddress_onlyWhenHostAndPortAreTheOnesAsked_port0LettingItChooseThePort() throws {
        func address(_ text: String) throws -> ListenAddress { try XCTUnwrap(ListenAddress(text)) }
        XCTAssertTrue(try address("127.0.0.1:8787").isSatisfied(by: address("127.0.0.1:8787")))
        XCTAssertFalse(try address("127.0.0.1:8787").isSatisfied(by: address("0.0.0.0:40853")), "the release build's fault")
        XCTAssertFalse(try address("127.0.0.1:8787").isSatisfied(by: address("0.0.0.0:8787")), "the wildcard")
        XCTAssertFalse(try address("127.0.0.1:8787").isSatisfied(by: address("127.0.0.1:40853")), "another port")
        XCTAssertTrue(try address("127.0.0.1:0").isSatisfied(by: address("127.0.0.1:40853")))
        XCTAssertFalse(try address("127.0.0.1:0").isSatisfied(by: address("0.0.0.0:40853")))
        XCTAssertTrue(try address("[::1]:0").isSatisfied(by: address("[::1]:5555")))
        XCTAssertFalse(try address("[::1]:5555").isSatisfied(by: address("[::]:5555")))
        XCTAssertFalse(try address("[::ffff:127.0.0.1]:5555").isSatisfied(by: address("127.0.0.1:5555")), "another family")
    }

    func testTheAddressHandedToTheKernel_holdsEveryByte_evenAfterTheParsingScopeIsGone() throws {
        // The fault this guards: the sockaddr was copied from a pointer that had escaped its
        // closure, so the kernel was handed whatever was on the stack (0.0.0.0, port 0).
        let addresses = try (0..<64).map { i in try XCTUnwrap(ListenAddress("10.\(i).200.7:\(40000 + i)")) }
        for (i, address) in addresses.enumerated() {
            address.withSocketAddress { pointer, length in
                XCTAssertEqual(Int(length), MemoryLayout<sockaddr_in>.size)
                let socketAddress = UnsafeRawPointer(pointer).loadUnaligned(as: sockaddr_in.self)
                XCTAssertEqual(Int32(socketAddress.sin_family), AF_INET)
                XCTAssertEqual(UInt16(bigEndian: socketAddress.sin_port), UInt16(40000 + i))
                withUnsafeBytes(of: socketAddress.sin_addr) { XCTAssertEqual(Array($0), [10, UInt8(i), 200, 7]) }
            }
        }
        try XCTUnwrap(ListenAddress("[2001:db8::42]:9")).withSocketAddress { pointer, length in
            XCTAssertEqual(Int(length), MemoryLayout<sockaddr_in6>.size)
            let socketAddress = UnsafeRawPointer(pointer).loadUnaligned(as: sockaddr_in6.self)
            XCTAssertEqual(Int32(socketAddress.sin6_family), AF_INET6)
            XCTAssertEqual(UInt16(bigEndian: socketAddress.sin6_port), 9)
            withUnsafeBytes(of: socketAddress.sin6_addr) {
                XCTAssertEqual(Array($0), [0x20, 0x01, 0x0d, 0xb8] + [UInt8](repeating: 0, count: 11) + [0x42])
            }
        }
    }

    func testEmbeddedServer_onAFixedIPv4LoopbackPort_listensThereOnly() throws {
        let port = try KernelListeners.freePort()
        let server = try EmbeddedHTTPServer(address: ListenAddress("127.0.0.1:\(port)"), settings: Self.settings, routing: Self.routing)
        defer { server.stop() }
        XCTAssertEqual(server.port, port)
        XCTAssertEqual(server.boundAddress?.description, "127.0.0.1:\(port)", "getsockname on the listening socket")
        XCTAssertEqual(KernelListeners.addresses(onPort: port), ["127.0.0.1:\(port)"], "the kernel's table")
        XCTAssertEqual(try get("http://127.0.0.1:\(port)/x"), 200)
    }

    func testEmbeddedServer_onAFixedIPv6LoopbackPort_listensThereOnly() throws {
        let port = try KernelListeners.freePort()
        let server = try EmbeddedHTTPServer(address: ListenAddress("[::1]:\(port)"), settings: Self.settings, routing: Self.routing)
        defer { server.stop() }
        XCTAssertEqual(server.boundAddress?.description, "[::1]:\(port)")
        XCTAssertEqual(KernelListeners.addresses(onPort: port, ipv6: true), ["[::1]:\(port)"])
        XCTAssertEqual(try get("http://[::1]:\(port)/x"), 200)
    }

    func testPortZero_isTheOnlyThingTheKernelMayChoose_theHostIsKept() throws {
        let server = try EmbeddedHTTPServer(address: ListenAddress("127.0.0.1:0"), settings: Self.settings, routing: Self.routing)
        defer { server.stop() }
        XCTAssertGreaterThan(server.port, 0)
        XCTAssertEqual(server.boundAddress?.description, "127.0.0.1:\(server.port)")
        XCTAssertEqual(KernelListeners.addresses(onPort: server.port), ["127.0.0.1:\(server.port)"])
    }

    func testAPortAlreadyTaken_failsToStart_sayingWhy_neverFallsBackToAnother() throws {
        let port = try KernelListeners.freePort()
        let first = try EmbeddedHTTPServer(address: ListenAddress("127.0.0.1:\(port)"), settings: Self.settings, routing: Self.routing)
        defer { first.stop() }
        XCTAssertThrowsError(try EmbeddedHTTPServer(address: ListenAddress("127.0.0.1:\(port)"), settings: Self.settings,
                                                    routing: Self.routing)) { error in
            XCTAssertTrue("\(error)".contains("in use"), "\(error)")
        }
        XCTAssertEqual(KernelListeners.addresses(onPort: port), ["127.0.0.1:\(port)"])
    }

    func testNotificationEndpoint_onFixedPorts_listensOnExactlyTheConfiguredAddress() throws {
        for host in ["127.0.0.1", "[::1]"] {
            let port = try KernelListeners.freePort()
            let endpoint = try NotificationEndpoint(address: "\(host):\(port)", path: "/n", limits: .init(),
                                                    log: .silent) { _ in HTTPServerResponse(status: 200, body: Data()) }
            defer { endpoint.stop() }
            XCTAssertEqual(endpoint.port, port)
            XCTAssertEqual(endpoint.boundAddress?.description, "\(host):\(port)")
            XCTAssertEqual(KernelListeners.addresses(onPort: port, ipv6: host.hasPrefix("[")), ["\(host):\(port)"])
        }
    }

    func testLoopbackServer_onAFixedPort_listensOn127001Only() throws {
        let port = try KernelListeners.freePort()
        let server = try LoopbackHTTPServer(port: UInt16(port)) { _ in HTTPServerResponse(status: 204, body: Data()) }
        defer { server.stop() }
        XCTAssertEqual(server.port, port)
        XCTAssertEqual(server.boundAddress?.description, "127.0.0.1:\(port)")
        XCTAssertEqual(KernelListeners.addresses(onPort: port), ["127.0.0.1:\(port)"])
    }

    private static let settings = EmbeddedHTTPServer.Settings(threading: .pool(threads: 1), maxBodyBytes: 1024, timeoutSeconds: 5,
                                                              maxConnections: 8, maxConnectionsPerClient: nil)
    private static let routing = EmbeddedHTTPServer.Routing(
        bodyTooLarge: { _ in HTTPServerResponse(status: 413, body: Data()) },
        handle: { _ in HTTPServerResponse(status: 200, body: Data("ok".utf8)) })

    private func get(_ url: String) throws -> Int {
        try HTTPClient(configuration: HTTPClientConfiguration(connectTimeout: 2, totalTimeout: 5)).send(HTTPRequest(method: "GET", url: url)).status
    }
}
