import Dispatch
import Foundation
import Glibc
import Synchronization

// A deliberately small HTTP/1.1 server bound to 127.0.0.1, for tests and the local
// simulator. It is not meant for production traffic: one thread per connection (kept
// alive for HTTP/1.1 clients, as Apple's servers do), no chunked request bodies, no TLS.

/// A request as received by a `LoopbackHTTPServer` handler.
public struct HTTPServerRequest: Sendable {
    public var method: String
    /// The request target as sent, including any query string (e.g. "/v1/items?limit=5").
    public var path: String
    public var headers: [HTTPHeader]
    public var body: Data

    public init(method: String, path: String, headers: [HTTPHeader] = [], body: Data = Data()) {
        self.method = method
        self.path = path
        self.headers = headers
        self.body = body
    }

    /// Value of the last header called `name` (case-insensitive), or nil.
    public func header(_ name: String) -> String? {
        headers.lastHeaderValue(named: name)
    }
}

/// What a handler answers. Content-Length, Connection and Transfer-Encoding are always
/// set by the server (it owns the framing), so handler-supplied values for them are ignored.
public struct HTTPServerResponse: Sendable {
    public var status: Int
    public var headers: [HTTPHeader]
    public var body: Data

    public init(status: Int, headers: [HTTPHeader] = [], body: Data = Data()) {
        self.status = status
        self.headers = headers
        self.body = body
    }

    public static func json(_ status: Int, _ body: Data) -> HTTPServerResponse {
        HTTPServerResponse(status: status, headers: [HTTPHeader("Content-Type", "application/json")], body: body)
    }
}

/// Why a `LoopbackHTTPServer` could not start.
public struct LoopbackHTTPServerError: Error, Sendable, CustomStringConvertible {
    public var operation: String
    public var errorNumber: Int32

    public var description: String {
        "loopback HTTP server: \(operation) failed: \(String(cString: strerror(errorNumber)))"
    }
}

public final class LoopbackHTTPServer: Sendable {
    public let port: Int
    /// The accept loop and connection threads hold `core`, never `self`, so dropping the
    /// last reference to the server runs `deinit` (and therefore `stop()`).
    private let core: LoopbackServerCore

    /// Binds 127.0.0.1 on `port` (0: a kernel-chosen free port) and starts accepting at once.
    public init(port requested: UInt16 = 0, handler: @escaping @Sendable (HTTPServerRequest) -> HTTPServerResponse) throws {
        core = try LoopbackServerCore(port: requested, handler: handler)
        port = core.port
        core.start()
    }

    /// "http://127.0.0.1:<port>"
    public var baseURL: String { "http://127.0.0.1:\(port)" }

    /// Connections accepted so far: with keep-alive, how many a client opened.
    public var acceptedConnections: Int { core.acceptedConnections }

    /// Closes the listener (new connections are refused once this returns) and shuts down
    /// open connections so their clients fail fast. Returns promptly even if a handler is
    /// still blocked: that handler's thread finishes on its own and its reply goes nowhere.
    /// Idempotent.
    public func stop() {
        core.stop()
    }

    deinit {
        core.stop()
    }
}

// MARK: - Implementation

final class LoopbackServerCore: Sendable {
    /// Larger request bodies are answered with 413 and the connection is closed.
    static let maxBodyBytes = 16 << 20
    /// Bound on request line + headers, so a client can't make us buffer without limit.
    static let maxHeadBytes = 64 << 10
    /// Per-socket read/write timeout: a stalled client must not pin a thread forever.
    static let ioTimeoutSeconds = 30
    /// Requests served on one connection before it is closed, so no client holds a
    /// connection thread forever.
    static let maxRequestsPerConnection = 10_000

    let port: Int
    private let listener: Int32
    /// Self-pipe that wakes the accept loop's poll() on stop. (close() on Linux does not
    /// interrupt a thread blocked on the same descriptor, and closing a descriptor another
    /// thread may still use risks it being reused for an unrelated file.)
    private let wakeRead: Int32
    private let wakeWrite: Int32
    private let handler: @Sendable (HTTPServerRequest) -> HTTPServerResponse
    private let acceptLoopFinished = DispatchSemaphore(value: 0)
    private let state = Mutex(State())

