import Foundation
import XCTest
@testable import SettleBase
@testable import SettleModel
@testable import SettleSimulator
@testable import SettleAppStoreSimulator
@testable import SettleGooglePlaySimulator

/// The simulators' rate limit (issue 27's benchmark), on an injected clock: the bucket, its
/// counts, the outage window, and the stores' answers over real loopback HTTP.
final class SimulatedRateLimitTests: XCTestCase {
    let time = ManualTimeSource(Date(timeIntervalSince1970: 1_796_000_000))

    func testOneSecondsWorthIsGrantedThenRefusedUntilATokenRefills() {
        let limit = SimulatedRateLimit(rate: 4, time: time)
        for _ in 0..<4 { XCTAssertEqual(limit.admit("transaction_info"), .granted) }
        guard case let .limited(retryAfter) = limit.admit("transaction_info") else { return XCTFail("the fifth request in a second at 4/s") }
        // A Date this far from 1970 holds about a tenth of a microsecond.
        XCTAssertEqual(retryAfter, 0.25, accuracy: 1e-6)
        time.advance(by: 0.2)
        guard case let .limited(left) = limit.admit("transaction_info") else { return XCTFail("0.2 s refills 0.8 of a token") }
        XCTAssertEqual(left, 0.05, accuracy: 1e-6)
        time.advance(by: 0.05)
        XCTAssertEqual(limit.admit("transaction_info"), .granted)
        guard case let .limited(again) = limit.admit("transaction_info") else { return XCTFail("the bucket is empty again") }
        XCTAssertEqual(again, 0.25, accuracy: 1e-6)
        // Idle for ten seconds: the bucket holds one second's worth, not ten.
        time.advance(by: 10)
        for _ in 0..<4 { XCTAssertEqual(limit.admit("transaction_info"), .granted) }
        XCTAssertNotEqual(limit.admit("transaction_info"), .granted)
        let counts = limit.counts["transaction_info"]
        XCTAssertEqual(counts?.granted, 9)
        XCTAssertEqual(counts?.refused, 4)
    }

    func testRefusalsPastTheFirstSecondAndGrantsPerSecondAreCounted() {
        let limit = SimulatedRateLimit(rate: 2, time: time)
        for _ in 0..<3 { _ = limit.admit("g") }  // 2 granted, 1 refused at 0 s
        time.advance(by: 1.5)
        for _ in 0..<4 { _ = limit.admit("g") }  // 2 granted (refilled to 2), 2 refused at 1.5 s
        time.advance(by: 1)
        _ = limit.admit("g")  // granted at 2.5 s
        let counts = limit.counts["g"]
        XCTAssertEqual(counts?.granted, 5)
        XCTAssertEqual(counts?.refused, 3)
        XCTAssertEqual(counts?.refusedAfterFirstSecond, 2)
        XCTAssertEqual(counts?.grantsPerSecond, [2, 2, 1])
        XCTAssertEqual(counts?.refusalsPerSecond, [1, 2])
    }

    func testEachGroupHasItsOwnBucketAndRate() {
        let limit = SimulatedRateLimit(rate: 3, groupRates: ["order_lookup": 1], time: time)
        for _ in 0..<3 { XCTAssertEqual(limit.admit("transaction_info"), .granted) }
        XCTAssertNotEqual(limit.admit("transaction_info"), .granted)
        XCTAssertEqual(limit.admit("finish_transaction"), .granted, "another group's bucket is full")
        XCTAssertEqual(limit.admit("order_lookup"), .granted)
        XCTAssertEqual(limit.admit("order_lookup"), .limited(retryAfter: 1))
        XCTAssertEqual(limit.rate(of: "order_lookup"), 1)
        XCTAssertEqual(limit.counts.keys.sorted(), ["finish_transaction", "order_lookup", "transaction_info"])
    }

    func testTheOutageWindowRefusesEveryRequestRelativeToTheFirst() {
        let limit = SimulatedRateLimit(rate: 100, outage: 2..<5, time: time)
        XCTAssertEqual(limit.admit("g"), .granted)
        time.advance(by: 2)
        XCTAssertEqual(limit.admit("g"), .outage)
        XCTAssertEqual(limit.admit("verify_receipt", limited: false), .outage, "a call without a published limit is down too")
        time.advance(by: 2.999)
        XCTAssertEqual(limit.admit("g"), .outage)
        time.advance(by: 0.001)
        XCTAssertEqual(limit.admit("g"), .granted)
        XCTAssertEqual(limit.admit("verify_receipt", limited: false), .granted)
        XCTAssertEqual(limit.counts["g"]?.outage, 2)
        XCTAssertEqual(limit.counts["g"]?.granted, 2)
    }

