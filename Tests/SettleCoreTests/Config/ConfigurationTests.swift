import SettleTesting
import XCTest
@testable import SettleApp
@testable import SettleBase
@testable import SettleConfig

final class ConfigurationTests: XCTestCase {
    var world: TestWorld!

    override func setUpWithError() throws { world = try TestWorld() }
    override func tearDown() { world = nil }

    func load(_ overrides: [(String, JSONValue)], schedule: [(String, JSONValue)] = []) throws -> Configuration {
        try world.writeConfig(schedule: schedule, overrides: overrides)
        return try world.configuration()
    }

    func error(_ overrides: [(String, JSONValue)] = [], schedule: [(String, JSONValue)] = []) -> String {
        do {
            _ = try load(overrides, schedule: schedule)
            return "no error"
        } catch {
            return "\(error)"
        }
    }

    func testShippedExample_isAccepted() throws {
        let example = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("../../../config/settle.example.json").standardized.path
        let c = try Configuration.load(path: example, environment: [:])
        XCTAssertEqual(c.bundleId, "com.example.game")
        XCTAssertEqual(c.schedule.concurrency, 8)
    }

    func testDefaults_areTheSpecs() throws {
        try world.write("min.json", """
            {"ledger": "l.sqlite3", "bundle_id": "b", "receipt_api": {"shared_secret_file": "shared-secret"},
             "products": {"p": {"type": "consumable"}}, "delivery": {"command": ["/bin/true"]}}
            """)
        let c = try Configuration.load(path: world.folder + "/min.json", environment: [:])
        XCTAssertEqual(c.ledgerPath, world.folder + "/l.sqlite3")
        XCTAssertTrue(c.acceptSandbox)
        XCTAssertEqual(c.receiptAPI?.productionURL, "https://buy.itunes.apple.com/verifyReceipt")
        XCTAssertEqual(c.receiptAPI?.sandboxURL, "https://sandbox.itunes.apple.com/verifyReceipt")
        XCTAssertEqual(c.delivery.timeoutSeconds, 30)
        XCTAssertEqual(c.schedule.intervalSeconds, 60)
        XCTAssertEqual(c.schedule.maxAttempts, 20)
        XCTAssertEqual(c.schedule.backoffBaseSeconds, 30)
        XCTAssertEqual(c.schedule.backoffMaxSeconds, 21600)
        XCTAssertEqual(c.http.connectTimeoutSeconds, 10)
        XCTAssertEqual(c.http.timeoutSeconds, 30)
    }

    func testUnknownKey_isNamedWithItsPath() {
        XCTAssertTrue(error([("colour", .string("blue"))]).contains("colour: unknown key"))
        XCTAssertTrue(error(schedule: [("intervall", .number(5))]).contains("schedule.intervall: unknown key"))
    }

    /// Issue 36, bug 6: a wrong value in a section never hides a mistyped key of the same section.
    func testAMistypedKey_isNamed_evenWhenAnotherKeyOfItsSectionHasAWrongValue() {
        let message = error(schedule: [("intervall", .number(5)), ("concurrency", .number(0))])
        XCTAssertTrue(message.contains("schedule.intervall: unknown key"), message)
        XCTAssertTrue(message.contains("schedule.concurrency: 0 is out of range"), message)
        let http = error([("http", .object([("timeout", .number(5)), ("connect_timeout_seconds", .number(0))]))])
        XCTAssertTrue(http.contains("http.timeout: unknown key"), http)
        XCTAssertTrue(http.contains("http.connect_timeout_seconds"), http)
    }

    func testWrongType_isNamed() {
        let message = error(schedule: [("concurrency", .string("8"))])
        XCTAssertTrue(message.contains("schedule.concurrency: expected an integer, got string"), message)
        XCTAssertTrue(error([("accept_sandbox", .string("yes"))]).contains("accept_sandbox: expected true or false"))
    }

