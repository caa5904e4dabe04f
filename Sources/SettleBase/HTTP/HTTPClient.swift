import CCurl
import Foundation
import Synchronization

package struct HTTPClientConfiguration: Sendable {
    /// Seconds allowed for DNS + TCP + TLS setup (CURLOPT_CONNECTTIMEOUT_MS).
    package var connectTimeout: Double
    /// Seconds allowed for the whole exchange, including the connect phase (CURLOPT_TIMEOUT_MS).
    package var totalTimeout: Double
    /// Largest accepted response body; the transfer is aborted as soon as it is exceeded.
    package var maxResponseBytes: Int

    package init(connectTimeout: Double = 10, totalTimeout: Double = 30, maxResponseBytes: Int = 8 << 20) {
        self.connectTimeout = connectTimeout
        self.totalTimeout = totalTimeout
        self.maxResponseBytes = maxResponseBytes
    }
}

/// A blocking HTTP/HTTPS client on libcurl's easy interface.
///
/// Thread-safe: may be called concurrently from many threads (each call uses its own easy
/// handle from a pool that keeps one per concurrent caller).
/// Pooling easy handles matters because a handle keeps its live connections, DNS cache and
/// TLS sessions across `curl_easy_reset`, so repeated calls to the same host skip the
/// TCP and TLS handshakes.
///
/// Policy that is deliberately *not* configurable: redirects are never followed (the
/// caller sees the 3xx), only http/https URLs are accepted, TLS peer and host
/// verification stay on, and TLS 1.2 is the minimum version.
package final class HTTPClient: Sendable {
    package let configuration: HTTPClientConfiguration
    private let pool = CurlHandlePool()

    package init(configuration: HTTPClientConfiguration = HTTPClientConfiguration()) {
        self.configuration = configuration
    }

    /// Performs `request` and blocks until the final response has been read or the
    /// exchange failed. Any HTTP status is returned as a response.
    package func send(_ request: HTTPRequest) throws(HTTPError) -> HTTPResponse {
        try CurlRuntime.ensureInitialized()
        let easy = try pool.checkOut()
        // Returned to the pool on failure too: curl closes any connection a failed
        // transfer left in an unknown state, and the handle itself stays reusable.
        defer { pool.checkIn(easy) }
        return try CurlTransfer(easy: easy, request: request, configuration: configuration).run()
    }
}

// MARK: - libcurl plumbing

/// Process-wide libcurl initialisation.
package enum CurlRuntime {
    /// `curl_global_init` must run once before any other curl call and is not thread-safe
    /// in older libcurl versions. A static `let` initializer runs exactly once, guarded by
    /// swift_once, which is precisely that guarantee. We never call `curl_global_cleanup`:
    /// the daemon uses curl until exit, and cleanup is unsafe while any handle exists.
    private static let globalInitCode: UInt32 = curl_global_init(Int(CURL_GLOBAL_DEFAULT)).rawValue

    package static func ensureInitialized() throws(HTTPError) {
        let code = globalInitCode
        guard code == CURLE_OK.rawValue else {
            throw HTTPError(kind: .transport, message: "curl_global_init failed (curl error \(code))")
        }
    }
}

/// Owns one `CURL *` and its error buffer, freeing both in deinit.
///
/// `@unchecked Sendable` because the pool hands a handle from thread to thread; that is
/// safe since a handle is only ever used by the one caller that checked it out (libcurl
/// requires exactly that: an easy handle may move between threads but never be shared).
package final class CurlEasyHandle: @unchecked Sendable {
    package let raw: UnsafeMutableRawPointer
    /// Registered with CURLOPT_ERRORBUFFER on each transfer; curl writes detail here that
    /// is more specific than `curl_easy_strerror` (e.g. which host/port refused).
    package let errorBuffer: UnsafeMutablePointer<CChar>
    private static let errorBufferSize = Int(CURL_ERROR_SIZE)

    package init?() {
        guard let raw = curl_easy_init() else { return nil }
        self.raw = raw
        errorBuffer = .allocate(capacity: Self.errorBufferSize)
        errorBuffer.initialize(repeating: 0, count: Self.errorBufferSize)
    }

    /// Text curl left in the error buffer, if any.
    package var errorText: String {
        // Re-terminate defensively: curl always NUL-terminates, but reading past the
        // buffer on a curl bug would be memory-unsafe.
        errorBuffer[Self.errorBufferSize - 1] = 0
        return String(cString: errorBuffer)
    }

    package func clearError() {
        errorBuffer[0] = 0
    }

    deinit {
        curl_easy_cleanup(raw)
        errorBuffer.deallocate()
    }
}

