import Foundation
import SettleBase
import SettleModel
import SettleEngine
import SettleAppStoreSimulator

/// The App Store's part of `settle demo`: the Apple simulator (verifyReceipt and the App Store
/// Server API) on loopback with a throwaway App Store Connect key, receipts and StoreKit 2
/// transactions of every kind, then Apple's notifications and a family member's shared purchase.
package final class AppStoreDemo: DemoChapter {
    package static let synopsis = """
    The App Store: a local Apple simulator (verifyReceipt and the App Store Server API) with a
    throwaway App Store Connect key; orders valid, sandbox, refunded, forged, a transaction
    already granted to another order, Apple briefly unavailable, StoreKit 2 signed transactions
    and bare transaction ids; then App Store Server Notifications and a family member's purchase.
    """

    static let issuerId = "demo-issuer"
    static let keyId = "DEMOKEY001"

    let simulator: AppleSimulator
    let bundleId: String

    package init(_ setting: DemoSetting) throws(DemoFailure) {
        bundleId = setting.bundleId
        let folder = setting.folder
        let secret = "demo-shared-secret-\(UInt64.random(in: 0..<UInt64.max))"
        let keyPEM: String
        let credentials: ServerAPICredentials
        do {
            keyPEM = try ES256PrivateKey.generatePEM()
            credentials = ServerAPICredentials(issuerId: Self.issuerId, keyId: Self.keyId, bundleId: bundleId,
                                               publicKey: try ES256PrivateKey(pem: keyPEM).publicKey)
        } catch {
            throw DemoFailure(.io, "cannot make the demo's App Store Connect key: \(error)")
        }
        do {
            simulator = try AppleSimulator(sharedSecret: secret, credentials: credentials, time: setting.time)
        } catch {
            throw DemoFailure(.unavailable, "cannot start the Apple simulator on 127.0.0.1: \(error)")
        }
        let fm = FileManager.default
        let ok = fm.createFile(atPath: folder + "/shared-secret", contents: Data(secret.utf8), attributes: [.posixPermissions: 0o600])
            && fm.createFile(atPath: folder + "/appstore-key.p8", contents: Data(keyPEM.utf8), attributes: [.posixPermissions: 0o600])
            && fm.createFile(atPath: folder + "/simulator-root.pem", contents: Data(SimulatorSigningChain.rootPEM.utf8))
        guard ok else {
            simulator.stop()
            throw DemoFailure(.io, "cannot write the demo's files in \(folder)")
        }
    }

    package var headline: String? {
        "Apple simulator at \(simulator.productionURL.replacingOccurrences(of: "/production/verifyReceipt", with: ""))"
    }

    package var files: [String] { ["shared-secret", "appstore-key.p8", "simulator-root.pem"] }

    package var sections: [(String, JSONValue)] {
        [
            ("receipt_api", .object([
                ("production_url", .string(simulator.productionURL)),
                ("sandbox_url", .string(simulator.sandboxURL)),
                ("shared_secret_file", .string("shared-secret")),
            ])),
            ("server_api", .object([
                ("production_url", .string(simulator.serverProductionURL)),
                ("sandbox_url", .string(simulator.serverSandboxURL)),
                ("issuer_id", .string(Self.issuerId)),
                ("key_id", .string(Self.keyId)),
                ("private_key_file", .string("appstore-key.p8")),
                ("root_certificates", .array([.string("simulator-root.pem")])),
                // The demo's receipts go to the simulated verifyReceipt; this anchors any read locally.
                ("receipt_root_certificates", .array([.string("simulator-root.pem")])),
            ])),
            ("notifications", .object([("listen", .string("127.0.0.1:0"))])),
            ("consumption", .object([("respond", .bool(true)), ("customer_consented", .bool(true)),
                                     ("refund_preference", .string("DECLINE"))])),
        ]
    }

    package var products: [(String, JSONValue)] {
        [
            ("com.example.game.coins100", .object([("type", .string("consumable")), ("grant", .object([("coins", .number(100))]))])),
            ("com.example.game.premium", .object([("type", .string("non_consumable"))])),
            ("com.example.game.monthly", .object([("type", .string("auto_renewable"))])),
        ]
    }

    /// The order whose first verification met an Apple outage, as status shows it.
    package func afterPasses(_ stage: DemoStage) throws {
        if let text = try stage.orderText("o-1005", false) {
            stage.print("o-1005, whose first verification met an Apple outage:\n")
            stage.print(text)
        }
    }

    package func laterActs(_ stage: DemoStage) throws {
        try showNotifications(stage)
        try showAppleAccounts(stage)
    }

    package func stop() {
        simulator.stop()
    }
}