    func testUnlimitedCallsAreNeverRefusedOutsideAnOutage() {
        let limit = SimulatedRateLimit(rate: 1, time: time)
        for _ in 0..<10 { XCTAssertEqual(limit.admit("verify_receipt", limited: false), .granted) }
        XCTAssertEqual(limit.counts["verify_receipt"]?.granted, 10)
        XCTAssertEqual(limit.counts["verify_receipt"]?.grantsPerSecond, [10])
    }

    func testGroupsOfTheStoresPaths() {
        XCTAssertEqual(SimulatedRateLimit.appleGroup(method: "GET", path: "/production/inApps/v1/transactions/3000000000"), "transaction_info")
        XCTAssertEqual(SimulatedRateLimit.appleGroup(method: "POST", path: "/production/inApps/v1/transactions/3000000000/finish"),
                       "finish_transaction")
        XCTAssertEqual(SimulatedRateLimit.appleGroup(method: "GET", path: "/sandbox/inApps/v2/history/1?sort=ASCENDING"),
                       "transaction_history (sandbox)")
        XCTAssertEqual(SimulatedRateLimit.appleGroup(method: "GET", path: "/production/inApps/v1/lookup/MQ5Q8W3X2Z"), "order_lookup")
        XCTAssertNil(SimulatedRateLimit.appleGroup(method: "POST", path: "/production/verifyReceipt"))
        let app = "/androidpublisher/v3/applications/com.example.game/"
        XCTAssertEqual(SimulatedRateLimit.googleGroup(path: app + "purchases/products/gems/tokens/t", packageName: "com.example.game"),
                       "one_time_purchases")
        XCTAssertEqual(SimulatedRateLimit.googleGroup(path: app + "purchases/productsv2/tokens/t", packageName: "com.example.game"),
                       "one_time_purchases")
        XCTAssertEqual(SimulatedRateLimit.googleGroup(path: app + "purchases/subscriptionsv2/tokens/t", packageName: "com.example.game"),
                       "subscriptions")
        XCTAssertEqual(SimulatedRateLimit.googleGroup(path: app + "purchases/voidedpurchases?startTime=1", packageName: "com.example.game"),
                       "voided_purchases")
        XCTAssertEqual(SimulatedRateLimit.googleGroup(path: app + "orders/GPA.1:reviewrefund", packageName: "com.example.game"), "orders")
        XCTAssertNil(SimulatedRateLimit.googleGroup(path: "/token", packageName: "com.example.game"))
        XCTAssertNil(SimulatedRateLimit.googleGroup(path: app + "purchases/products/gems/tokens/t", packageName: "com.example.other"))
    }

    // MARK: Over loopback

    private let http = HTTPClient(configuration: HTTPClientConfiguration(connectTimeout: 5, totalTimeout: 10))

    private func get(_ url: String) throws -> HTTPResponse {
        try http.send(HTTPRequest(method: "GET", url: url, headers: [HTTPHeader("Authorization", "Bearer not-checked-before-the-limit")]))
    }

    func testTheAppleSimulatorAnswersRateLimitExceededWithRetryAfterInEpochMilliseconds() throws {
        let simulator = try AppleSimulator(sharedSecret: "s", time: time)
        defer { simulator.stop() }
        simulator.limit(SimulatedRateLimit(rate: 2, time: time))
        let info = simulator.serverProductionURL + "/inApps/v1/transactions/3000000000"
        // Within the limit, the endpoint's own answer (401 here: the simulator has no credentials).
        XCTAssertEqual(try get(info).status, 401)
        XCTAssertEqual(try get(info).status, 401)
        let refused = try get(info)
        XCTAssertEqual(refused.status, 429)
        let body = try JSONValue.parse(refused.body)
        XCTAssertEqual(body["errorCode"]?.looseInt64, 4290000)
        XCTAssertEqual(body["errorMessage"]?.looseString, "Rate limit exceeded.")
        // The next token in half a second: Apple's Retry-After is that moment in UNIX milliseconds.
        XCTAssertEqual(refused.header("Retry-After"), String(1_796_000_000_500))
        // Finish Transaction is a bucket of its own; verifyReceipt has no published limit.
        XCTAssertNotEqual(try http.send(HTTPRequest(method: "POST", url: info + "/finish")).status, 429)
        for _ in 0..<5 {
            XCTAssertNotEqual(try http.send(HTTPRequest(method: "POST", url: simulator.productionURL, body: Data("{}".utf8))).status, 429)
        }
        time.advance(by: 0.5)
        XCTAssertEqual(try get(info).status, 401)
        let counts = try JSONValue.parse(get(simulator.baseURL + SimulatedRateLimit.countsPath).body)
        XCTAssertEqual(counts["groups"]?["transaction_info"]?["granted"]?.looseInt64, 3)
        XCTAssertEqual(counts["groups"]?["transaction_info"]?["refused"]?.looseInt64, 1)
        XCTAssertEqual(counts["groups"]?["finish_transaction"]?["granted"]?.looseInt64, 1)
        XCTAssertEqual(counts["groups"]?["verify_receipt"]?["granted"]?.looseInt64, 5)
    }