/// A free-list of easy handles that keeps one idle handle per caller that was ever in
/// flight at once, so a pass with C workers reuses C handles (and their connections)
/// instead of opening a connection for most requests once C exceeds a fixed idle count.
/// Bounded by `maxIdleHandles`, so a burst can't leave an unbounded number of idle handles
/// (each may hold open connections).
package final class CurlHandlePool: Sendable {
    /// The most idle handles kept: the largest `schedule.concurrency` plus the few other
    /// callers (history lookups, the webhook has its own client).
    package static let defaultMaxIdleHandles = 72

    private struct State {
        var idle: [CurlEasyHandle] = []
        var checkedOut = 0
        /// Most handles checked out at the same time so far: how many idle ones are worth
        /// keeping.
        var peakCheckedOut = 0
    }

    private let state = Mutex(State())
    package let maxIdleHandles: Int

    package init(maxIdleHandles: Int = CurlHandlePool.defaultMaxIdleHandles) {
        self.maxIdleHandles = maxIdleHandles
    }

    package func checkOut() throws(HTTPError) -> CurlEasyHandle {
        let reused: CurlEasyHandle? = state.withLock { state in
            state.checkedOut += 1
            state.peakCheckedOut = max(state.peakCheckedOut, state.checkedOut)
            return state.idle.popLast()
        }
        if let reused { return reused }
        guard let fresh = CurlEasyHandle() else {
            state.withLock { $0.checkedOut -= 1 }
            throw HTTPError(kind: .transport, message: "curl_easy_init failed")
        }
        return fresh
    }

    package func checkIn(_ handle: CurlEasyHandle) {
        // Forget every per-request option now, so an idle handle holds no pointers into
        // the finished call's state (header list, callback box). Connections, DNS and TLS
        // session caches survive the reset, which is the point of pooling.
        curl_easy_reset(handle.raw)
        let surplus: CurlEasyHandle? = state.withLock { state in
            state.checkedOut -= 1
            guard state.idle.count < min(state.peakCheckedOut, maxIdleHandles) else { return handle }
            state.idle.append(handle)
            return nil
        }
        // Dropped outside the lock: curl_easy_cleanup may close TLS connections, which
        // involves I/O that must not stall other threads waiting for a handle.
        _ = surplus
    }

    /// Handles waiting for a caller.
    package var idleCount: Int { state.withLock { $0.idle.count } }
}

/// Owns the `curl_slist` for the request headers and frees it in deinit.
package final class CurlHeaderList {
    private(set) var raw: UnsafeMutablePointer<curl_slist>?

    /// Validates and converts `headers`. Errors name the header's position, never its
    /// name or value, because those can carry credentials.
    package init(_ headers: [HTTPHeader]) throws(HTTPError) {
        for (index, header) in headers.enumerated() {
            guard isHTTPToken(header.name) else {
                throw HTTPError(kind: .transport, message: "request header #\(index + 1) has an invalid name")
            }
            // CR/LF would let a value inject extra header lines (or a second request);
            // NUL would silently truncate the C string.
            guard !header.value.utf8.contains(where: { $0 == 0x0D || $0 == 0x0A || $0 == 0x00 }) else {
                throw HTTPError(kind: .transport, message: "request header #\(index + 1) has a value containing CR, LF or NUL")
            }
            // "Name:" with nothing after it tells curl to *remove* that header; curl's
            // documented way to send a genuinely empty value is "Name;".
            let line = header.value.isEmpty ? "\(header.name);" : "\(header.name): \(header.value)"
            guard let appended = curl_slist_append(raw, line) else {
                // On failure curl leaves the existing list intact; deinit frees it.
                throw HTTPError(kind: .transport, message: "out of memory building request headers")
            }
            raw = appended
        }
    }

    deinit {
        curl_slist_free_all(raw)
    }
}

