import CMicroHTTPD
import Foundation
import Glibc

/// The listener for App Store Server Notifications, on libmicrohttpd (GNU's embeddable HTTP
/// server, packaged by Debian): HTTP parsing, connection limits and timeouts are its job, not
/// ours. It takes only `POST <path>` with a body of at most `maxBodyBytes`, and hands the
/// body to `handle`; everything else gets a 4xx and one log line.
///
/// One instance owns one `MHD_Daemon`, stopped in `stop()` or `deinit`.
public final class NotificationEndpoint: @unchecked Sendable {
    /// Where and how the endpoint listens (`notifications` in the configuration).
    public struct Limits: Sendable, Equatable {
        public var maxBodyBytes: Int
        /// Idle time after which libmicrohttpd closes a connection, and the most a whole request
        /// (headers to last body byte) may take: a slow sender cannot hold a connection longer.
        public var timeoutSeconds: Int
        public var maxConnections: Int

        public init(maxBodyBytes: Int = 64 * 1024, timeoutSeconds: Int = 10, maxConnections: Int = 64) {
            self.maxBodyBytes = maxBodyBytes
            self.timeoutSeconds = timeoutSeconds
            self.maxConnections = maxConnections
        }
    }

    /// Why the endpoint could not start.
    public struct StartError: Error, CustomStringConvertible, Sendable {
        public var description: String
    }

    public let port: Int
    private let core: EndpointCore
    /// Behind `lock` so `stop()` from a signal path and `deinit` never stop it twice.
    private var daemon: OpaquePointer?
    private let lock = NSLock()

    /// Binds `address` ("127.0.0.1:8787", "[::1]:8787"; port 0 picks one), or serves the
    /// already listening `listenDescriptor` systemd passed (socket activation).
    public init(address: String, listenDescriptor: Int32? = nil, path: String, limits: Limits, log: Log,
                handle: @escaping @Sendable (Data) -> HTTPServerResponse) throws(StartError) {
        core = EndpointCore(path: path, limits: limits, log: log, handle: handle)
        let context = Unmanaged.passUnretained(core).toOpaque()
        // epoll with a small thread pool: a slow sender costs a socket, not a thread. ITC (an
        // eventfd per thread) lets MHD_stop_daemon wake idle workers; without it they sleep in
        // epoll_wait until the next connection and stopping hangs.
        let flags = MHD_USE_EPOLL_INTERNAL_THREAD.rawValue | MHD_USE_ITC.rawValue
        let connections = UInt32(max(1, limits.maxConnections))
        let timeout = UInt32(max(1, limits.timeoutSeconds))
        // Headers and our per-connection buffers; the body is copied out as it arrives.
        let memory = 32 * 1024
        var started: OpaquePointer?
        if let fd = listenDescriptor {
            started = settle_mhd_start(flags, nil, fd, endpointAccess, context, endpointCompleted, connections, connections,
                                       timeout, memory, 4)
        } else {
            guard let socketAddress = SocketAddress(address) else {
                throw StartError(description: "notifications.listen: \"\(address)\" is not HOST:PORT with a numeric IPv4 or [IPv6] host")
            }
            started = socketAddress.withPointer { pointer in
                settle_mhd_start(flags, pointer, -1, endpointAccess, context, endpointCompleted, connections, connections,
                                 timeout, memory, 4)
            }
        }
        guard let started else {
            throw StartError(description: "cannot listen on \(address) for notifications: \(String(cString: strerror(errno)))")
        }
        daemon = started
        port = Int(settle_mhd_bound_port(started))
    }

    deinit { stop() }

    /// Stops listening and closes every connection; idempotent.
    public func stop() {
        lock.lock()
        let running = daemon
        daemon = nil
        lock.unlock()
        guard let running else { return }
        MHD_stop_daemon(running)
    }
}

/// A numeric listen address as a `sockaddr`.
private struct SocketAddress {
    private var storage = sockaddr_storage()

    init?(_ text: String) {
        guard let colon = text.lastIndex(of: ":"), let port = UInt16(text[text.index(after: colon)...]) else { return nil }
        var host = String(text[..<colon])
        if host.hasPrefix("[") && host.hasSuffix("]") {
            host = String(host.dropFirst().dropLast())
            var address = sockaddr_in6()
            address.sin6_family = sa_family_t(AF_INET6)
            address.sin6_port = port.bigEndian
            guard inet_pton(AF_INET6, host, &address.sin6_addr) == 1 else { return nil }
            withUnsafeMutableBytes(of: &storage) { $0.copyMemory(from: withUnsafeBytes(of: address) { $0 }) }
        } else {
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_port = port.bigEndian
            guard inet_pton(AF_INET, host, &address.sin_addr) == 1 else { return nil }
            withUnsafeMutableBytes(of: &storage) { $0.copyMemory(from: withUnsafeBytes(of: address) { $0 }) }
        }
    }

    func withPointer<T>(_ body: (UnsafePointer<sockaddr>) -> T) -> T {
        withUnsafeBytes(of: storage) { body($0.baseAddress!.assumingMemoryBound(to: sockaddr.self)) }
    }
}

