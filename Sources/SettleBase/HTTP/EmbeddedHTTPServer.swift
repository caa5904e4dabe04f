import CMicroHTTPD
import Foundation
import Glibc
import Synchronization

/// settle's one HTTP server, on libmicrohttpd (GNU's embeddable HTTP server, packaged by
/// Debian): request parsing, keep-alive, `Expect: 100-continue`, chunked bodies, connection
/// limits and timeouts are its job, not ours. The notification endpoint and the simulators are
/// configurations of it.
///
/// One instance owns one `MHD_Daemon`, stopped in `stop()` or `deinit`.
package final class EmbeddedHTTPServer: @unchecked Sendable {
    /// How the server runs its handlers, and what it bounds.
    package struct Settings: Sendable {
        package enum Threading: Sendable {
            /// A thread per connection: a handler may block (a simulator playing a slow Apple)
            /// without holding up other connections.
            case perConnection
            /// epoll with a fixed pool: a slow sender costs a socket, not a thread.
            case pool(threads: Int)
        }

        package var threading: Threading
        package var maxBodyBytes: Int
        /// Idle time after which a connection is closed, and the most a whole request (headers
        /// to last body byte) may take: a slow sender cannot hold a connection longer.
        package var timeoutSeconds: Int
        package var maxConnections: Int
        /// Connections one client address may hold; nil for no limit of its own.
        package var maxConnectionsPerClient: Int?

        package init(threading: Threading, maxBodyBytes: Int, timeoutSeconds: Int, maxConnections: Int, maxConnectionsPerClient: Int?) {
            (self.threading, self.maxBodyBytes, self.timeoutSeconds, self.maxConnections) = (threading, maxBodyBytes, timeoutSeconds, maxConnections)
            self.maxConnectionsPerClient = maxConnectionsPerClient
        }
    }

    /// What the server asks of its owner: an early answer once the headers are in (a request
    /// refused there never has its body read), the answer to a body over the limit, and the
    /// handler for everything else.
    package struct Routing: Sendable {
        package var screen: @Sendable (_ head: HTTPServerRequest, _ declaredLength: Int?) -> HTTPServerResponse?
        package var bodyTooLarge: @Sendable (_ head: HTTPServerRequest) -> HTTPServerResponse
        package var requestTooSlow: @Sendable (_ head: HTTPServerRequest) -> Void
        package var handle: @Sendable (HTTPServerRequest) -> HTTPServerResponse

        package init(screen: @escaping @Sendable (_ head: HTTPServerRequest, _ declaredLength: Int?) -> HTTPServerResponse? = { _, _ in nil },
                     bodyTooLarge: @escaping @Sendable (_ head: HTTPServerRequest) -> HTTPServerResponse,
                     requestTooSlow: @escaping @Sendable (_ head: HTTPServerRequest) -> Void = { _ in },
                     handle: @escaping @Sendable (HTTPServerRequest) -> HTTPServerResponse) {
            self.screen = screen
            self.bodyTooLarge = bodyTooLarge
            self.requestTooSlow = requestTooSlow
            self.handle = handle
        }
    }

    /// Why the server could not start.
    package struct StartError: Error, CustomStringConvertible, Sendable {
        package var description: String
        /// The kernel bound another address than the one asked for (a wildcard, another port):
        /// a fault to refuse, never to serve on.
        package var isAddressMismatch = false
    }

    package let port: Int
    /// What the kernel bound the listening socket to (`getsockname(2)`), read back after start:
    /// the address the server really answers on, whatever it was asked for. Nil only when the
    /// socket is not IPv4 or IPv6.
    package let boundAddress: ListenAddress?
    private let core: ServerCore
    /// Behind `lock` so `stop()` from a signal path and `deinit` never stop it twice.
    private var daemon: OpaquePointer?
    private let lock = NSLock()

    /// Binds `address`, or serves the already listening `listenDescriptor` systemd passed.
    package init(address: ListenAddress?, listenDescriptor: Int32? = nil, settings: Settings, routing: Routing) throws(StartError) {
        core = ServerCore(settings: settings, routing: routing)
        let context = Unmanaged.passUnretained(core).toOpaque()
        // ITC (an eventfd per thread) lets MHD_stop_daemon wake idle workers; without it they
        // sleep in epoll_wait until the next connection and stopping hangs.
        var flags = MHD_USE_ITC.rawValue | MHD_USE_INTERNAL_POLLING_THREAD.rawValue
        var threads: UInt32 = 0
        switch settings.threading {
        case .perConnection:
            flags |= MHD_USE_THREAD_PER_CONNECTION.rawValue | MHD_USE_POLL.rawValue
        case let .pool(count):
            flags |= MHD_USE_EPOLL.rawValue
            threads = UInt32(max(1, count))
        }
        let connections = UInt32(max(1, settings.maxConnections))
        let perClient = UInt32(max(0, settings.maxConnectionsPerClient ?? 0))
        let timeout = UInt32(max(1, settings.timeoutSeconds))
        // Headers and libmicrohttpd's per-connection buffers; the body is copied out as it arrives.
        let memory = 32 * 1024
        let started: OpaquePointer?
        if let listenDescriptor {
            started = settle_mhd_start_server(flags, nil, listenDescriptor, serverAccess, context, serverCompleted,
                                              serverURILogger, serverConnectionNotice, connections, perClient, timeout, memory, threads)
        } else if let address {
            // Without MHD_USE_IPv6 libmicrohttpd opens an IPv4 socket whatever the address says.
            if address.family == .ipv6 { flags |= MHD_USE_IPv6.rawValue }
            started = address.withSocketAddress { pointer, _ in
                settle_mhd_start_server(flags, pointer, -1, serverAccess, context, serverCompleted,
                                        serverURILogger, serverConnectionNotice, connections, perClient, timeout, memory, threads)
            }
        } else {
            throw StartError(description: "no address and no listening descriptor to serve")
        }
        guard let started else { throw StartError(description: String(cString: strerror(errno))) }
        let bound = ListenAddress(boundTo: settle_mhd_listen_fd(started))
        if let address {
            // Port 0 asks the kernel for a port; nothing else may differ from what was asked.
            guard let bound, address.isSatisfied(by: bound) else {
                MHD_stop_daemon(started)
                throw StartError(description: "asked to listen on \(address), but the kernel bound \(bound.map(String.init(describing:)) ?? "an address that is not IPv4 or IPv6")",
                                 isAddressMismatch: true)
            }
        }
        daemon = started
        port = Int(bound?.port ?? settle_mhd_bound_port(started))
        boundAddress = bound
    }

    deinit { stop() }

    /// Connections accepted so far: with keep-alive, how many a client opened.
    package var acceptedConnections: Int { core.accepted.load(ordering: .relaxed) }

    /// Stops listening and closes every connection; idempotent. With `waitingForHandlers`
    /// (a server whose handlers write to the ledger, which is closed next) it returns once every
    /// running handler has answered. Without it, it returns as soon as the listener is closed (a
    /// connect is refused from then on) and the daemon finishes stopping on a thread of its own:
    /// a simulator playing a hung Apple must not hold up a test's teardown.
    package func stop(waitingForHandlers: Bool = true) {
        lock.lock()
        let running = daemon
        daemon = nil
        lock.unlock()
        guard let running else { return }
        // Quiescing hands the listening socket back; libmicrohttpd's threads may still poll it, so
        // it is only closed after MHD_stop_daemon. Shutting it down now stops it listening at once
        // (Linux drops a listening TCP socket's queue and refuses new connections on shutdown).
        let listener = waitingForHandlers ? -1 : MHD_quiesce_daemon(running)
        guard listener >= 0 else { return MHD_stop_daemon(running) }
        shutdown(listener, Int32(SHUT_RDWR))
        // Open connections too, so a client's kept-alive connection fails now rather than being
        // served by a connection thread that has not seen the stop yet.
        core.shutDownConnections()
        let stopping = UncheckedDaemon(daemon: running, core: core)
        Thread {
            MHD_stop_daemon(stopping.daemon)
            close(listener)
            withExtendedLifetime(stopping.core) {}
        }.start()
    }
}