/// Mutable state shared with curl's C callbacks for one transfer. A class so it can be
/// passed through curl's `void *` user-data as an unretained `Unmanaged` reference;
/// the transfer keeps it alive for the duration of `curl_easy_perform`.
package final class CurlTransferState {
    package let maxResponseBytes: Int
    package var body = Data()
    package var headers: [HTTPHeader] = []
    /// Set when the write callback aborted because of `maxResponseBytes`, so the resulting
    /// CURLE_WRITE_ERROR can be reported as `.responseTooLarge` rather than `.transport`.
    package var exceededLimit = false
    private var checkedDeclaredLength = false

    package init(maxResponseBytes: Int) {
        self.maxResponseBytes = maxResponseBytes
    }

    /// Called once per header line, including status lines of interim (1xx) and
    /// proxy-CONNECT responses.
    package func receiveHeaderLine(_ bytes: UnsafeRawBufferPointer) {
        // Read as bytes (every byte that matters here is ASCII), made into text only for a
        // header's name and value: a line as a String and then Characters cost 15 K
        // instructions a response.
        var end = bytes.count
        while end > 0, bytes[end - 1] == 0x0D || bytes[end - 1] == 0x0A { end -= 1 }
        let line = UnsafeRawBufferPointer(rebasing: bytes[..<end])

        if line.starts(with: "HTTP/".utf8) {
            // A new status line starts a new response: drop whatever an interim response
            // (100 Continue, 103 Early Hints, CONNECT) contributed so that only the final
            // response's headers remain.
            headers.removeAll(keepingCapacity: true)
            return
        }
        guard let first = line.first else { return }  // end of a header block
        if first == UInt8(ascii: " ") || first == UInt8(ascii: "\t") {
            // Obsolete line folding: the line continues the previous header's value.
            if !headers.isEmpty {
                headers[headers.count - 1].value += " " + HTTPHeader.trimmingOptionalWhitespace(line[...])
            }
            return
        }
        guard let colon = line.firstIndex(of: UInt8(ascii: ":")) else { return }
        let name = String(decoding: UnsafeRawBufferPointer(rebasing: line[..<colon]), as: UTF8.self)
        let value = HTTPHeader.trimmingOptionalWhitespace(line[(colon + 1)...])
        headers.append(HTTPHeader(name, value))
    }

    /// Appends body bytes. Returns false (abort) once the body would exceed the limit.
    package func receiveBody(_ bytes: UnsafeRawBufferPointer) -> Bool {
        if !checkedDeclaredLength {
            // The write callback only runs once the final response's headers are complete,
            // so its Content-Length is known: refuse an over-limit body before buffering
            // any of it, and otherwise size the buffer once instead of growing it.
            checkedDeclaredLength = true
            if let declared = headers.lastHeaderValue(named: "Content-Length").flatMap({ Int($0) }), declared >= 0 {
                if declared > maxResponseBytes {
                    exceededLimit = true
                    return false
                }
                body.reserveCapacity(declared)
            }
        }
        // Enforced on the actual bytes too: Content-Length may be absent (chunked) or wrong.
        guard bytes.count <= maxResponseBytes - body.count else {
            exceededLimit = true
            return false
        }
        body.append(contentsOf: bytes)
        return true
    }
}

// C-callable trampolines. They are global functions (no captured context) so Swift can
// convert them to C function pointers; the per-transfer state arrives via `userdata`.

extension HTTPHeader {
    /// A field value without the optional whitespace around it (RFC 9110 section 5.6.3: spaces and
    /// horizontal tabs), without Foundation's character sets (which took 45 % of the instructions of
    /// a request to Apple, counted by callgrind).
    package static func trimmingOptionalWhitespace(_ bytes: Slice<UnsafeRawBufferPointer>) -> String {
        let isOWS: (UInt8) -> Bool = { $0 == UInt8(ascii: " ") || $0 == UInt8(ascii: "\t") }
        guard let first = bytes.firstIndex(where: { !isOWS($0) }), let last = bytes.lastIndex(where: { !isOWS($0) }) else { return "" }
        return String(decoding: UnsafeRawBufferPointer(rebasing: bytes[first...last]), as: UTF8.self)
    }
}

