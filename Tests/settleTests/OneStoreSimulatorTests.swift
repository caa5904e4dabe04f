import Foundation
import XCTest
import SettleBase
import SettleTesting
#if canImport(Glibc)
import Glibc
#endif

/// docs/one-store.md's walk without a ONE store account: `settle simulator --one-store-key` writes
/// a throwaway secret and license key, a configuration points at it, and a scripted purchase is
/// granted and consumed.
final class OneStoreSimulatorTests: EndToEndTestCase {
    func testSimulator_servesOneStore_andSettleGrantsAndConsumesAScriptedPurchase() throws {
        let token = "os-simulated+token=0123456789"
        try world.write("plans.json", JSONValue.object([("one_store", .object([("purchases", .array([.object([
            ("productId", .string("gems_100")), ("purchaseToken", .string(token)), ("purchaseId", .string("1700000000001")),
            ("purchaseTime", .number((world.time.unixSeconds - 60) * 1000)), ("developerPayload", .string("u-42")),
            ("market", .string("MKT_ONE")),
        ])]))]))]).serialized())
        let secret = world.folder + "/one-store-secret"
        let simulator = try SettleBinary.start(["simulator", "--one-store-key", secret, "--script", world.folder + "/plans.json"],
                                               outputFolder: world.folder)
        defer {
            if simulator.isRunning { simulator.send(SIGTERM) }
            _ = simulator.wait()
        }
        var banner = ""
        _ = eventually(within: 20) {
            banner = (try? String(contentsOfFile: simulator.stdoutPath, encoding: .utf8)) ?? ""
            return banner.contains("one_store.sandbox_url: ")
        }
        func value(_ name: String) throws -> String {
            try XCTUnwrap(banner.split(separator: "\n").first { $0.hasPrefix(name + ": ") }.map { String($0.dropFirst(name.count + 2)) }, banner)
        }
        XCTAssertEqual(try FileManager.default.attributesOfItem(atPath: secret)[.posixPermissions] as? Int, 0o600)
        try world.writeConfig(overrides: [
            ("products", .object([("gems_100", .object([("type", .string("consumable")), ("store", .string("one_store"))]))])),
            ("user_binding", .object([("app_account_token", .string("user_id"))])),
            ("one_store", .object([("client_id", .string("0000000001")), ("package_name", .string("com.example.game")),
                                   ("client_secret_file", .string(secret)), ("license_key_file", .string(secret + ".license")),
                                   ("market_code", .string("MKT_ONE")), ("api_url", .string(try value("one_store.api_url"))),
                                   ("sandbox_url", .string(try value("one_store.sandbox_url")))])),
        ])
        let proof = #"{"productId": "gems_100", "purchaseToken": "\#(token)", "purchaseId": "1700000000001"}"#
        try settle(expecting: 0, ["enqueue", "--store", "one_store", "--order", "o-os", "--user", "u-42", "--product", "gems_100",
                                  "--proof-file", "-"], stdin: Data(proof.utf8))
        try settle(expecting: 0, ["reconcile"])
        XCTAssertEqual(try state("o-os"), "finished")
        XCTAssertEqual(world.deliveries, ["1700000000001 o-os"])
        XCTAssertEqual(try history("o-os").last?["outcome"], .string("consumed"))
        XCTAssertFalse(transcript.joined().contains(token), "the purchase token is a secret")
    }
}