    private struct State {
        var stopping = false
        /// Open connection sockets, so stop() can shut them down. A connection thread
        /// removes its descriptor under the lock *before* closing it, so every descriptor
        /// stop() sees here is still ours.
        var connections: Set<Int32> = []
        var accepted = 0
    }

    var acceptedConnections: Int { state.withLock { $0.accepted } }

    init(port requested: UInt16, handler: @escaping @Sendable (HTTPServerRequest) -> HTTPServerResponse) throws {
        self.handler = handler

        // Non-blocking listener: poll() may report a connection that is reset before we
        // accept it, and accept() must then return EAGAIN rather than block the loop.
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue | SOCK_CLOEXEC.rawValue | SOCK_NONBLOCK.rawValue), 0)
        guard fd >= 0 else { throw LoopbackHTTPServerError(operation: "socket", errorNumber: errno) }
        var ok = false
        defer { if !ok { close(fd) } }

        var reuse: Int32 = 1
        guard setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &reuse, socklen_t(MemoryLayout<Int32>.size)) == 0 else {
            throw LoopbackHTTPServerError(operation: "setsockopt(SO_REUSEADDR)", errorNumber: errno)
        }

        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = requested.bigEndian  // 0: the kernel picks a free port, so tests never collide
        address.sin_addr.s_addr = UInt32(0x7F00_0001).bigEndian  // 127.0.0.1: never reachable from outside
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard bound == 0 else { throw LoopbackHTTPServerError(operation: "bind", errorNumber: errno) }
        guard listen(fd, 128) == 0 else { throw LoopbackHTTPServerError(operation: "listen", errorNumber: errno) }

        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let named = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        guard named == 0 else { throw LoopbackHTTPServerError(operation: "getsockname", errorNumber: errno) }

        // (pipe2/accept4 are not visible through Swift's Glibc module, which is built
        // without _GNU_SOURCE, so close-on-exec is set with fcntl instead.)
        var pipeFDs: [Int32] = [-1, -1]
        guard pipe(&pipeFDs) == 0 else { throw LoopbackHTTPServerError(operation: "pipe", errorNumber: errno) }
        _ = fcntl(pipeFDs[0], F_SETFD, FD_CLOEXEC)
        _ = fcntl(pipeFDs[1], F_SETFD, FD_CLOEXEC)

        listener = fd
        port = Int(UInt16(bigEndian: address.sin_port))
        wakeRead = pipeFDs[0]
        wakeWrite = pipeFDs[1]
        ok = true
    }

    func start() {
        let thread = Thread { [self] in acceptLoop() }
        thread.name = "loopback-http-accept"
        thread.start()
    }

    func stop() {
        let isFirstStop = state.withLock { state -> Bool in
            guard !state.stopping else { return false }
            state.stopping = true
            // Shut down rather than close: the owning thread still holds the descriptor
            // and will close it; shutdown just makes its blocked recv/send return.
            for fd in state.connections { shutdown(fd, Int32(SHUT_RDWR)) }
            return true
        }
        guard isFirstStop else { return }

        var byte: UInt8 = 1
        while write(wakeWrite, &byte, 1) < 0 && errno == EINTR {}
        // The accept loop never runs handlers, so this wait is short. Waiting means the
        // listener is really closed when stop() returns (a connect then gets refused).
        acceptLoopFinished.wait()
        close(wakeRead)
        close(wakeWrite)
    }

    private func acceptLoop() {
        defer {
            close(listener)
            acceptLoopFinished.signal()
        }
        var fds = [
            pollfd(fd: listener, events: Int16(POLLIN), revents: 0),
            pollfd(fd: wakeRead, events: Int16(POLLIN), revents: 0),
        ]
        while true {
            fds[0].revents = 0
            fds[1].revents = 0
            if poll(&fds, nfds_t(fds.count), -1) < 0 {
                if errno == EINTR { continue }
                return
            }
            if fds[1].revents != 0 { return }  // stop() was called
            if fds[0].revents & Int16(POLLERR | POLLNVAL) != 0 { return }
            guard fds[0].revents & Int16(POLLIN) != 0 else { continue }

            // Accepted sockets are blocking (Linux doesn't inherit O_NONBLOCK on accept),
            // which keeps the per-connection code simple; SO_RCVTIMEO/SO_SNDTIMEO bound them.
            let connection = accept(listener, nil, nil)
            if connection < 0 {
                switch errno {
                case EAGAIN, EWOULDBLOCK, EINTR, ECONNABORTED, EPROTO:
                    continue
                case EMFILE, ENFILE, ENOBUFS, ENOMEM:
                    // Out of resources: back off briefly instead of spinning on poll().
                    usleep(10_000)
                    continue
                default:
                    return
                }
            }
            _ = fcntl(connection, F_SETFD, FD_CLOEXEC)
            let registered = state.withLock { state -> Bool in
                guard !state.stopping else { return false }
                state.connections.insert(connection)
                state.accepted += 1
                return true
            }
            guard registered else {
                close(connection)
                continue
            }
            // One thread per connection: handlers may block (e.g. sleep to simulate a slow
            // upstream) without holding up other connections.
            let worker = Thread { [self] in serve(connection) }
            worker.name = "loopback-http-conn"
            worker.start()
        }
    }

    private func serve(_ fd: Int32) {
        defer {
            state.withLock { _ = $0.connections.remove(fd) }
            close(fd)
        }
        Self.setSocketTimeout(fd, seconds: Self.ioTimeoutSeconds)
        var reader = SocketReader(fd: fd)

        for _ in 0..<Self.maxRequestsPerConnection {
            switch Self.readRequest(&reader) {
            case .disconnected:
                return  // client went away (or closed an idle connection); nothing to answer
            case let .reject(status, reason):
                let response = HTTPServerResponse(status: status, body: Data(reason.utf8))
                _ = Self.sendAll(fd, Self.serialize(response, omitBody: false, keepAlive: false))
                Self.lingeringClose(fd)
                return
            case let .request(request, length, clientKeepsAlive):
                let response = handler(request)
                let keepAlive = clientKeepsAlive && !state.withLock { $0.stopping }
                // A failed send means the client disconnected (e.g. it timed out).
                guard Self.sendAll(fd, Self.serialize(response, omitBody: request.method == "HEAD", keepAlive: keepAlive)),
                      keepAlive
                else { break }
                reader.buffer.removeFirst(length)
                continue
            }
            break
        }
        Self.lingeringClose(fd)
    }

    // MARK: Request parsing

    private enum ReadOutcome {
        /// A request that took the first `length` bytes of the buffer; `keepAlive` when
        /// the client is HTTP/1.1 and did not ask to close.
        case request(HTTPServerRequest, length: Int, keepAlive: Bool)
        case reject(status: Int, reason: String)
        case disconnected
    }

    private static func readRequest(_ reader: inout SocketReader) -> ReadOutcome {
        // 1. Request line and headers, up to the blank line.
        var searchFrom = 0
        var headEnd: Int?
        while headEnd == nil {
            if let first = reader.buffer.first, !isTokenByte(first) {
                // Cannot be a request line (e.g. a TLS ClientHello sent to this plain-text
                // port): answer now instead of waiting for a CRLFCRLF that never comes.
                return .reject(status: 400, reason: "malformed request line")
            }
            headEnd = findHeadTerminator(in: reader.buffer, from: searchFrom)
            if headEnd != nil { break }
            guard reader.buffer.count <= maxHeadBytes else {
                return .reject(status: 431, reason: "request head too large")
            }
            searchFrom = max(0, reader.buffer.count - 3)
            guard reader.fill() else { return .disconnected }
        }
        guard let headEnd else { return .disconnected }
        guard headEnd <= maxHeadBytes else { return .reject(status: 431, reason: "request head too large") }

        let head = String(decoding: reader.buffer[..<headEnd], as: UTF8.self)
        var lines = head.components(separatedBy: "\r\n")
        let requestLine = lines.removeFirst().split(separator: " ", omittingEmptySubsequences: false)
        guard requestLine.count == 3,
              isHTTPToken(String(requestLine[0])),
              !requestLine[1].isEmpty,
              requestLine[2].hasPrefix("HTTP/1.")
        else { return .reject(status: 400, reason: "malformed request line") }
        let method = String(requestLine[0])
        let path = String(requestLine[1])

        var headers: [HTTPHeader] = []
        for line in lines where !line.isEmpty {
            // Rejects obsolete line folding and whitespace before the colon, both of
            // which RFC 9112 says a server must reject or may mis-parse.
            guard let colon = line.firstIndex(of: ":"), isHTTPToken(String(line[..<colon])) else {
                return .reject(status: 400, reason: "malformed header line")
            }
            let value = line[line.index(after: colon)...].trimmingCharacters(in: CharacterSet(charactersIn: " \t"))
            headers.append(HTTPHeader(String(line[..<colon]), value))
        }

        // 2. Body framing. Only Content-Length is supported.
        if headers.contains(where: { httpHeaderNamesEqual($0.name, "Transfer-Encoding") }) {
            return .reject(status: 501, reason: "Transfer-Encoding is not supported")
        }
        let lengths = Set(headers.filter { httpHeaderNamesEqual($0.name, "Content-Length") }.map(\.value))
        var contentLength = 0
        if !lengths.isEmpty {
            // Conflicting or non-numeric lengths are a request-smuggling vector: refuse.
            guard lengths.count == 1, let only = lengths.first, !only.isEmpty, only.count <= 18,
                  only.utf8.allSatisfy({ $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }),
                  let parsed = Int(only)
            else { return .reject(status: 400, reason: "invalid Content-Length") }
            contentLength = parsed
        }
        guard contentLength <= maxBodyBytes else {
            // Decided before any 100 Continue, so a well-behaved client never sends the body.
            return .reject(status: 413, reason: "request body exceeds \(maxBodyBytes) bytes")
        }

        // 3. Body, after telling an `Expect: 100-continue` client to go ahead (curl waits
        // up to a second for this before sending large bodies anyway).
        let bodyStart = headEnd + 4
        if contentLength > reader.buffer.count - bodyStart,
           let expect = headers.lastHeaderValue(named: "Expect"), httpHeaderNamesEqual(expect, "100-continue") {
            guard sendAll(reader.fd, Data("HTTP/1.1 100 Continue\r\n\r\n".utf8)) else { return .disconnected }
        }
        while reader.buffer.count - bodyStart < contentLength {
            guard reader.fill() else { return .disconnected }
        }
        let body = Data(reader.buffer[bodyStart..<(bodyStart + contentLength)])
        // RFC 9112 9.3: HTTP/1.1 connections persist unless either side sends "close".
        let keepAlive = requestLine[2] == "HTTP/1.1" && !headers.contains {
            httpHeaderNamesEqual($0.name, "Connection") && $0.value.lowercased().contains("close")
        }
        return .request(HTTPServerRequest(method: method, path: path, headers: headers, body: body),
                        length: bodyStart + contentLength, keepAlive: keepAlive)
    }

    /// Index of the "\r\n\r\n" that ends the request head, searching from `start`.
    private static func findHeadTerminator(in buffer: [UInt8], from start: Int) -> Int? {
        guard buffer.count >= 4 else { return nil }
        var index = start
        while index + 3 < buffer.count {
            if buffer[index] == 0x0D, buffer[index + 1] == 0x0A, buffer[index + 2] == 0x0D, buffer[index + 3] == 0x0A {
                return index
            }
            index += 1
        }
        return nil
    }

    private static func isTokenByte(_ byte: UInt8) -> Bool {
        byte < 0x80 && isHTTPToken(String(UnicodeScalar(byte)))
    }

    // MARK: Response writing

    private static func serialize(_ response: HTTPServerResponse, omitBody: Bool, keepAlive: Bool) -> Data {
        var response = response
        if !(200...599).contains(response.status) {
            // 1xx can't be a final answer and anything else isn't HTTP: a handler bug.
            response = HTTPServerResponse(status: 500, body: Data("handler returned invalid status \(response.status)".utf8))
        }
        // 204 and 304 must not carry a body (and 204 no Content-Length).
        let bodyless = response.status == 204 || response.status == 304
        var head = "HTTP/1.1 \(response.status) \(reasonPhrase(response.status))\r\n"
        for header in response.headers {
            let owned = ["Content-Length", "Connection", "Transfer-Encoding"].contains { httpHeaderNamesEqual($0, header.name) }
            // Dropping malformed fields beats emitting a response the client can't parse.
            let malformed = !isHTTPToken(header.name) || header.value.utf8.contains { $0 == 0x0D || $0 == 0x0A || $0 == 0 }
            if owned || malformed { continue }
            head += "\(header.name): \(header.value)\r\n"
        }
        if !bodyless { head += "Content-Length: \(response.body.count)\r\n" }
        // Every response is framed by Content-Length (or is bodyless), so the connection can
        // carry the next request.
        head += keepAlive ? "\r\n" : "Connection: close\r\n\r\n"

        var bytes = Data(head.utf8)
        if !bodyless && !omitBody { bytes.append(response.body) }
        return bytes
    }

    private static func reasonPhrase(_ status: Int) -> String {
        switch status {
        case 200: "OK"
        case 201: "Created"
        case 202: "Accepted"
        case 204: "No Content"
        case 301: "Moved Permanently"
        case 302: "Found"
        case 304: "Not Modified"
        case 307: "Temporary Redirect"
        case 400: "Bad Request"
        case 401: "Unauthorized"
        case 403: "Forbidden"
        case 404: "Not Found"
        case 409: "Conflict"
        case 413: "Content Too Large"
        case 429: "Too Many Requests"
        case 431: "Request Header Fields Too Large"
        case 500: "Internal Server Error"
        case 501: "Not Implemented"
        case 502: "Bad Gateway"
        case 503: "Service Unavailable"
        case 504: "Gateway Timeout"
        default: "Status \(status)"
        }
    }

    // MARK: Socket helpers

    /// Writes everything or reports failure. MSG_NOSIGNAL turns a write to a socket the
    /// peer already closed into EPIPE instead of a process-killing SIGPIPE.
    private static func sendAll(_ fd: Int32, _ data: Data) -> Bool {
        data.withUnsafeBytes { bytes -> Bool in
            guard let base = bytes.baseAddress else { return true }
            var offset = 0
            while offset < bytes.count {
                let sent = send(fd, base + offset, bytes.count - offset, Int32(MSG_NOSIGNAL))
                if sent < 0 {
                    if errno == EINTR { continue }
                    return false
                }
                offset += sent
            }
            return true
        }
    }

    /// Half-closes, then drains what the client still sends before closing. Closing a
    /// socket with unread input makes Linux send RST, which can destroy the response we
    /// just wrote before the client reads it (e.g. after rejecting a body mid-upload).
    private static func lingeringClose(_ fd: Int32) {
        shutdown(fd, Int32(SHUT_WR))
        setSocketTimeout(fd, seconds: 1)
        var drained = 0
        withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 16 << 10) { scratch in
            while drained < 2 * maxBodyBytes {
                let received = recv(fd, scratch.baseAddress, scratch.count, 0)
                if received < 0 && errno == EINTR { continue }
                if received <= 0 { return }  // EOF, timeout or error: done either way
                drained += received
            }
        }
    }

    private static func setSocketTimeout(_ fd: Int32, seconds: Int) {
        var timeout = timeval(tv_sec: seconds, tv_usec: 0)
        let size = socklen_t(MemoryLayout<timeval>.size)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, size)
        setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &timeout, size)
    }
}

/// Buffered reads from a blocking socket.
private struct SocketReader {
    let fd: Int32
    var buffer: [UInt8] = []

    /// Appends whatever the socket has next. False on EOF, error or timeout, all of which
    /// mean the request can't be completed.
    mutating func fill() -> Bool {
        withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 64 << 10) { scratch -> Bool in
            while true {
                let received = recv(fd, scratch.baseAddress, scratch.count, 0)
                if received < 0 && errno == EINTR { continue }
                guard received > 0 else { return false }
                buffer.append(contentsOf: scratch[..<received])
                return true
            }
        }
    }
}
