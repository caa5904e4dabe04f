import Foundation
import SettleBase
import SettleTesting
import XCTest
#if canImport(Glibc)
import Glibc
#endif

/// `POST /simulator/faults`: a store switched down, throttling, hanging or slow while settle
/// runs against `settle simulator --init`'s setup, and what settle makes of it.
final class SimulatorFaultTests: EndToEndTestCase {
    private var port = 0
    private var simulator: SettleBinary.Running?
    private let client = HTTPClient(configuration: HTTPClientConfiguration(connectTimeout: 5, totalTimeout: 10))
    private var sim: String { world.folder + "/sim" }
    private var config: String { sim + "/settle.json" }

    override func setUpWithError() throws {
        try super.setUpWithError()
        port = try ShellLines.freePortPair()
        let made = try settleWithoutConfig(["simulator", "--init", "sim", "--listen", "127.0.0.1:\(port)"])
        XCTAssertEqual(made.status, 0, made.stderr)
        // settle's HTTP timeout small, so a hung store costs the test one second, never more.
        var json = try JSONValue.parse(Data(contentsOf: URL(fileURLWithPath: config)))
        json = .object((json.objectMembers ?? []).map { key, value in
            let short = JSONValue.object([("connect_timeout_seconds", .number(1)), ("timeout_seconds", .number(1))])
            return key == "http" ? (key, short) : (key, value)
        })
        try json.serialized(pretty: true).write(toFile: config, atomically: true, encoding: .utf8)
        let started = try SettleBinary.start(["simulator", "--listen", "127.0.0.1:\(port)", "--config", config,
                                              "--script", sim + "/plans.json"], outputFolder: world.folder)
        simulator = started
        XCTAssertTrue(eventually(within: 20) {
            ((try? String(contentsOfFile: started.stdoutPath, encoding: .utf8)) ?? "").contains("google_play.api_url")
        })
    }

    override func tearDownWithError() throws {
        if let simulator, simulator.isRunning {
            simulator.send(SIGTERM)
            XCTAssertEqual(simulator.wait().status, 0, "the simulator stops even with answers held")
        }
        try super.tearDownWithError()
    }

    func testAppStoreDown_leavesTheOrderPendingAndAppleUnavailable_andClearingLetsTheNextPassFinishIt() throws {
        try fault(["store": "app_store", "mode": "503"])
        try enqueueApple()
        let pass = try settle(["reconcile"], config: config)
        XCTAssertEqual(pass.status, 69, pass.stderr)
        XCTAssertTrue(pass.stderr.contains("Apple was unavailable for the whole pass"), pass.stderr)
        XCTAssertEqual(try orderField("o-1001", "state"), "pending")
        XCTAssertEqual(try orderField("o-1001", "attempts"), "0", "an outage uses no attempt")
        let health = try settle(["status"], config: config).stdout
        XCTAssertTrue(health.contains("apple:") && health.contains("answered HTTP 503"), health)

        try fault(["store": "app_store", "mode": "none"])
        XCTAssertEqual(try JSONValue.parse(try get("/simulator/faults").body)["app_store"]?["mode"], .string("none"))
        try settle(expecting: 0, ["reconcile", "--order", "o-1001"], config: config)
        XCTAssertEqual(try orderField("o-1001", "state"), "finished")
    }

    func testRateLimited_answers429WithRetryAfter_andSettleBacksOff() throws {
        try fault(["store": "app_store", "mode": "429", "seconds": "30"])
        try fault(["store": "google_play", "mode": "429", "seconds": "30"])
        let apple = try get("/production/inApps/v1/transactions/1000000000000001")
        XCTAssertEqual(apple.status, 429)
        // Apple's Retry-After is the time of the next allowed request, in UNIX milliseconds.
        let next = try XCTUnwrap(apple.header("Retry-After").flatMap(Int64.init))
        XCTAssertGreaterThan(next, Int64((Date().timeIntervalSince1970 + 20) * 1000))
        let google = try get("/token", port: port + 1, method: "POST")
        XCTAssertEqual(google.status, 429)
        XCTAssertEqual(google.header("Retry-After"), "30")

        try enqueueGoogle()
        XCTAssertEqual(try settle(["reconcile"], config: config).status, 69)
        XCTAssertEqual(try orderField("o-1002", "state"), "pending")
        let health = try settle(["status"], config: config).stdout
        XCTAssertTrue(health.contains("google_play: breaker OPEN"),
                      "Retry-After opens Google's breaker at once: \(health)")
    }