/// A daemon stopped on another thread, with the state its callbacks reach kept alive until then.
private struct UncheckedDaemon: @unchecked Sendable {
    let daemon: OpaquePointer
    let core: ServerCore
}

/// What the C callbacks reach through their `cls` pointer.
private final class ServerCore: Sendable {
    let settings: EmbeddedHTTPServer.Settings
    let routing: EmbeddedHTTPServer.Routing
    let accepted = Atomic<Int>(0)
    /// Sockets of the open connections. A socket leaves the set (under the lock) before
    /// libmicrohttpd closes it, so every one shut down here is still this server's.
    private let openSockets = Mutex<Set<Int32>>([])

    func opened(_ socket: Int32) {
        accepted.add(1, ordering: .relaxed)
        openSockets.withLock { _ = $0.insert(socket) }
    }

    func closed(_ socket: Int32) {
        openSockets.withLock { _ = $0.remove(socket) }
    }

    func shutDownConnections() {
        openSockets.withLock { sockets in
            for socket in sockets { shutdown(socket, Int32(SHUT_RDWR)) }
        }
    }

    init(settings: EmbeddedHTTPServer.Settings, routing: EmbeddedHTTPServer.Routing) {
        self.settings = settings
        self.routing = routing
    }

    func queue(_ connection: OpaquePointer?, _ response: HTTPServerResponse) -> MHD_Result {
        // 1xx can't be a final answer and anything else isn't HTTP: a handler bug.
        let response = (200...599).contains(response.status)
            ? response : HTTPServerResponse(status: 500, body: Data("handler returned invalid status \(response.status)".utf8))
        let made = response.body.withUnsafeBytes { bytes in
            MHD_create_response_from_buffer(bytes.count, UnsafeMutableRawPointer(mutating: bytes.baseAddress),
                                            MHD_ResponseMemoryMode.RESPMEM_MUST_COPY)
        }
        guard let made else { return MHD_Result.NO }
        defer { MHD_destroy_response(made) }
        for header in response.headers {
            let owned = ["Content-Length", "Connection", "Transfer-Encoding"].contains { httpHeaderNamesEqual($0, header.name) }
            // Dropping a malformed field beats emitting a response the client can't parse.
            let malformed = !isHTTPToken(header.name) || header.value.utf8.contains { $0 == 0x0D || $0 == 0x0A || $0 == 0 }
            if owned || malformed { continue }
            _ = MHD_add_response_header(made, header.name, header.value)
        }
        return MHD_queue_response(connection, UInt32(response.status), made)
    }
}

