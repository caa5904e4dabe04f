import Foundation
import SettleApp
import XCTest
import SettleBase
#if canImport(Glibc)
import Glibc
#endif

/// A configuration that cannot be used stops every command with exit 78 and a message that
/// names the offending key by its path; `check-config` shows what it understood, secrets
/// redacted (SPEC section 2).
final class ConfigurationTests: EndToEndTestCase {
    /// Rewrites settle.json with `edit` applied to its top-level members.
    func editConfig(_ edit: (inout [(String, JSONValue)]) -> Void) throws {
        let json = try JSONValue.parse(XCTUnwrap(bytes(world.configPath)))
        var members = try XCTUnwrap(json.objectMembers)
        edit(&members)
        try world.write("settle.json", JSONValue.object(members).serialized(pretty: true))
    }

    /// Runs check-config and reconcile: both must exit 78 naming `keyPath` (and `mentioning`).
    func assertConfigError(naming keyPath: String, mentioning extra: String? = nil,
                           file: StaticString = #filePath, line: UInt = #line) throws {
        for command in ["check-config", "reconcile"] {
            let result = try settle([command])
            XCTAssertEqual(result.status, 78, "\(command): stdout \(result.stdout) stderr \(result.stderr)", file: file, line: line)
            XCTAssertTrue(result.stderr.contains(keyPath), "\(command): the message should name \(keyPath):\n\(result.stderr)",
                          file: file, line: line)
            if let extra {
                XCTAssertTrue(result.stderr.contains(extra), "\(command): the message should mention \(extra):\n\(result.stderr)",
                              file: file, line: line)
            }
            XCTAssertFalse(result.stderr.contains(world.sharedSecret), file: file, line: line)
        }
        XCTAssertTrue(world.deliveries.isEmpty, "no hook may run with a broken configuration", file: file, line: line)
        XCTAssertTrue(world.simulator.requests.isEmpty, "nobody may call Apple with a broken configuration", file: file, line: line)
    }

    func testUnknownKey_exits78NamingItsPath() throws {
        try world.writeConfig(schedule: [("intervall", .number(60))])
        try assertConfigError(naming: "schedule.intervall")
    }

    func testUnknownTopLevelKey_exits78NamingIt() throws {
        try world.writeConfig(overrides: [("ledger_path", .string("/tmp/x"))])
        try assertConfigError(naming: "ledger_path")
    }

    func testWrongType_exits78NamingTheKeyPath() throws {
        try world.writeConfig(schedule: [("concurrency", .string("8"))])
        try assertConfigError(naming: "schedule.concurrency")
    }

    func testMissingRequiredKey_exits78NamingIt() throws {
        try editConfig { $0.removeAll { $0.0 == "bundle_id" } }
        try assertConfigError(naming: "bundle_id")
    }

    func testSecretFileReadableByOthers_exits78NamingTheFile() throws {
        let secretPath = world.folder + "/shared-secret"
        XCTAssertEqual(chmod(secretPath, 0o644), 0)
        try assertConfigError(naming: "receipt_api.shared_secret_file", mentioning: secretPath)
    }

    func testSecretFileReadableByGroup_exits78NamingTheFile() throws {
        let secretPath = world.folder + "/shared-secret"
        XCTAssertEqual(chmod(secretPath, 0o640), 0)
        try assertConfigError(naming: "receipt_api.shared_secret_file", mentioning: secretPath)
    }

    func testPlainHTTPToANonLoopbackHost_exits78NamingTheKeyPath() throws {
        try world.writeConfig(overrides: [("receipt_api", .object([
            ("production_url", .string("http://buy.itunes.apple.com/verifyReceipt")),
            ("sandbox_url", .string(world.simulator.sandboxURL)),
            ("shared_secret_file", .string("shared-secret")),
        ]))])
        try assertConfigError(naming: "receipt_api.production_url")
    }