/// What the C callbacks reach through their `cls` pointer.
final class EndpointCore: Sendable {
    let path: String
    let limits: NotificationEndpoint.Limits
    let log: Log
    let handle: @Sendable (Data) -> HTTPServerResponse

    init(path: String, limits: NotificationEndpoint.Limits, log: Log, handle: @escaping @Sendable (Data) -> HTTPServerResponse) {
        self.path = path
        self.limits = limits
        self.log = log
        self.handle = handle
    }

    /// Answers and logs a request refused before it reached the handler.
    func refuse(_ connection: OpaquePointer?, _ status: Int, _ why: String, method: String, target: String) -> MHD_Result {
        log.warning("notifications.bad_request", ["status": status, "method": String(method.prefix(16)),
                                                  "path": String(target.prefix(128)), "why": why])
        var headers: [HTTPHeader] = []
        if status == 405 { headers.append(HTTPHeader("Allow", "POST")) }
        return queue(connection, HTTPServerResponse(status: status, headers: headers,
                                                    body: JSONValue.object([("error", .string(why))]).data))
    }

    func queue(_ connection: OpaquePointer?, _ response: HTTPServerResponse) -> MHD_Result {
        let made = response.body.withUnsafeBytes { bytes in
            MHD_create_response_from_buffer(bytes.count, UnsafeMutableRawPointer(mutating: bytes.baseAddress),
                                            MHD_ResponseMemoryMode.RESPMEM_MUST_COPY)
        }
        guard let made else { return MHD_Result.NO }
        defer { MHD_destroy_response(made) }
        let headers = response.headers.isEmpty && !response.body.isEmpty
            ? [HTTPHeader("Content-Type", "application/json")] : response.headers
        for header in headers { _ = MHD_add_response_header(made, header.name, header.value) }
        return MHD_queue_response(connection, UInt32(response.status), made)
    }
}

/// One request's body as it arrives, owned by libmicrohttpd's per-request pointer.
final class EndpointRequest {
    var body = Data()
    var tooLarge = false
    let started = DispatchTime.now()
}

/// libmicrohttpd's access handler: first called once the headers are in (`*con_cls` is NULL),
/// then once per body chunk, then once more with no data when the request is complete.
private let endpointAccess: MHD_AccessHandlerCallback = { cls, connection, url, method, _, uploadData, uploadSize, requestPointer in
    guard let cls, let requestPointer, let uploadSize else { return MHD_Result.NO }
    let core = Unmanaged<EndpointCore>.fromOpaque(cls).takeUnretainedValue()
    let methodText = method.map { String(cString: $0) } ?? ""
    let target = url.map { String(cString: $0) } ?? ""
    guard let existing = requestPointer.pointee else {
        // Headers only: refuse what we can before reading any body (a refusal queued now makes
        // libmicrohttpd skip the body and close the connection).
        guard methodText == "POST" else { return core.refuse(connection, 405, "only POST is accepted", method: methodText, target: target) }
        guard target == core.path else { return core.refuse(connection, 404, "no such path", method: methodText, target: target) }
        if let declared = MHD_lookup_connection_value(connection, MHD_ValueKind.HEADER_KIND, "Content-Length").map({ String(cString: $0) }),
           let length = Int(declared), length > core.limits.maxBodyBytes {
            return core.refuse(connection, 413, "body of \(length) bytes is over the \(core.limits.maxBodyBytes)-byte limit",
                               method: methodText, target: target)
        }
        requestPointer.pointee = Unmanaged.passRetained(EndpointRequest()).toOpaque()
        return MHD_Result.YES
    }
    let request = Unmanaged<EndpointRequest>.fromOpaque(existing).takeUnretainedValue()
    let elapsed = Double(DispatchTime.now().uptimeNanoseconds - request.started.uptimeNanoseconds) / 1e9
    if uploadSize.pointee > 0 {
        // A sender trickling bytes keeps the idle timer happy; the whole request still has a deadline.
        guard elapsed <= Double(core.limits.timeoutSeconds) else {
            core.log.warning("notifications.bad_request", ["status": "closed", "why": "request took over \(core.limits.timeoutSeconds) s"])
            return MHD_Result.NO
        }
        if !request.tooLarge, let uploadData {
            if request.body.count + uploadSize.pointee > core.limits.maxBodyBytes {
                request.tooLarge = true
                request.body = Data()
            } else {
                request.body.append(UnsafeRawPointer(uploadData).assumingMemoryBound(to: UInt8.self), count: uploadSize.pointee)
            }
        }
        uploadSize.pointee = 0
        return MHD_Result.YES
    }
    guard !request.tooLarge else {
        return core.refuse(connection, 413, "body is over the \(core.limits.maxBodyBytes)-byte limit", method: methodText, target: target)
    }
    return core.queue(connection, core.handle(request.body))
}

/// Frees the per-request state however the request ended (answered, timed out, reset).
private let endpointCompleted: MHD_RequestCompletedCallback = { _, _, requestPointer, _ in
    guard let requestPointer, let existing = requestPointer.pointee else { return }
    Unmanaged<EndpointRequest>.fromOpaque(existing).release()
    requestPointer.pointee = nil
}
