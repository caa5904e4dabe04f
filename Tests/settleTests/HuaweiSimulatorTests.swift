import Foundation
import XCTest
import SettleBase
import SettleTesting
#if canImport(Glibc)
import Glibc
#endif

/// docs/huawei.md's walk, as a newcomer follows it without a Huawei account: `settle simulator`
/// writes a throwaway IAP key and the test root, a configuration points at it, and a scripted
/// purchase is granted and confirmed as shipped; `settle demo` shows a Huawei purchase recovered.
final class HuaweiSimulatorTests: EndToEndTestCase {
    func testSimulator_servesIAPKitForAThrowawayKey_andSettleGrantsAndConfirmsAScriptedPurchase() throws {
        let token = "hw-simulated-token-0123456789"
        try world.write("plans.json", JSONValue.object([("huawei", .object([
            ("orders", .array([.object([
                ("purchaseOrderId", .string("1701.A.1")), ("purchaseToken", .string(token)), ("productId", .string("coins_500")),
                ("productType", .string("0")), ("quantity", .number(3)), ("purchaseTime", .number((world.time.unixSeconds - 60) * 1000)),
                ("developerPayload", .string("u-42")),
            ])])),
        ]))]).serialized())
        let simulator = try SettleBinary.start(["simulator", "--huawei-key", world.folder + "/huawei-iap.p8",
                                                "--huawei-root", world.folder + "/huawei-root.pem", "--script", world.folder + "/plans.json"],
                                               outputFolder: world.folder)
        defer {
            if simulator.isRunning { simulator.send(SIGTERM) }
            _ = simulator.wait()
        }
        var api: String?
        _ = eventually(within: 20) {
            api = ((try? String(contentsOfFile: simulator.stdoutPath, encoding: .utf8)) ?? "").split(separator: "\n")
                .first { $0.hasPrefix("huawei.api_url: ") }.map { String($0.dropFirst("huawei.api_url: ".count)) }
            return api != nil
        }
        let base = try XCTUnwrap(api, (try? String(contentsOfFile: simulator.stderrPath, encoding: .utf8)) ?? "")
        let banner = try String(contentsOfFile: simulator.stdoutPath, encoding: .utf8)
        XCTAssertTrue(banner.contains("huawei.app_id: 10000001") && banner.contains("scripted: 1 Huawei order,"),
                      banner)
        let mode = try FileManager.default.attributesOfItem(atPath: world.folder + "/huawei-iap.p8")[.posixPermissions] as? Int
        XCTAssertEqual(mode, 0o600)
        try world.writeConfig(overrides: [
            ("products", .object([("coins_500", .object([("type", .string("consumable")), ("store", .string("huawei")),
                                                         ("grant", .object([("coins", .number(500))]))]))])),
            ("user_binding", .object([("app_account_token", .string("user_id"))])),
            ("huawei", .object([("app_id", .string("10000001")), ("issuer_id", .string("simulator-issuer")),
                                ("key_id", .string("simulator-key")), ("private_key_file", .string("huawei-iap.p8")),
                                ("root_certificates", .array([.string("huawei-root.pem")])), ("api_url", .string(base))])),
        ])
        let proof = #"{"purchaseOrderId": "1701.A.1", "purchaseToken": "\#(token)"}"#
        try settle(expecting: 0, ["enqueue", "--store", "huawei", "--order", "o-1001", "--user", "u-42", "--product", "coins_500",
                                  "--proof-file", "-"], stdin: Data(proof.utf8))
        try settle(expecting: 0, ["reconcile"])
        XCTAssertEqual(try state("o-1001"), "finished")
        XCTAssertEqual(world.deliveries, ["1701.A.1 o-1001"])
        XCTAssertEqual(try history("o-1001").last?["outcome"], .string("shipped_confirmed"))
        let shown = try settle(expecting: 0, ["status", "o-1001"]).stdout
        XCTAssertTrue(shown.contains("finished") && shown.contains("1701.A.1"), shown)
        XCTAssertFalse(transcript.joined().contains(token), "the purchase token is a secret")

        // The same proof from another user is refused: the purchase names u-42.
        try settle(expecting: 0, ["enqueue", "--store", "huawei", "--order", "o-1002", "--user", "u-7", "--product", "coins_500",
                                  "--proof-file", "-"], stdin: Data(proof.utf8))
        try settle(expecting: 0, ["reconcile"])
        XCTAssertEqual(try order("o-1002")["reason"], .string("user_mismatch"))
        XCTAssertEqual(world.deliveries.count, 1)
    }