    func testRevokeURL_thatDiffersFromTheGrantURLOnlyByASlashAQueryOrSpelling_exits78NamingBothKeys() throws {
        try world.write("webhook-secret", "whsec-0123456789", mode: 0o600)
        func configure(revoke: String) throws {
            try world.writeConfig(overrides: [("delivery", .object([("webhook", .object([
                ("url", .string("https://grants.example.com/settle/grant")), ("secret_file", .string("webhook-secret")),
                ("revoke_url", .string(revoke)),
            ]))]))])
        }
        for revoke in ["https://grants.example.com/settle/grant/", "https://grants.example.com/settle/grant?event=revoke",
                       "https://grants.example.com/settle/grant/?event=revoke#x", "https://GRANTS.example.com:443/settle//grant",
                       "https://grants.example.com/settle/./grant", "https://revoker:pw@grants.example.com/settle/grant"] {
            try configure(revoke: revoke)
            let result = try settle(["check-config"])
            XCTAssertEqual(result.status, 78, "\(revoke): \(result.stdout) \(result.stderr)")
            XCTAssertTrue(result.stderr.contains("delivery.webhook.revoke_url") && result.stderr.contains("delivery.webhook.url"),
                          "\(revoke): \(result.stderr)")
            XCTAssertFalse(result.stderr.contains("pw@"), result.stderr)
        }
        for revoke in ["https://grants.example.com/settle/revoke", "https://grants.example.com:8443/settle/grant"] {
            try configure(revoke: revoke)
            try settle(expecting: 0, ["check-config"])
        }
    }

    func testCheckConfig_onAGoodConfiguration_exits0AndRedactsTheSecretButNamesItsFile() throws {
        let result = try settle(expecting: 0, ["check-config"])
        let output = result.stdout + result.stderr
        XCTAssertFalse(output.contains(world.sharedSecret), "check-config printed the shared secret")
        XCTAssertTrue(output.contains(world.folder + "/shared-secret"), "check-config should name the secret file:\n\(output)")
        XCTAssertTrue(output.contains(world.bundleId))
        XCTAssertTrue(output.contains(world.ledgerPath))
    }

    func testCheckConfig_withTheSecretInCredentialsDirectory_readsItFromThere() throws {
        let credentials = world.folder + "/credentials"
        try FileManager.default.createDirectory(atPath: credentials, withIntermediateDirectories: false)
        try FileManager.default.moveItem(atPath: world.folder + "/shared-secret", toPath: credentials + "/shared-secret")
        let result = try settle(["check-config"], environment: ["CREDENTIALS_DIRECTORY": credentials])
        XCTAssertEqual(result.status, 0, result.stderr)
        XCTAssertTrue(result.stdout.contains(credentials + "/shared-secret"), result.stdout)
        XCTAssertFalse((result.stdout + result.stderr).contains(world.sharedSecret))
    }
}

/// Configuration mistakes reported as an editor would want them.
final class ConfigurationErrorTests: EndToEndTestCase {
    func testInvalidJSON_isReportedAtLineAndColumn() throws {
        try world.write("settle.json", "{\n  \"ledger\": \"x\",\n  \"bundle_id\": \"a\",,\n}")
        let result = try settle(["check-config"])
        XCTAssertEqual(result.status, 78)
        XCTAssertTrue(result.stderr.contains("settle.json:3:20: not valid JSON: expected a string key"), result.stderr)
    }

    func testCheckConfig_reportsEveryError_oneLineEach_withProductIdsQuoted() throws {
        try world.writeConfig(overrides: [
            ("bundle_id", .number(5)),
            ("schedule", .object([("intervall", .number(3))])),
            ("products", .object([("com.example.game.coins100", .object([("type", .string("consumible"))]))])),
            ("log_level", .string("loud")),
        ])
        let result = try settle(["check-config"])
        XCTAssertEqual(result.status, 78)
        let messages = lines(result.stderr)
        XCTAssertEqual(messages.count, 4, result.stderr)
        XCTAssertTrue(messages.contains { $0.hasSuffix("bundle_id: expected a non-empty string, got number") }, result.stderr)
        XCTAssertTrue(messages.contains { $0.contains("products[\"com.example.game.coins100\"].type: \"consumible\" is not one of") }, result.stderr)
        XCTAssertTrue(messages.contains { $0.hasSuffix("schedule.intervall: unknown key") }, result.stderr)
        XCTAssertTrue(messages.contains { $0.contains("log_level: \"loud\"") }, result.stderr)
    }
}
