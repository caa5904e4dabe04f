import Foundation
import SettleApp
import SettleTesting
import XCTest
import SettleBase
#if canImport(Glibc)
import Glibc
import SettleGooglePlay
#endif

/// `settle simulator` and `settle demo` play Google too, so every Play path can be tried on
/// loopback without a Google account.
final class GooglePlaySimulatorTests: EndToEndTestCase {
    func testDemo_settlesPlayPurchases_consumingOne_leavingTheAcknowledgedOneAlone_andWaitingForThePendingOne() throws {
        let tmp = world.folder + "/tmp"
        try FileManager.default.createDirectory(atPath: tmp, withIntermediateDirectories: false)
        let result = try settleWithoutConfig(["demo"], environment: ["TMPDIR": tmp], workingDirectory: tmp)
        XCTAssertEqual(result.status, 0, result.stderr)
        XCTAssertTrue(result.stdout.contains("o-3001 GPA.3301-0001-0001-00001 (token:"), result.stdout)
        XCTAssertTrue(result.stdout.contains("purchased, consumed"), result.stdout)
        XCTAssertTrue(result.stdout.contains("o-3002 GPA.3301-0002-0002-00002"), result.stdout)
        XCTAssertTrue(result.stdout.contains("pending payment, not acknowledged"), result.stdout)
        XCTAssertTrue(result.stdout.contains("GPA.3301-0001-0001-00001 o-3001"), "the hook did not deliver the Play purchase:\n\(result.stdout)")
        XCTAssertFalse(result.stdout.contains("GPA.3301-0003-0003-00003 o-3003"), "a pending purchase was delivered")
        XCTAssertFalse(result.stdout.contains("demo-token-"), "the demo printed a purchase token")
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: tmp), [])
    }

    func testSimulator_servesGooglePlayForAThrowawayKey_andSettleSettlesAScriptedPurchaseAgainstIt() throws {
        let token = "tok-simulated-AO-J1OxYz_0123456789"
        try world.write("plans.json", JSONValue.object([("google_play", .object([
            ("products", .array([.object([("purchase_token", .string(token)), ("purchase", .object([
                ("purchaseState", .number(0)), ("orderId", .string("GPA.SIM-1")), ("productId", .string("gems_100")),
                ("purchaseTimeMillis", .string(String(world.time.unixSeconds * 1000 - 60_000))),
                ("acknowledgementState", .number(0)), ("obfuscatedExternalAccountId", .string("u-1")),
            ]))])])),
        ]))]).serialized())
        let simulator = try SettleBinary.start(["simulator", "--google-key", world.folder + "/sim-key.json", "--script", world.folder + "/plans.json"],
                                               outputFolder: world.folder)
        defer {
            if simulator.isRunning { simulator.send(SIGTERM) }
            _ = simulator.wait()
        }
        var api: String?
        _ = eventually(within: 20) {
            api = ((try? String(contentsOfFile: simulator.stdoutPath, encoding: .utf8)) ?? "").split(separator: "\n")
                .first { $0.hasPrefix("google_play.api_url: ") }.map { String($0.dropFirst("google_play.api_url: ".count)) }
            return api != nil
        }
        let base = try XCTUnwrap(api, (try? String(contentsOfFile: simulator.stderrPath, encoding: .utf8)) ?? "")
        let mode = try FileManager.default.attributesOfItem(atPath: world.folder + "/sim-key.json")[.posixPermissions] as? Int
        XCTAssertEqual(mode, 0o600)
        try world.writeConfig(overrides: [
            ("products", .object([("gems_100", .object([("type", .string("consumable")), ("store", .string("google_play"))]))])),
            ("user_binding", .object([("app_account_token", .string("user_id"))])),
            ("google_play", .object([("package_name", .string("com.example.game")), ("service_account_file", .string("sim-key.json")),
                                     ("api_url", .string(base)), ("token_url", .string(base + "/token"))])),
        ])
        try settle(expecting: 0, ["enqueue", "--store", "google_play", "--order", "o-sim", "--user", "u-1", "--product", "gems_100",
                                  "--purchase-token-file", "-"], stdin: Data(token.utf8))
        try settle(expecting: 0, ["reconcile"])
        XCTAssertEqual(try state("o-sim"), "finished")
        XCTAssertEqual(world.deliveries, ["GPA.SIM-1 o-sim"])
        XCTAssertEqual(try history("o-sim").last?["outcome"], .string("consumed"))

        // Signed pushes: the key set and a token that verifies against it.
        let client = HTTPClient(configuration: HTTPClientConfiguration(connectTimeout: 5, totalTimeout: 10))
        let keys = try JSONWebKeySet(json: try client.send(HTTPRequest(method: "GET", url: base + "/simulator/jwks")).body)
        let answer = try client.send(HTTPRequest(method: "POST", url: base + "/simulator/push-token", headers: [],
                                                 body: JSONValue.object([("audience", .string("https://a.example")),
                                                                         ("email", .string("push@example.com"))]).data))
        let pushToken = try XCTUnwrap(try JSONValue.parse(answer.body)["token"]?.looseString)
        let authenticator = PushAuthenticator(keys: keys, audience: "https://a.example", serviceAccountEmail: "push@example.com",
                                              time: SystemTimeSource())
        XCTAssertNoThrow(try authenticator.authenticate(authorization: "Bearer " + pushToken).get())
    }
}