    /// `settle simulator --huawei-key` serves HMS IAP too: its secret and public key are written
    /// beside the key, and a scripted HMS purchase is granted and confirmed.
    func testSimulator_servesHMSIAP_andSettleGrantsAndConfirmsAScriptedPurchase() throws {
        let token = "hms-simulated-token-0123456789"
        let purchase = JSONValue.object([("orderId", .string("HMS.SIM.1")), ("purchaseToken", .string(token)),
                                         ("productId", .string("coins_500")), ("purchaseState", .number(0)), ("kind", .number(0)),
                                         ("purchaseTime", .number((world.time.unixSeconds - 60) * 1000)), ("developerPayload", .string("u-42"))])
        try world.write("plans.json", JSONValue.object([("huawei", .object([("hms_purchases", .array([purchase]))]))]).serialized())
        let key = world.folder + "/huawei-iap.p8"
        let simulator = try SettleBinary.start(["simulator", "--huawei-key", key, "--script", world.folder + "/plans.json"],
                                               outputFolder: world.folder)
        defer {
            if simulator.isRunning { simulator.send(SIGTERM) }
            _ = simulator.wait()
        }
        var banner = ""
        _ = eventually(within: 20) {
            banner = (try? String(contentsOfFile: simulator.stdoutPath, encoding: .utf8)) ?? ""
            return banner.contains("huawei.hms.token_url: ")
        }
        func value(_ name: String) throws -> String {
            try XCTUnwrap(banner.split(separator: "\n").first { $0.hasPrefix(name + ": ") }.map { String($0.dropFirst(name.count + 2)) }, banner)
        }
        let mode = try FileManager.default.attributesOfItem(atPath: key + ".hms-secret")[.posixPermissions] as? Int
        XCTAssertEqual(mode, 0o600)
        try world.writeConfig(overrides: [
            ("products", .object([("coins_500", .object([("type", .string("consumable")), ("store", .string("huawei"))]))])),
            ("user_binding", .object([("app_account_token", .string("user_id"))])),
            ("huawei", .object([("app_id", .string("10000001")), ("hms", .object([
                ("client_secret_file", .string(key + ".hms-secret")), ("public_key_file", .string(key + ".hms-public-key")),
                ("order_url", .string(try value("huawei.hms.order_url"))), ("apptouch_order_url", .string(try value("huawei.hms.apptouch_order_url"))),
                ("token_url", .string(try value("huawei.hms.token_url"))),
                ("subscription_url", .string(try value("huawei.hms.subscription_url"))),
            ]))])),
        ])
        let proof = #"{"purchaseToken": "\#(token)", "productId": "coins_500"}"#
        try settle(expecting: 0, ["enqueue", "--store", "huawei", "--order", "o-hms", "--user", "u-42", "--product", "coins_500",
                                  "--proof-file", "-"], stdin: Data(proof.utf8))
        try settle(expecting: 0, ["reconcile"])
        XCTAssertEqual(try state("o-hms"), "finished")
        XCTAssertEqual(world.deliveries, ["HMS.SIM.1 o-hms"])
        XCTAssertEqual(try history("o-hms").last?["outcome"], .string("confirmed"))
    }

    func testDemo_recoversAHuaweiPurchase_confirmsItShipped_andRefusesAnotherAccounts() throws {
        let tmp = world.folder + "/tmp"
        try FileManager.default.createDirectory(atPath: tmp, withIntermediateDirectories: false)
        let result = try settleWithoutConfig(["demo"], environment: ["TMPDIR": tmp], workingDirectory: tmp)
        XCTAssertEqual(result.status, 0, result.stderr)
        for line in ["1764000001.HW.0001 o-4001", "1764000002.HW.0002 o-4002", "o-4001 1764000001.HW.0001: confirmed as shipped",
                     "o-4003 1764000003.HW.0003: not confirmed"] {
            XCTAssertTrue(result.stdout.contains(line), "\(line) missing:\n\(result.stdout)")
        }
        XCTAssertTrue(result.stdout.contains("o-4003") && result.stdout.contains("user_mismatch"), result.stdout)
        XCTAssertFalse(result.stdout.contains("1764000003.HW.0003 o-4003"), "another account's purchase was granted")
        XCTAssertFalse(result.stdout.contains("demo-hw-token-"), "the demo printed a purchase token")
    }
}