    func testTheAppleSimulatorIsDownInItsOutage() throws {
        let simulator = try AppleSimulator(sharedSecret: "s", time: time)
        defer { simulator.stop() }
        simulator.limit(SimulatedRateLimit(rate: 100, outage: 1..<2, time: time))
        let info = simulator.serverProductionURL + "/inApps/v1/transactions/3000000000"
        XCTAssertEqual(try get(info).status, 401)
        time.advance(by: 1)
        let down = try get(info)
        XCTAssertEqual(down.status, 500)
        XCTAssertEqual(try JSONValue.parse(down.body)["errorCode"]?.looseInt64, 5000001)
        XCTAssertEqual(try http.send(HTTPRequest(method: "POST", url: simulator.productionURL, body: Data("{}".utf8))).status, 500)
        time.advance(by: 1)
        XCTAssertEqual(try get(info).status, 401)
    }

    func testTheFakeGooglePlayRefusesPerQuotaBucketWithGooglesError() throws {
        let world = try PlayTestWorld()
        world.fake.limit(SimulatedRateLimit(rate: 2, time: world.time))
        let app = world.server.baseURL + "/androidpublisher/v3/applications/\(PlayTestWorld.packageName)/purchases/"
        // products and productsv2 share the One-time Purchases bucket.
        XCTAssertEqual(try get(app + "products/gems/tokens/t1").status, 401)
        XCTAssertEqual(try get(app + "productsv2/tokens/t1").status, 401)
        let refused = try get(app + "products/gems/tokens/t1")
        XCTAssertEqual(refused.status, 429)
        let error = try JSONValue.parse(refused.body)["error"]
        XCTAssertEqual(error?["code"]?.looseInt64, 429)
        XCTAssertEqual(error?["status"]?.looseString, "RESOURCE_EXHAUSTED")
        XCTAssertEqual(error?["errors"]?.arrayValue?.first?["reason"]?.looseString, "rateLimitExceeded")
        // Subscriptions are a bucket of their own, and the token endpoint is not Play's quota.
        XCTAssertEqual(try get(app + "subscriptionsv2/tokens/t2").status, 401)
        XCTAssertNotEqual(try http.send(HTTPRequest(method: "POST", url: world.server.baseURL + "/token")).status, 429)
        world.time.advance(by: 0.5)
        XCTAssertEqual(try get(app + "products/gems/tokens/t1").status, 401)
        let counts = try JSONValue.parse(get(world.server.baseURL + SimulatedRateLimit.countsPath).body)["groups"]
        XCTAssertEqual(counts?["one_time_purchases"]?["granted"]?.looseInt64, 3)
        XCTAssertEqual(counts?["one_time_purchases"]?["refused"]?.looseInt64, 1)
        XCTAssertEqual(counts?["subscriptions"]?["granted"]?.looseInt64, 1)
        XCTAssertNil(counts?["token"])
    }

    func testAPlansFilesRateLimitAppliesToBothStores() throws {
        let script = try SimulatorScript(json: JSONValue.parse(Data(#"{"rate_limit": 1}"#.utf8)), bundleId: "com.example.game")
        let simulator = try AppleSimulator(sharedSecret: "s", time: time)
        defer { simulator.stop() }
        script.apply(to: simulator)
        let info = simulator.serverProductionURL + "/inApps/v1/transactions/3000000000"
        XCTAssertEqual(try get(info).status, 401)
        XCTAssertEqual(try get(info).status, 429)
        let world = try PlayTestWorld()
        script.googlePlay.apply(to: world.fake)
        let product = world.server.baseURL + "/androidpublisher/v3/applications/\(PlayTestWorld.packageName)/purchases/products/gems/tokens/t"
        XCTAssertEqual(try get(product).status, 401)
        XCTAssertEqual(try get(product).status, 429)
        for bad in [#"{"rate_limit": 0}"#, #"{"rate_limit": "fast"}"#, #"{"rate_limit": -5}"#] {
            XCTAssertThrowsError(try SimulatorScript(json: JSONValue.parse(Data(bad.utf8)), bundleId: "b")) { error in
                XCTAssertEqual("\(error)", "rate_limit: expected requests a second, a positive number")
            }
        }
    }

    func testWithoutALimitTheSimulatorsRefuseNothing() throws {
        let simulator = try AppleSimulator(sharedSecret: "s", time: time)
        defer { simulator.stop() }
        let info = simulator.serverProductionURL + "/inApps/v1/transactions/3000000000"
        for _ in 0..<20 { XCTAssertEqual(try get(info).status, 401) }
        XCTAssertEqual(try get(simulator.baseURL + SimulatedRateLimit.countsPath).status, 404)
    }
}
