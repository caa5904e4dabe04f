import Foundation

/// Why a `LoopbackHTTPServer` could not start.
package struct LoopbackHTTPServerError: Error, Sendable, CustomStringConvertible {
    package var description: String
}

/// An HTTP server bound to 127.0.0.1, for tests and the local simulators: the project's one
/// server (`EmbeddedHTTPServer`, on libmicrohttpd) with a thread per connection, so a handler
/// may block (to play a slow upstream) without holding up other connections. Not meant for
/// production traffic: no TLS, loopback only.
package final class LoopbackHTTPServer: Sendable {
    /// Larger request bodies are answered with 413 and the connection is closed.
    package static let maxBodyBytes = 16 << 20

    package let port: Int
    private let server: EmbeddedHTTPServer

    /// Binds 127.0.0.1 on `port` (0: a kernel-chosen free port) and starts accepting at once.
    package init(port requested: UInt16 = 0, handler: @escaping @Sendable (HTTPServerRequest) -> HTTPServerResponse) throws {
        let settings = EmbeddedHTTPServer.Settings(threading: .perConnection, maxBodyBytes: Self.maxBodyBytes, timeoutSeconds: 30,
                                                   maxConnections: 1024, maxConnectionsPerClient: nil)
        let routing = EmbeddedHTTPServer.Routing(
            bodyTooLarge: { _ in HTTPServerResponse(status: 413, body: Data("request body over \(Self.maxBodyBytes) bytes".utf8)) },
            handle: handler)
        do {
            server = try EmbeddedHTTPServer(address: ListenAddress("127.0.0.1:\(requested)"), settings: settings, routing: routing)
        } catch {
            throw LoopbackHTTPServerError(description: "loopback HTTP server on port \(requested): \(error.description)")
        }
        port = server.port
    }

    /// What the kernel bound the listening socket to (127.0.0.1 and the port).
    package var boundAddress: ListenAddress? { server.boundAddress }

    /// "http://127.0.0.1:<port>"
    package var baseURL: String { "http://127.0.0.1:\(port)" }

    /// Connections accepted so far: with keep-alive, how many a client opened.
    package var acceptedConnections: Int { server.acceptedConnections }

    /// Closes the listener (new connections are refused once this returns) and then every
    /// connection. Returns promptly even if a handler is still blocked: that handler finishes
    /// on its own and its reply goes nowhere. Idempotent.
    package func stop() {
        server.stop(waitingForHandlers: false)
    }

    deinit {
        server.stop(waitingForHandlers: false)
    }
}
