import Foundation
import SettleBase
import SettleModel
import SettleEngine
import SettleHuawei
import SettleHuaweiSimulator

/// Huawei AppGallery's part of `settle demo`: a fake HarmonyOS IAP Kit on loopback signing with
/// the simulator's test chain, a throwaway IAP key, and Huawei orders: a batch of coins the app
/// never delivered, a subscription, and a purchase another account made.
package final class HuaweiDemo: DemoChapter {
    package static let synopsis = """
        Huawei AppGallery: a fake HarmonyOS IAP Kit signing with a test chain and a throwaway IAP key;
        coins bought three at a time recovered and confirmed as shipped, a subscription, and another
        account's purchase refused.
        """

    static let appId = "10000001"
    static let coins = "hw_coins_500"
    static let monthly = "hw_vip_monthly"
    static let orderIds = [
        "o-4001": "1764000001.HW.0001", "o-4002": "1764000002.HW.0002", "o-4003": "1764000003.HW.0003",
    ]

    let fake: FakeHuawei
    let server: LoopbackHTTPServer
    /// Proofs by order id: their tokens are secrets, never printed.
    let proofs: [String: HuaweiProof]

    /// Starts the fake IAP Kit, writes the IAP key and the test root next to the configuration,
    /// and scripts three coin packs bought at once by u-70, a monthly subscription of u-71, and
    /// coins that another account (u-99) bought, which u-72's order names.
    package init(_ setting: DemoSetting) throws(DemoFailure) {
        let (folder, time) = (setting.folder, setting.time)
        let fake: FakeHuawei
        do {
            let pem = try ES256PrivateKey.generatePEM()
            guard
                FileManager.default.createFile(
                    atPath: folder + "/huawei-iap.p8", contents: Data(pem.utf8),
                    attributes: [.posixPermissions: 0o600]),
                FileManager.default.createFile(
                    atPath: folder + "/huawei-root.pem", contents: Data(HuaweiSimulatorChain.rootPEM.utf8))
            else {
                throw DemoFailure(.io, "cannot write the demo's Huawei IAP key and root in \(folder)")
            }
            fake = try FakeHuawei(appId: Self.appId, publicKey: try ES256PrivateKey(pem: pem).publicKey, time: time)
        } catch let failure as DemoFailure {
            throw failure
        } catch {
            throw DemoFailure(.io, "cannot make the demo's Huawei IAP key: \(error)")
        }
        let server: LoopbackHTTPServer
        do {
            server = try LoopbackHTTPServer { fake.handle($0) }
        } catch {
            throw DemoFailure(.unavailable, "cannot start the fake Huawei AppGallery on 127.0.0.1: \(error)")
        }
        let bought = (time.unixSeconds - 900) * 1000
        var proofs: [String: HuaweiProof] = [:]
        for (order, purchaseOrderId) in Self.orderIds {
            proofs[order] = HuaweiProof(
                purchaseOrderId: purchaseOrderId, purchaseToken: "demo-hw-token-\(order)-" + UUID().uuidString)
        }
        func purchase(_ order: String, product: String, type: String, payload: String, quantity: Int = 1) -> JSONValue {
            HuaweiScript.completed(
                .object([
                    ("purchaseOrderId", .string(proofs[order]!.purchaseOrderId)),
                    ("purchaseToken", .string(proofs[order]!.purchaseToken)),
                    ("productId", .string(product)), ("productType", .string(type)), ("purchaseTime", .number(bought)),
                    ("quantity", .number(quantity)), ("developerPayload", .string(payload)), ("price", .number(600)),
                    ("currency", .string("CNY")), ("finishStatus", .string("2")),
                ]), appId: Self.appId)
        }
        fake.script(order: purchase("o-4001", product: Self.coins, type: "0", payload: "u-70", quantity: 3))
        fake.script(
            subscription: FakeHuawei.Subscription(
                subscriptionId: "1764000002.HWSUB.0002", purchaseToken: proofs["o-4002"]!.purchaseToken, status: "1",
                expiresTimeMs: bought + 30 * 86_400_000,
                orders: [
                    FakeHuawei.setting(
                        purchase("o-4002", product: Self.monthly, type: "2", payload: "u-71"),
                        [("subscriptionId", .string("1764000002.HWSUB.0002"))])
                ]))
        fake.script(order: purchase("o-4003", product: Self.coins, type: "0", payload: "u-99"))
        (self.fake, self.server, self.proofs) = (fake, server, proofs)
    }

    package var headline: String? { "Huawei IAP Kit (fake) at \(server.baseURL)" }

    package var files: [String] { ["huawei-iap.p8", "huawei-root.pem"] }

    /// The configuration's `huawei` section.
    package var sections: [(String, JSONValue)] {
        [
            (
                "huawei",
                .object([
                    ("app_id", .string(Self.appId)), ("issuer_id", .string("demo-issuer")),
                    ("key_id", .string("demo-key")),
                    ("private_key_file", .string("huawei-iap.p8")),
                    ("root_certificates", .array([.string("huawei-root.pem")])),
                    ("api_url", .string(server.baseURL)),
                ])
            )
        ]
    }

    package var products: [(String, JSONValue)] {
        [
            (
                Self.coins,
                .object([
                    ("type", .string("consumable")), ("store", .string("huawei")),
                    ("grant", .object([("coins", .number(500))])),
                ])
            ),
            (Self.monthly, .object([("type", .string("auto_renewable")), ("store", .string("huawei"))])),
        ]
    }

    /// The backend stores each user's developer payload with the order.
    package func orders(now: Date) -> [NewOrder] {
        [("o-4001", "u-70", Self.coins), ("o-4002", "u-71", Self.monthly), ("o-4003", "u-72", Self.coins)].map {
            id, user, product in
            var order = NewOrder(orderId: id, userId: user, productId: product, appAccountToken: user, store: .huawei)
            order.storeProof = proofs[id]!.storeProof
            return order
        }
    }

    package func afterPasses(_ stage: DemoStage) {
        let confirmed = fake.confirmed
        var lines = ["Huawei AppGallery (fake, at \(server.baseURL)):"]
        for order in ["o-4001", "o-4002", "o-4003"] {
            guard let id = proofs[order]?.purchaseOrderId else { continue }
            lines.append("  \(order) \(id): " + (confirmed.contains(id) ? "confirmed as shipped" : "not confirmed"))
        }
        stage.print(lines.joined(separator: "\n") + "\n")
    }

    package func stop() {
        server.stop()
    }
}