    func testHang_isCutBySettlesHTTPTimeout_andSlowAnswersStillSucceed() throws {
        try fault(["store": "app_store", "mode": "hang"])
        try enqueueApple()
        let started = Date()
        let pass = try settle(["reconcile"], config: config)
        let took = Date().timeIntervalSince(started)
        XCTAssertEqual(pass.status, 69, pass.stderr)
        XCTAssertLessThan(took, 15, "a hung Apple (held 300 s) is cut by http.timeout_seconds (1 s)")
        XCTAssertEqual(try orderField("o-1001", "state"), "pending")
        let error = try orderField("o-1001", "last error")
        XCTAssertTrue(error.lowercased().contains("time"), error)

        try fault(["store": "app_store", "mode": "slow", "seconds": "0.5"])
        let slowStart = Date()
        try settle(expecting: 0, ["reconcile", "--order", "o-1001"], config: config)
        XCTAssertGreaterThanOrEqual(Date().timeIntervalSince(slowStart), 0.5, "the answer was held")
        XCTAssertEqual(try orderField("o-1001", "state"), "finished")
    }

    /// Only JSON, only to a loopback name, only stores it serves: a web page cannot flip it.
    func testTheSwitch_refusesSimpleCrossOriginPosts_rebindingHosts_andUnknownStores() throws {
        let body = Data(#"{"store":"app_store","mode":"503"}"#.utf8)
        let form = try client.send(HTTPRequest(method: "POST", url: "http://127.0.0.1:\(port)/simulator/faults",
                                               headers: [HTTPHeader("Content-Type", "text/plain")], body: body))
        XCTAssertEqual(form.status, 415)
        let rebound = try client.send(HTTPRequest(method: "POST", url: "http://127.0.0.1:\(port)/simulator/faults",
                                                  headers: [HTTPHeader("Content-Type", "application/json"),
                                                            HTTPHeader("Host", "evil.example:\(port)")], body: body))
        XCTAssertEqual(rebound.status, 403)
        XCTAssertThrowsError(try fault(["store": "nowhere", "mode": "503"]))
        XCTAssertEqual(try JSONValue.parse(try get("/simulator/faults").body)["app_store"]?["mode"], .string("none"))
    }

    // MARK: - Helpers

    private func fault(_ members: [String: String]) throws {
        let body = JSONValue.object(members.sorted { $0.key < $1.key }.map { ($0.key, .string($0.value)) }).data
        let answer = try client.send(HTTPRequest(method: "POST", url: "http://127.0.0.1:\(port)/simulator/faults",
                                                 headers: [HTTPHeader("Content-Type", "application/json")], body: body))
        guard answer.status == 200 else { throw POSIXError(.EINVAL) }
    }

    private func get(_ path: String, port: Int? = nil, method: String = "GET") throws -> HTTPResponse {
        try client.send(HTTPRequest(method: method, url: "http://127.0.0.1:\(port ?? self.port)\(path)"))
    }

    private func enqueueApple() throws {
        try settle(expecting: 0, ["enqueue", "--order", "o-1001", "--user", "u-42",
                                  "--product", "com.example.game.coins100", "--receipt-file", sim + "/receipt.b64"],
                   config: config)
    }

    private func enqueueGoogle() throws {
        try settle(expecting: 0, ["enqueue", "--store", "google_play", "--order", "o-1002", "--user", "u-42",
                                  "--product", "gems_100", "--app-account-token", "u-42",
                                  "--purchase-token-file", sim + "/play-token.txt"], config: config)
    }

    /// A field of `settle status ORDER`'s block (`state:`, `attempts:`, ...).
    private func orderField(_ order: String, _ name: String) throws -> String {
        let shown = try settle(["status", order], config: config).stdout
        let line = shown.split(separator: "\n").first { $0.hasPrefix(name + ":") }
        return line.map { String($0.dropFirst(name.count + 1)).trimmingCharacters(in: .whitespaces) } ?? ""
    }
}
