import Dispatch
import Foundation
import SettleApp
import Synchronization
import XCTest
import SettleBase

/// Exercises `HTTPClient` against `LoopbackHTTPServer` over real loopback sockets.
final class HTTPClientTests: XCTestCase {
    private let client = HTTPClient(configuration: HTTPClientConfiguration(connectTimeout: 5, totalTimeout: 10))

    func testGETRoundTrip() throws {
        let seen = LockedBox<HTTPServerRequest?>(nil)
        let server = try LoopbackHTTPServer { request in
            seen.set(request)
            return HTTPServerResponse(status: 200, headers: [HTTPHeader("X-Answer", "42")], body: Data("hello".utf8))
        }
        defer { server.stop() }

        let response = try client.send(HTTPRequest(
            method: "GET", url: server.baseURL + "/v1/things?limit=5",
            headers: [HTTPHeader("X-Client", "settle-tests")]))

        XCTAssertEqual(response.status, 200)
        XCTAssertEqual(response.header("x-answer"), "42", "lookup is case-insensitive")
        XCTAssertNil(response.header("Connection"), "HTTP/1.1 keeps the connection")
        XCTAssertEqual(response.body, Data("hello".utf8))
        let request = try XCTUnwrap(seen.get())
        XCTAssertEqual(request.method, "GET")
        XCTAssertEqual(request.path, "/v1/things?limit=5")
        XCTAssertEqual(request.header("x-client"), "settle-tests")
        XCTAssertTrue(request.body.isEmpty)
    }