private func curlHeaderCallback(
    _ buffer: UnsafeMutablePointer<CChar>?, _ size: Int, _ count: Int, _ userdata: UnsafeMutableRawPointer?
) -> Int {
    let length = size * count
    guard let buffer, let userdata else { return length }
    let state = Unmanaged<CurlTransferState>.fromOpaque(userdata).takeUnretainedValue()
    state.receiveHeaderLine(UnsafeRawBufferPointer(start: buffer, count: length))
    return length
}

private func curlWriteCallback(
    _ buffer: UnsafeMutablePointer<CChar>?, _ size: Int, _ count: Int, _ userdata: UnsafeMutableRawPointer?
) -> Int {
    let length = size * count
    guard let buffer, let userdata else { return length }
    let state = Unmanaged<CurlTransferState>.fromOpaque(userdata).takeUnretainedValue()
    // Returning anything other than `length` makes curl abort with CURLE_WRITE_ERROR.
    // (`length` is never 0 here, so 0 is an unambiguous "stop".)
    return state.receiveBody(UnsafeRawBufferPointer(start: buffer, count: length)) ? length : 0
}

/// One request on one checked-out easy handle.
package struct CurlTransfer {
    package let easy: CurlEasyHandle
    package let request: HTTPRequest
    package let configuration: HTTPClientConfiguration

    /// Pointed to by CURLOPT_COPYPOSTFIELDS for an empty body: curl treats a NULL
    /// postfields pointer as "read the body from the read callback" (stdin by default).
    private static let emptyBody: StaticString = ""

    package func run() throws(HTTPError) -> HTTPResponse {
        let handle = easy.raw
        let state = CurlTransferState(maxResponseBytes: max(0, configuration.maxResponseBytes))
        let headerList = try CurlHeaderList(request.headers)
        guard isHTTPToken(request.method) else {
            throw HTTPError(kind: .transport, message: "invalid HTTP method")
        }

        easy.clearError()
        try setPointer(CURLOPT_ERRORBUFFER, UnsafeMutableRawPointer(easy.errorBuffer))
        // Curl otherwise uses SIGALRM to time out DNS lookups, which is unsafe with
        // several threads; NOSIGNAL also stops it touching SIGPIPE handling.
        try setLong(CURLOPT_NOSIGNAL, 1)
        try setString(CURLOPT_URL, request.url)
        // Refuse file://, ftp://, gopher:// ... even if a URL comes from configuration.
        try setString(CURLOPT_PROTOCOLS_STR, "http,https")
        try setString(CURLOPT_REDIR_PROTOCOLS_STR, "http,https")
        try setLong(CURLOPT_FOLLOWLOCATION, 0)
        try setLong(CURLOPT_CONNECTTIMEOUT_MS, Self.milliseconds(configuration.connectTimeout))
        try setLong(CURLOPT_TIMEOUT_MS, Self.milliseconds(configuration.totalTimeout))
        // Peer and host verification are curl's defaults and are never touched here; only
        // the protocol floor is raised.
        try setLong(CURLOPT_SSLVERSION, CURL_SSLVERSION_TLSv1_2)
        if let list = headerList.raw {
            try setPointer(CURLOPT_HTTPHEADER, UnsafeMutableRawPointer(list))
        }
        try configureMethodAndBody()

        let userdata = Unmanaged.passUnretained(state).toOpaque()
        try setCallback(CURLOPT_HEADERFUNCTION, curlHeaderCallback)
        try setPointer(CURLOPT_HEADERDATA, userdata)
        try setCallback(CURLOPT_WRITEFUNCTION, curlWriteCallback)
        try setPointer(CURLOPT_WRITEDATA, userdata)

        // `state` is only referenced unretained from C during perform, and curl holds the
        // raw header list pointer: keep both alive explicitly until perform returns.
        let code = withExtendedLifetime((state, headerList)) { curl_easy_perform(handle) }

        if state.exceededLimit {
            throw HTTPError(kind: .responseTooLarge,
                            message: "response exceeded \(state.maxResponseBytes) bytes")
        }
        guard code == CURLE_OK else {
            throw error(for: code)
        }

        var status = 0
        let infoCode = settle_curl_getinfo_long(handle, CURLINFO_RESPONSE_CODE, &status)
        guard infoCode == CURLE_OK else { throw error(for: infoCode) }
        return HTTPResponse(status: status, headers: state.headers, body: state.body)
    }

    private func configureMethodAndBody() throws(HTTPError) {
        let method = request.method
        switch method {
        case "GET" where request.body.isEmpty:
            try setLong(CURLOPT_HTTPGET, 1)
        case "HEAD":
            // CUSTOMREQUEST "HEAD" would make curl wait for a body that never comes.
            try setLong(CURLOPT_NOBODY, 1)
        default:
            if method == "POST" || !request.body.isEmpty {
                // Size first, so COPYPOSTFIELDS copies exactly that many bytes (the body
                // may contain NULs) instead of using strlen.
                try setOffset(CURLOPT_POSTFIELDSIZE_LARGE, curl_off_t(request.body.count))
                let code: CURLcode = request.body.withUnsafeBytes { bytes in
                    let pointer = bytes.baseAddress.map { UnsafeMutableRawPointer(mutating: $0) }
                        ?? UnsafeMutableRawPointer(mutating: Self.emptyBody.utf8Start)
                    return settle_curl_setopt_pointer(easy.raw, CURLOPT_COPYPOSTFIELDS, pointer)
                }
                try check(code, CURLOPT_COPYPOSTFIELDS)
            }
            if method != "POST" {
                // PUT/PATCH/DELETE/...: curl's documented idiom is a POST-shaped request
                // with the method name replaced.
                try setString(CURLOPT_CUSTOMREQUEST, method)
            }
        }
    }

    // MARK: setopt helpers (curl_easy_setopt is variadic; these go through shim.h)

    private func setLong(_ option: CURLoption, _ value: Int) throws(HTTPError) {
        try check(settle_curl_setopt_long(easy.raw, option, value), option)
    }

    private func setString(_ option: CURLoption, _ value: String) throws(HTTPError) {
        // libcurl copies string options, so the temporary C string may die afterwards.
        let code = value.withCString { settle_curl_setopt_string(easy.raw, option, $0) }
        try check(code, option)
    }

    private func setPointer(_ option: CURLoption, _ value: UnsafeMutableRawPointer) throws(HTTPError) {
        try check(settle_curl_setopt_pointer(easy.raw, option, value), option)
    }

    private func setOffset(_ option: CURLoption, _ value: curl_off_t) throws(HTTPError) {
        try check(settle_curl_setopt_offset(easy.raw, option, value), option)
    }

    private func setCallback(_ option: CURLoption, _ callback: settle_curl_data_callback) throws(HTTPError) {
        try check(settle_curl_setopt_callback(easy.raw, option, callback), option)
    }

    private func check(_ code: CURLcode, _ option: CURLoption) throws(HTTPError) {
        guard code == CURLE_OK else {
            // Only the option number is reported: the value may be a URL or credential.
            let reason = String(cString: curl_easy_strerror(code))
            throw HTTPError(kind: .transport, message: "could not set curl option \(option.rawValue): \(reason) (curl error \(code.rawValue))")
        }
    }

    // MARK: error mapping

    private func error(for code: CURLcode) -> HTTPError {
        let kind: HTTPError.Kind
        switch code {
        case CURLE_COULDNT_CONNECT, CURLE_COULDNT_RESOLVE_HOST, CURLE_COULDNT_RESOLVE_PROXY:
            kind = .connect
        case CURLE_OPERATION_TIMEDOUT:
            kind = .timeout
        case CURLE_SSL_CONNECT_ERROR, CURLE_PEER_FAILED_VERIFICATION, CURLE_USE_SSL_FAILED,
             CURLE_SSL_ENGINE_NOTFOUND, CURLE_SSL_ENGINE_SETFAILED, CURLE_SSL_ENGINE_INITFAILED,
             CURLE_SSL_CERTPROBLEM, CURLE_SSL_CIPHER, CURLE_SSL_CACERT_BADFILE,
             CURLE_SSL_SHUTDOWN_FAILED, CURLE_SSL_CRL_BADFILE, CURLE_SSL_ISSUER_ERROR,
             CURLE_SSL_PINNEDPUBKEYNOTMATCH, CURLE_SSL_INVALIDCERTSTATUS, CURLE_SSL_CLIENTCERT:
            kind = .tls
        default:
            kind = .transport
        }
        // The error buffer is more specific ("Failed to connect to host port 443 after
        // 3 ms: Connection refused") than the generic strerror text, so prefer it.
        var detail = easy.errorText.trimmingCharacters(in: .whitespacesAndNewlines)
        if detail.isEmpty {
            detail = String(cString: curl_easy_strerror(code))
        }
        let message = HTTPErrorRedaction.scrub("\(detail) (curl error \(code.rawValue))", for: request)
        return HTTPError(kind: kind, message: message)
    }

    /// Seconds -> whole milliseconds for curl, clamped to at least 1 ms: curl reads 0 as
    /// "no timeout", and a daemon must never wait forever because of a zero, negative or
    /// NaN setting.
    package static func milliseconds(_ seconds: Double) -> Int {
        let ms = (seconds * 1000).rounded(.up)
        guard ms.isFinite, ms >= 1 else { return ms == .infinity ? Int(Int32.max) : 1 }
        return Int(min(ms, Double(Int32.max)))
    }
}

