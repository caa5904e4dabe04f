import Foundation
import Glibc

/// The listener for App Store Server Notifications: the project's `EmbeddedHTTPServer` (on
/// libmicrohttpd) with a small epoll pool. It takes only `POST <path>` with a body of at most
/// `maxBodyBytes`, and hands the body to `handle`; everything else gets a 4xx and one log line.
package final class NotificationEndpoint: Sendable {
    /// Where and how the endpoint listens (`notifications` in the configuration).
    package struct Limits: Sendable, Equatable {
        package var maxBodyBytes: Int
        /// Idle time after which libmicrohttpd closes a connection, and the most a whole request
        /// (headers to last body byte) may take: a slow sender cannot hold a connection longer.
        package var timeoutSeconds: Int
        package var maxConnections: Int
        /// Connections one client address may hold at once: a quarter of `maxConnections` unless
        /// configured, so one client cannot take every connection while the stores are shut out.
        /// Behind a reverse proxy every request comes from the proxy: raise it to `maxConnections`.
        package var maxConnectionsPerClient: Int?

        /// What one client may hold when the configuration says nothing.
        package var perClient: Int { min(maxConnections, maxConnectionsPerClient ?? max(1, maxConnections / 4)) }

        package init(maxBodyBytes: Int = 64 * 1024, timeoutSeconds: Int = 10, maxConnections: Int = 64,
                     maxConnectionsPerClient: Int? = nil) {
            (self.maxBodyBytes, self.timeoutSeconds, self.maxConnections, self.maxConnectionsPerClient) = (maxBodyBytes, timeoutSeconds, maxConnections, maxConnectionsPerClient)
        }
    }

    /// Why the endpoint could not start.
    package struct StartError: Error, CustomStringConvertible, Sendable {
        package var description: String
        /// The kernel bound another address than the configured one: a configuration fault.
        package var isAddressMismatch = false
    }

    package let port: Int
    /// What the kernel bound the listening socket to: the address to log and to check.
    package var boundAddress: ListenAddress? { server.boundAddress }
    private let server: EmbeddedHTTPServer

    /// Binds `address` ("127.0.0.1:8787", "[::1]:8787"; port 0 picks one), or serves the
    /// already listening `listenDescriptor` systemd passed (socket activation).
    /// `routes`: other paths on the same listener (Google Play's pushes), each handed the whole
    /// request (its headers carry the push's credentials), under the same limits.
    package init(address: String, listenDescriptor: Int32? = nil, path: String, limits: Limits, log: Log,
                routes: [String: @Sendable (HTTPServerRequest) -> HTTPServerResponse] = [:],
                handle: @escaping @Sendable (Data) -> HTTPServerResponse) throws(StartError) {
        let listenAddress = ListenAddress(address)
        guard listenDescriptor != nil || listenAddress != nil else {
            throw StartError(description: "notifications.listen: \"\(address)\" is not HOST:PORT with a numeric IPv4 or [IPv6] host")
        }
        let settings = EmbeddedHTTPServer.Settings(threading: .pool(threads: 4), maxBodyBytes: limits.maxBodyBytes,
                                                   timeoutSeconds: limits.timeoutSeconds, maxConnections: limits.maxConnections,
                                                   maxConnectionsPerClient: limits.perClient)
        let routing = EmbeddedHTTPServer.Routing(
            screen: { head, _ in
                guard head.method == "POST" else { return Self.refusal(405, "only POST is accepted", head, log) }
                guard head.pathWithoutQuery == path || routes[String(head.pathWithoutQuery)] != nil else {
                    return Self.refusal(404, "no such path", head, log)
                }
                return nil
            },
            bodyTooLarge: { head in
                let declared = head.header("Content-Length").map { "body of \($0) bytes" } ?? "body"
                return Self.refusal(413, "\(declared) is over the \(limits.maxBodyBytes)-byte limit", head, log)
            },
            requestTooSlow: { _ in
                log.warning("notifications.bad_request", ["status": "closed", "why": "request took over \(limits.timeoutSeconds) s"])
            },
            handle: { request in
                var response = routes[String(request.pathWithoutQuery)].map { $0(request) } ?? handle(request.body)
                if response.headers.isEmpty && !response.body.isEmpty {
                    response.headers = [HTTPHeader("Content-Type", "application/json")]
                }
                return response
            })
        do {
            server = try EmbeddedHTTPServer(address: listenAddress, listenDescriptor: listenDescriptor, settings: settings, routing: routing)
        } catch {
            throw StartError(description: "cannot listen on \(address) for notifications: \(error.description)",
                             isAddressMismatch: error.isAddressMismatch)
        }
        port = server.port
    }

    /// Stops listening and closes every connection, once the requests being handled are answered
    /// (their rows are in the ledger, which is closed next); idempotent.
    package func stop() {
        server.stop(waitingForHandlers: true)
    }

    /// Answers and logs a request refused before it reached the handler.
    private static func refusal(_ status: Int, _ why: String, _ head: HTTPServerRequest, _ log: Log) -> HTTPServerResponse {
        log.warning("notifications.bad_request", ["status": status, "method": String(head.method.prefix(16)),
                                                  "path": String(head.path.prefix(128)), "why": why])
        var headers = [HTTPHeader("Content-Type", "application/json")]
        if status == 405 { headers.append(HTTPHeader("Allow", "POST")) }
        return HTTPServerResponse(status: status, headers: headers, body: JSONValue.object([("error", .string(why))]).data)
    }
}