/// One request as it arrives, owned by libmicrohttpd's per-request pointer from the moment the
/// request line is read (the URI logger makes it) until the completion callback frees it.
private final class ServerRequest {
    let target: String
    var head: HTTPServerRequest?
    var body = Data()
    var tooLarge = false
    let started = DispatchTime.now()

    init(target: String) { self.target = target }
}

/// Called with the raw request target (query included) before anything else: its result
/// becomes the request's pointer.
private let serverURILogger: settle_mhd_uri_logger = { _, uri, _ in
    Unmanaged.passRetained(ServerRequest(target: uri.map { String(cString: $0) } ?? "")).toOpaque()
}

/// Told when a connection opens and before it is closed.
private let serverConnectionNotice: MHD_NotifyConnectionCallback = { cls, connection, _, code in
    guard let cls else { return }
    let core = Unmanaged<ServerCore>.fromOpaque(cls).takeUnretainedValue()
    let socket = settle_mhd_connection_fd(connection)
    if code == MHD_ConnectionNotificationCode.CONNECTION_NOTIFY_STARTED {
        core.opened(socket)
    } else {
        core.closed(socket)
    }
}

/// Collects one header into the `[HTTPHeader]` behind `cls`.
private let collectHeader: MHD_KeyValueIterator = { cls, _, key, value in
    guard let cls, let key else { return MHD_Result.YES }
    let headers = cls.assumingMemoryBound(to: [HTTPHeader].self)
    headers.pointee.append(HTTPHeader(String(cString: key), value.map { String(cString: $0) } ?? ""))
    return MHD_Result.YES
}

/// libmicrohttpd's access handler: first called once the headers are in, then once per body
/// chunk, then once more with no data when the request is complete.
private let serverAccess: MHD_AccessHandlerCallback = { cls, connection, _, method, _, uploadData, uploadSize, requestPointer in
    guard let cls, let requestPointer, let uploadSize, let existing = requestPointer.pointee else { return MHD_Result.NO }
    let core = Unmanaged<ServerCore>.fromOpaque(cls).takeUnretainedValue()
    let request = Unmanaged<ServerRequest>.fromOpaque(existing).takeUnretainedValue()
    guard let head = request.head else {
        var headers: [HTTPHeader] = []
        _ = withUnsafeMutablePointer(to: &headers) { MHD_get_connection_values(connection, MHD_ValueKind.HEADER_KIND, collectHeader, $0) }
        let client = settle_mhd_client_address(connection).flatMap { ListenAddress(socketAddress: $0) }
        let head = HTTPServerRequest(method: method.map { String(cString: $0) } ?? "", path: request.target, headers: headers,
                                     client: client)
        request.head = head
        // A refusal queued now makes libmicrohttpd skip the body and close the connection.
        let declared = head.header("Content-Length").flatMap { Int($0) }
        if let early = core.routing.screen(head, declared) { return core.queue(connection, early) }
        if let declared, declared > core.settings.maxBodyBytes { return core.queue(connection, core.routing.bodyTooLarge(head)) }
        return MHD_Result.YES
    }
    if uploadSize.pointee > 0 {
        // A sender trickling bytes keeps the idle timer happy; the whole request still has a deadline.
        let elapsed = Double(DispatchTime.now().uptimeNanoseconds - request.started.uptimeNanoseconds) / 1e9
        guard elapsed <= Double(core.settings.timeoutSeconds) else {
            core.routing.requestTooSlow(head)
            return MHD_Result.NO
        }
        if !request.tooLarge, let uploadData {
            if request.body.count + uploadSize.pointee > core.settings.maxBodyBytes {
                request.tooLarge = true
                request.body = Data()
            } else {
                request.body.append(UnsafeRawPointer(uploadData).assumingMemoryBound(to: UInt8.self), count: uploadSize.pointee)
            }
        }
        uploadSize.pointee = 0
        return MHD_Result.YES
    }
    guard !request.tooLarge else { return core.queue(connection, core.routing.bodyTooLarge(head)) }
    var complete = head
    complete.body = request.body
    return core.queue(connection, core.routing.handle(complete))
}

/// Frees the per-request state however the request ended (answered, timed out, reset).
private let serverCompleted: MHD_RequestCompletedCallback = { _, _, requestPointer, _ in
    guard let requestPointer, let existing = requestPointer.pointee else { return }
    Unmanaged<ServerRequest>.fromOpaque(existing).release()
    requestPointer.pointee = nil
}