    func testPOSTRoundTripDeliversExactBodyBytes() throws {
        let seen = LockedBox<HTTPServerRequest?>(nil)
        let server = try LoopbackHTTPServer { request in
            seen.set(request)
            return .json(201, Data(#"{"ok":true}"#.utf8))
        }
        defer { server.stop() }
        // Includes a NUL and non-UTF-8 bytes: the body must not be treated as a C string.
        let body = Data([0x7B, 0x00, 0xFF, 0x7D]) + Data(#"{"id":1}"#.utf8)

        let response = try client.send(HTTPRequest(
            method: "POST", url: server.baseURL + "/v1/submit",
            headers: [HTTPHeader("Content-Type", "application/octet-stream")], body: body))

        XCTAssertEqual(response.status, 201)
        XCTAssertEqual(response.header("Content-Type"), "application/json")
        XCTAssertEqual(response.body, Data(#"{"ok":true}"#.utf8))
        let request = try XCTUnwrap(seen.get())
        XCTAssertEqual(request.method, "POST")
        XCTAssertEqual(request.path, "/v1/submit")
        XCTAssertEqual(request.header("Content-Type"), "application/octet-stream")
        XCTAssertEqual(request.body, body)
    }

    func testLargePOSTUsesExpectContinue() throws {
        let seen = LockedBox<HTTPServerRequest?>(nil)
        let server = try LoopbackHTTPServer { request in
            seen.set(request)
            return HTTPServerResponse(status: 200, body: Data("\(request.body.count)".utf8))
        }
        defer { server.stop() }
        // Above libcurl's 1 MiB threshold for sending `Expect: 100-continue`.
        let body = Data((0..<(2 << 20)).map { UInt8(truncatingIfNeeded: $0 &* 31) })

        let response = try client.send(HTTPRequest(method: "POST", url: server.baseURL + "/upload", body: body))

        XCTAssertEqual(response.status, 200)
        XCTAssertEqual(String(decoding: response.body, as: UTF8.self), "\(body.count)")
        let request = try XCTUnwrap(seen.get())
        XCTAssertEqual(request.header("Expect")?.lowercased(), "100-continue")
        XCTAssertEqual(request.body, body)
    }

    func testServerRejectsOversizedRequestBody() throws {
        let server = try LoopbackHTTPServer { _ in HTTPServerResponse(status: 200) }
        defer { server.stop() }

        let response = try client.send(HTTPRequest(
            method: "POST", url: server.baseURL + "/upload", body: Data(count: (16 << 20) + 1)))

        XCTAssertEqual(response.status, 413)
    }

    func testNon200StatusIsAResponseNotAnError() throws {
        let server = try LoopbackHTTPServer { _ in
            HTTPServerResponse(status: 503, headers: [HTTPHeader("Retry-After", "7")], body: Data("busy".utf8))
        }
        defer { server.stop() }

        let response = try client.send(HTTPRequest(method: "GET", url: server.baseURL + "/"))

        XCTAssertEqual(response.status, 503)
        XCTAssertEqual(response.header("Retry-After"), "7")
        XCTAssertEqual(response.body, Data("busy".utf8))
    }

    func testRedirectsAreNotFollowed() throws {
        let server = try LoopbackHTTPServer { request in
            request.path == "/elsewhere"
                ? HTTPServerResponse(status: 200)
                : HTTPServerResponse(status: 302, headers: [HTTPHeader("Location", "/elsewhere")])
        }
        defer { server.stop() }

        let response = try client.send(HTTPRequest(method: "GET", url: server.baseURL + "/start"))

        XCTAssertEqual(response.status, 302)
        XCTAssertEqual(response.header("Location"), "/elsewhere")
    }

    func testResponseLargerThanLimitIsRejected() throws {
        let server = try LoopbackHTTPServer { _ in HTTPServerResponse(status: 200, body: Data(count: 5000)) }
        defer { server.stop() }
        let small = HTTPClient(configuration: HTTPClientConfiguration(totalTimeout: 10, maxResponseBytes: 1000))

        let error = try XCTUnwrap(sendExpectingError(small, HTTPRequest(method: "GET", url: server.baseURL + "/big")))

        XCTAssertEqual(error.kind, .responseTooLarge)
        XCTAssertTrue(error.message.contains("1000"), error.message)
    }

    func testResponseExactlyAtLimitIsAccepted() throws {
        let server = try LoopbackHTTPServer { _ in HTTPServerResponse(status: 200, body: Data(count: 1000)) }
        defer { server.stop() }
        let small = HTTPClient(configuration: HTTPClientConfiguration(totalTimeout: 10, maxResponseBytes: 1000))

        let response = try small.send(HTTPRequest(method: "GET", url: server.baseURL + "/exact"))

        XCTAssertEqual(response.body.count, 1000)
    }

    func testSlowHandlerTimesOut() throws {
        let server = try LoopbackHTTPServer { _ in
            Thread.sleep(forTimeInterval: 2)  // deliberately slower than the client's timeout
            return HTTPServerResponse(status: 200)
        }
        let impatient = HTTPClient(configuration: HTTPClientConfiguration(connectTimeout: 5, totalTimeout: 0.3))
        let started = Date()

        let error = try XCTUnwrap(sendExpectingError(impatient, HTTPRequest(method: "GET", url: server.baseURL + "/slow")))

        XCTAssertEqual(error.kind, .timeout)
        XCTAssertLessThan(Date().timeIntervalSince(started), 1.5)
        // stop() must not wait for the still-sleeping handler.
        let stopStarted = Date()
        server.stop()
        XCTAssertLessThan(Date().timeIntervalSince(stopStarted), 1.0)
    }

    func testClosedPortIsAConnectError() throws {
        let server = try LoopbackHTTPServer { _ in HTTPServerResponse(status: 200) }
        let url = server.baseURL + "/"
        server.stop()  // the listener is closed once stop() returns, so the port refuses

        let error = try XCTUnwrap(sendExpectingError(client, HTTPRequest(method: "GET", url: url)))

        XCTAssertEqual(error.kind, .connect)
    }

    func testTLSFailureIsATLSError() throws {
        // A plain-HTTP server answers the TLS ClientHello with text, failing the handshake.
        let server = try LoopbackHTTPServer { _ in HTTPServerResponse(status: 200) }
        defer { server.stop() }

        let error = try XCTUnwrap(sendExpectingError(
            client, HTTPRequest(method: "GET", url: "https://127.0.0.1:\(server.port)/")))

        XCTAssertEqual(error.kind, .tls)
    }

    func testOnlyHTTPAndHTTPSAreAllowed() throws {
        for url in ["file:///etc/passwd", "ftp://127.0.0.1:1/x"] {
            let error = try XCTUnwrap(sendExpectingError(client, HTTPRequest(method: "GET", url: url)))
            XCTAssertEqual(error.kind, .transport, url)
        }
    }

    func testResponseHeaderLines_keepTheirValueWithoutSpacesOrTabsAround_andFoldedLinesJoin_andAnInterimResponseIsDropped() {
        let state = CurlTransferState(maxResponseBytes: 1024)
        for line in ["HTTP/1.1 100 Continue\r\n", "X-Interim: gone\r\n", "\r\n", "HTTP/1.1 200 OK\r\n",
                     "Retry-After: \t 120 \t\r\n", "X-Empty:   \r\n", "X-Inner:  a  b \r\n", "X-Folded: one\r\n",
                     " \t two  \r\n", "X-Unicode: \u{A0}nbsp\u{A0}\r\n", "\r\n"] {
            Array(line.utf8).withUnsafeBytes { state.receiveHeaderLine($0) }
        }
        XCTAssertEqual(state.headers.map { "\($0.name)=[\($0.value)]" },
                       ["Retry-After=[120]", "X-Empty=[]", "X-Inner=[a  b]", "X-Folded=[one two]", "X-Unicode=[\u{A0}nbsp\u{A0}]"])
    }

    /// Read as bytes: a line without a colon, a bare line ending, a value of invalid UTF-8
    /// (replaced, never dropped silently into another header) and a colon in the value.
    func testResponseHeaderLines_oddBytes() {
        let state = CurlTransferState(maxResponseBytes: 1024)
        let lines: [[UInt8]] = [Array("HTTP/2 200\r\n".utf8), Array("no colon here\r\n".utf8), Array("\n".utf8),
                                Array("X-Bytes: a".utf8) + [0xFF, 0xFE] + Array("b\r\n".utf8), Array("Location: http://x:1/\r\n".utf8),
                                Array("X-Tab:\tv\t".utf8), Array(":empty-name\r\n".utf8)]
        for line in lines { line.withUnsafeBytes { state.receiveHeaderLine($0) } }
        XCTAssertEqual(state.headers.map { "\($0.name)=[\($0.value)]" },
                       ["X-Bytes=[a\u{FFFD}\u{FFFD}b]", "Location=[http://x:1/]", "X-Tab=[v]", "=[empty-name]"])
    }

    func testHeaderValueWithLineBreakIsRefused() throws {
        let error = try XCTUnwrap(sendExpectingError(client, HTTPRequest(
            method: "GET", url: "http://127.0.0.1:1/", headers: [HTTPHeader("X-Evil", "a\r\nX-Injected: 1")])))

        XCTAssertEqual(error.kind, .transport)
        XCTAssertFalse(error.description.contains("Injected"))
    }

    func testConcurrentRequestsFromManyThreads() throws {
        let server = try LoopbackHTTPServer { request in
            HTTPServerResponse(status: 200, body: Data(request.path.utf8) + request.body)
        }
        defer { server.stop() }
        let requestCount = 20
        let threadCount = 8
        let nextIndex = LockedBox(0)
        let results = LockedBox<[Int: Result<HTTPResponse, HTTPError>]>([:])
        let done = DispatchGroup()

        for _ in 0..<threadCount {
            done.enter()
            let client = self.client  // one shared client: it must be safe across threads
            Thread {
                defer { done.leave() }
                while true {
                    let index = nextIndex.update { value -> Int in
                        defer { value += 1 }
                        return value
                    }
                    guard index < requestCount else { return }
                    let result = Result { () throws(HTTPError) -> HTTPResponse in
                        try client.send(HTTPRequest(
                            method: "POST", url: server.baseURL + "/item/\(index)", body: Data("#\(index)".utf8)))
                    }
                    results.update { $0[index] = result }
                }
            }.start()
        }

        XCTAssertEqual(done.wait(timeout: .now() + 60), .success)
        let all = results.get()
        XCTAssertEqual(all.count, requestCount)
        for index in 0..<requestCount {
            switch all[index] {
            case let .success(response)?:
                XCTAssertEqual(response.status, 200)
                XCTAssertEqual(String(decoding: response.body, as: UTF8.self), "/item/\(index)#\(index)")
            case let .failure(error)?:
                XCTFail("request \(index) failed: \(error)")
            case nil:
                XCTFail("request \(index) never ran")
            }
        }
    }

    func testSequentialRequests_reuseOneConnection() throws {
        let server = try LoopbackHTTPServer { _ in HTTPServerResponse(status: 200, body: Data("ok".utf8)) }
        defer { server.stop() }
        for _ in 0..<10 {
            XCTAssertEqual(try client.send(HTTPRequest(method: "POST", url: server.baseURL + "/", body: Data("x".utf8))).status, 200)
        }
        XCTAssertEqual(server.acceptedConnections, 1)
    }

    func testClientAskingToClose_getsAConnectionPerRequest() throws {
        let server = try LoopbackHTTPServer { _ in HTTPServerResponse(status: 200) }
        defer { server.stop() }
        for _ in 0..<3 {
            let response = try client.send(HTTPRequest(method: "GET", url: server.baseURL + "/", headers: [HTTPHeader("Connection", "close")]))
            XCTAssertEqual(response.header("Connection"), "close")
        }
        XCTAssertEqual(server.acceptedConnections, 3)
    }

    func testConcurrencyAboveEight_opensOneConnectionPerConcurrentCaller() throws {
        // Each request waits long enough for all 32 callers to be in flight at once, and
        // each caller pauses between requests, which is how a pass with
        // schedule.concurrency 32 uses the client.
        let server = try LoopbackHTTPServer { _ in
            usleep(20_000)
            return HTTPServerResponse(status: 200, body: Data("ok".utf8))
        }
        defer { server.stop() }
        let client = HTTPClient(configuration: HTTPClientConfiguration(connectTimeout: 5, totalTimeout: 10))
        let callers = 32, rounds = 8
        let failures = LockedBox(0)
        let done = DispatchGroup()
        for _ in 0..<callers {
            done.enter()
            Thread {
                defer { done.leave() }
                for _ in 0..<rounds {
                    let status = try? client.send(HTTPRequest(method: "GET", url: server.baseURL + "/")).status
                    if status != 200 { failures.update { $0 += 1 } }
                    // A worker does other work between requests (the ledger, the hook), so
                    // many handles are idle at once: the moment a small pool drops them.
                    usleep(20_000)
                }
            }.start()
        }
        XCTAssertEqual(done.wait(timeout: .now() + 60), .success)
        XCTAssertEqual(failures.get(), 0)
        // 256 requests; a pool keeping 8 idle handles opened ~200 connections here.
        XCTAssertLessThanOrEqual(server.acceptedConnections, callers)
    }

    func testErrorDescriptionsNeverContainRequestSecrets() throws {
        let bodySecret = "BODY-SECRET-8f2c1a"
        let headerSecret = "HEADER-SECRET-77d3e0"
        let querySecret = "QUERY-SECRET-b41c9e"
        func request(_ base: String) -> HTTPRequest {
            HTTPRequest(
                method: "POST", url: base + "/v1/pay?token=\(querySecret)",
                headers: [HTTPHeader("Authorization", "Bearer \(headerSecret)")],
                body: Data(#"{"card":"\#(bodySecret)"}"#.utf8))
        }

        // Connect failure.
        let closed = try LoopbackHTTPServer { _ in HTTPServerResponse(status: 200) }
        let closedURL = closed.baseURL
        closed.stop()
        // Timeout.
        let slow = try LoopbackHTTPServer { _ in
            Thread.sleep(forTimeInterval: 2)
            return HTTPServerResponse(status: 200)
        }
        defer { slow.stop() }
        // Oversized response.
        let big = try LoopbackHTTPServer { _ in HTTPServerResponse(status: 200, body: Data(count: 4096)) }
        defer { big.stop() }
        let strict = HTTPClient(configuration: HTTPClientConfiguration(connectTimeout: 5, totalTimeout: 0.3, maxResponseBytes: 100))

        let errors = [
            sendExpectingError(strict, request(closedURL)),
            sendExpectingError(strict, request(slow.baseURL)),
            sendExpectingError(strict, request(big.baseURL)),
            sendExpectingError(strict, request("https://127.0.0.1:\(big.port)")),
            sendExpectingError(strict, request("http://user:\(querySecret)@127.0.0.1:1")),
        ].compactMap { $0 }

        XCTAssertEqual(errors.map(\.kind), [.connect, .timeout, .responseTooLarge, .tls, .connect])
        for error in errors {
            for secret in [bodySecret, headerSecret, querySecret] {
                XCTAssertFalse(error.description.contains(secret), "\(error.kind) leaks a secret: \(error)")
                XCTAssertFalse(error.message.contains(secret), "\(error.kind) leaks a secret: \(error)")
            }
        }
    }

    // MARK: Helpers

    private func sendExpectingError(
        _ client: HTTPClient, _ request: HTTPRequest, file: StaticString = #filePath, line: UInt = #line
    ) -> HTTPError? {
        do {
            let response = try client.send(request)
            XCTFail("expected an error, got status \(response.status)", file: file, line: line)
            return nil
        } catch {
            return error
        }
    }
}

/// A Mutex that closures can capture (a `Mutex` itself is non-copyable).
private final class LockedBox<Value: Sendable>: Sendable {
    private let mutex: Mutex<Value>

    init(_ value: Value) { mutex = Mutex(value) }

    func get() -> Value { mutex.withLock { $0 } }
    func set(_ value: Value) { mutex.withLock { $0 = value } }
    func update<R: Sendable>(_ body: (inout Value) -> R) -> R { mutex.withLock { body(&$0) } }
}