/// Defence in depth for `HTTPError.message`. libcurl's diagnostics name hosts, ports and
/// reasons, not payloads, but the error type promises to be loggable, so anything from the
/// request that might be secret is cut out should it ever appear.
package enum HTTPErrorRedaction {
    private static let placeholder = "<redacted>"
    private static let maxMessageLength = 512

    package static func scrub(_ message: String, for request: HTTPRequest) -> String {
        var secrets: [String] = []
        for header in request.headers {
            secrets.append(header.value)
            // "Bearer <token>" style values: the token alone could appear too.
            secrets.append(contentsOf: header.value.split(whereSeparator: { $0 == " " || $0 == "\t" }).map(String.init))
        }
        // Query string and fragment, and any user:password@ in the authority.
        if let start = request.url.firstIndex(where: { $0 == "?" || $0 == "#" }) {
            secrets.append(String(request.url[start...]))
            secrets.append(String(request.url[request.url.index(after: start)...]))
        }
        if let schemeEnd = request.url.range(of: "://") {
            let authority = request.url[schemeEnd.upperBound...].prefix(while: { $0 != "/" && $0 != "?" && $0 != "#" })
            if let at = authority.lastIndex(of: "@") {
                secrets.append(String(authority[..<at]))
            }
        }
        // Bodies are only compared whole, and only when small enough to be cheap.
        if (1...65_536).contains(request.body.count), let text = String(data: request.body, encoding: .utf8) {
            secrets.append(text)
        }

        var scrubbed = message
        // Longest first so a short secret can't break up a longer one before it's matched.
        for secret in Set(secrets).filter({ $0.count >= 4 }).sorted(by: { $0.count > $1.count })
        where scrubbed.contains(secret) {
            scrubbed = scrubbed.replacingOccurrences(of: secret, with: placeholder)
        }
        if scrubbed.count > maxMessageLength {
            scrubbed = String(scrubbed.prefix(maxMessageLength)) + "..."
        }
        return scrubbed
    }
}

/// RFC 9110 `token`: the characters allowed in methods and header field names.
package func isHTTPToken(_ string: String) -> Bool {
    guard !string.isEmpty else { return false }
    return string.utf8.allSatisfy { byte in
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
             UInt8(ascii: "0")...UInt8(ascii: "9"):
            return true
        default:
            return "!#$%&'*+-.^_`|~".utf8.contains(byte)
        }
    }
}