    func testMissingRequiredKey_isNamed() {
        XCTAssertTrue(error([("bundle_id", .null)]).contains("bundle_id"))
        _ = try? world.write("no-ledger.json", #"{"bundle_id": "b"}"#)
        XCTAssertThrowsError(try Configuration.load(path: world.folder + "/no-ledger.json", environment: [:])) { e in
            XCTAssertTrue("\(e)".contains("ledger: required key is missing"), "\(e)")
        }
    }

    func testURLs_mustBeHTTPSExceptToLoopback() {
        let api = { (url: String) -> [(String, JSONValue)] in
            [("receipt_api", .object([("production_url", .string(url)), ("shared_secret_file", .string("shared-secret"))]))]
        }
        XCTAssertTrue(error(api("http://example.com/verifyReceipt")).contains("must be an https:// URL"))
        XCTAssertEqual(error(api("http://127.0.0.1:9/verifyReceipt")), "no error")
        XCTAssertEqual(error(api("http://localhost:9/x")), "no error")
        XCTAssertEqual(error(api("http://[::1]:9/x")), "no error")
        XCTAssertTrue(error(api("http://127.0.0.1.evil.com/x")).contains("https"))
    }

    func testDelivery_needsExactlyOneMethod_andAnAbsoluteCommand() {
        XCTAssertTrue(error([("delivery", .object([("timeout_seconds", .number(5))]))]).contains("exactly one of"))
        XCTAssertTrue(error([("delivery", .object([("command", .array([.string("grant")]))]))]).contains("absolute path"))
    }

    func testDeliveryEnvironment_takesVariableNamesOnly() throws {
        func delivery(_ names: [JSONValue]) -> [(String, JSONValue)] {
            [("delivery", .object([("command", .array([.string("/bin/true")])), ("environment", .array(names))]))]
        }
        XCTAssertEqual(try load(delivery([.string("HOOK_TOKEN_FILE"), .string("_X1")])).delivery.environment, ["HOOK_TOKEN_FILE", "_X1"])
        XCTAssertTrue(error(delivery([.string("A=b")])).contains("delivery.environment[0]"), error(delivery([.string("A=b")])))
        XCTAssertTrue(error(delivery([.string("")])).contains("is not a variable name"))
        XCTAssertTrue(error(delivery([.string("1ABC")])).contains("is not a variable name"))
        XCTAssertTrue(error(delivery([.number(1)])).contains("expected a variable name"))
        XCTAssertTrue(error([("delivery", .object([("command", .array([.string("/bin/true")])), ("environment", .string("PATH"))]))])
            .contains("expected an array"))
        XCTAssertTrue(error([("delivery", .object([("command", .array([.string("/bin/true")])), ("env", .array([]))]))])
            .contains("delivery.env: unknown key"))
    }

    func testProducts_typeMustBeKnown() {
        XCTAssertTrue(error([("products", .object([("p", .object([("type", .string("gift"))]))]))]).contains("products.p.type"))
    }

    func testSecretReadableByOthers_isRefused_andNotPrinted() throws {
        try world.write("shared-secret", world.sharedSecret, mode: 0o644)
        let c = try load([])
        XCTAssertThrowsError(try c.receiptAPI!.sharedSecretFile.read()) { e in
            let text = "\(e)"
            XCTAssertTrue(text.contains("readable by group or others"), text)
            XCTAssertTrue(text.contains("shared-secret"), text)
            XCTAssertFalse(text.contains(world.sharedSecret))
        }
    }

    func testRelativeSecret_isLookedUpInCredentialsDirectoryFirst() throws {
        let credentials = world.folder + "/run-credentials"
        try FileManager.default.createDirectory(atPath: credentials, withIntermediateDirectories: true)
        try world.write(credentials + "/shared-secret", "from-systemd", mode: 0o600)
        try world.writeConfig()
        let c = try Configuration.load(path: world.configPath, environment: ["CREDENTIALS_DIRECTORY": credentials])
        XCTAssertEqual(try c.receiptAPI!.sharedSecretFile.read().value, "from-systemd")
        XCTAssertEqual(try world.configuration().receiptAPI!.sharedSecretFile.read().value, world.sharedSecret)
    }

    func testNotJSON_isAClearError() throws {
        try world.write("settle.json", "{ledger: nope")
        XCTAssertThrowsError(try world.configuration()) { e in XCTAssertTrue("\(e)".contains("not valid JSON"), "\(e)") }
    }
}

/// The notifications, consumption and revoke keys.
final class NotificationConfigurationTests: XCTestCase {
    nonisolated(unsafe) var world: TestWorld!
    override func setUpWithError() throws { world = try TestWorld() }
    override func tearDown() { world = nil }

    func load(_ overrides: [(String, JSONValue)]) throws -> Configuration {
        try world.writeConfig(serverAPI: true, overrides: overrides)
        return try world.configuration()
    }

    func testNotifications_defaults() throws {
        let c = try load([("notifications", .object([("listen", .string("127.0.0.1:8787"))]))])
        XCTAssertEqual(c.notifications?.path, "/apple/notifications/v2")
        XCTAssertEqual(c.notifications?.limits, NotificationEndpoint.Limits(maxBodyBytes: 65536, timeoutSeconds: 10, maxConnections: 64))
        XCTAssertEqual(c.notifications?.historyIntervalSeconds, 3600)
        XCTAssertFalse(c.consumption.respond)
    }

    func testConsumptionRespond_requiresTheCustomersConsent() {
        XCTAssertThrowsError(try load([("consumption", .object([("respond", .bool(true))]))])) { error in
            XCTAssertTrue("\(error)".contains("consumption.customer_consented"), "\(error)")
        }
    }

    func testRefundPreference_mustBeOneOfApples() {
        XCTAssertThrowsError(try load([("consumption", .object([("refund_preference", .string("MAYBE"))]))]))
    }

    func testRevokeCommand_mustBeAnAbsoluteArgv() {
        XCTAssertThrowsError(try load([("delivery", .object([("command", .array([.string("/bin/true")])),
                                                             ("revoke_command", .array([.string("revoke.sh")]))]))]))
    }
}

/// `server_api.rate_limits`: requests a second per endpoint group, over Apple's published ones.
final class RateLimitConfigurationTests: XCTestCase {
    nonisolated(unsafe) var world: TestWorld!
    override func setUpWithError() throws { world = try TestWorld() }
    override func tearDown() { world = nil }

    func load(_ rateLimits: JSONValue?) throws -> Configuration {
        var serverAPI = world.serverAPIConfig.objectMembers ?? []
        if let rateLimits { serverAPI.append(("rate_limits", rateLimits)) }
        try world.writeConfig(serverAPI: true, overrides: [("server_api", .object(serverAPI))])
        return try world.configuration()
    }

    func testAbsent_isEmpty_soEveryGroupKeepsItsPublishedRate() throws {
        XCTAssertEqual(try load(nil).serverAPI?.rateLimits, [:])
    }

    func testConfiguredGroups_areDecoded_fractionsIncluded() throws {
        let c = try load(.object([("order_lookup", .number(30)), ("refund_history", .number(0.5))]))
        XCTAssertEqual(c.serverAPI?.rateLimits, ["order_lookup": 30, "refund_history": 0.5])
    }

    func testAnUnknownGroup_isAnErrorNamingItsKey() {
        XCTAssertThrowsError(try load(.object([("verifyReceipt", .number(5))]))) { error in
            XCTAssertTrue("\(error)".contains("server_api.rate_limits.verifyReceipt: unknown endpoint group"), "\(error)")
        }
    }
}
