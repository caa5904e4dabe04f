import Foundation
import SettleBase
import SettleModel
import SettleEngine
import SettleOneStore
import SettleOneStoreSimulator

/// ONE store's part of `settle demo`: a fake ONE store API V7 with a throwaway client secret and
/// license key; gems the app never delivered, recovered and consumed before ONE store's
/// three-day refund, and a purchase the app already consumed, left to a person.
package final class OneStoreDemo: DemoChapter {
    package static let synopsis = """
        ONE store: a fake ONE store (Korea) with a throwaway client secret; gems recovered and consumed before
        the three-day refund, and a purchase the app consumed itself set aside for a person.
        """

    static let gems = "os_gems_100"
    let fake: FakeOneStore
    let server: LoopbackHTTPServer
    let proofs: [String: OneStoreProof]

    package init(_ setting: DemoSetting) throws(DemoFailure) {
        let (folder, time) = (setting.folder, setting.time)
        let secret = "demo-one-store-secret"
        let fake: FakeOneStore
        do {
            let key = try RSAPrivateKey(pem: RSAPrivateKey.generatePEM())
            guard
                FileManager.default.createFile(
                    atPath: folder + "/one-store-secret", contents: Data(secret.utf8),
                    attributes: [.posixPermissions: 0o600]),
                FileManager.default.createFile(
                    atPath: folder + "/one-store-license.txt",
                    contents: Data((key.subjectPublicKeyInfo.base64EncodedString() + "\n").utf8))
            else {
                throw DemoFailure(.io, "cannot write the demo's ONE store secret in \(folder)")
            }
            fake = FakeOneStore(
                clientId: "0000000001", clientSecret: secret, packageName: setting.bundleId, licenseKey: key, time: time
            )
        } catch let failure as DemoFailure {
            throw failure
        } catch {
            throw DemoFailure(.io, "cannot make the demo's ONE store key: \(error)")
        }
        let server: LoopbackHTTPServer
        do {
            server = try LoopbackHTTPServer { fake.handle($0) }
        } catch {
            throw DemoFailure(.unavailable, "cannot start the fake ONE store on 127.0.0.1: \(error)")
        }
        let bought = (time.unixSeconds - 1800) * 1000
        var proofs: [String: OneStoreProof] = [:]
        for (order, user, id) in [
            ("o-5001", "u-80", "17070421461015116001"), ("o-5002", "u-81", "17070421461015116002"),
        ] {
            let proof = OneStoreProof(
                productId: Self.gems, purchaseToken: "demo-os-token-\(order)-" + UUID().uuidString, purchaseId: id)
            proofs[order] = proof
            var purchase = FakeOneStore.Purchase(
                productId: Self.gems, token: proof.purchaseToken, purchaseId: id, purchaseTimeMs: bought,
                developerPayload: user)
            if order == "o-5002" { purchase.consumptionState = 1 }
            fake.script(purchase)
        }
        (self.fake, self.server, self.proofs) = (fake, server, proofs)
    }

    package var headline: String? { "ONE store (fake) at \(server.baseURL)" }
    package var files: [String] { ["one-store-secret", "one-store-license.txt"] }

    package var sections: [(String, JSONValue)] {
        [
            (
                "one_store",
                .object([
                    ("client_id", .string("0000000001")), ("package_name", .string(fake.packageName)),
                    ("client_secret_file", .string("one-store-secret")),
                    ("license_key_file", .string("one-store-license.txt")),
                    ("market_code", .string("MKT_ONE")), ("api_url", .string(server.baseURL + "/commercial")),
                    ("sandbox_url", .string(server.baseURL + "/sandbox")),
                ])
            )
        ]
    }

    package var products: [(String, JSONValue)] {
        [
            (
                Self.gems,
                .object([
                    ("type", .string("consumable")), ("store", .string("one_store")),
                    ("grant", .object([("gems", .number(100))])),
                ])
            )
        ]
    }

    package func orders(now: Date) -> [NewOrder] {
        [("o-5001", "u-80"), ("o-5002", "u-81")].map { id, user in
            var order = NewOrder(
                orderId: id, userId: user, productId: Self.gems, appAccountToken: user, store: .oneStore)
            order.storeProof = proofs[id]!.storeProof
            return order
        }
    }

    package func afterPasses(_ stage: DemoStage) {
        var lines = ["ONE store (fake, at \(server.baseURL)):"]
        for order in ["o-5001", "o-5002"] {
            guard let proof = proofs[order], let purchase = fake.purchase(token: proof.purchaseToken) else { continue }
            lines.append(
                "  \(order) \(proof.purchaseId): " + (purchase.consumptionState == 1 ? "consumed" : "not consumed")
                    + (fake.finishes.contains("consume \(proof.purchaseId)")
                        ? " (by settle, before the three-day refund)" : " (by the app)"))
        }
        stage.print(lines.joined(separator: "\n") + "\n")
    }

    package func stop() { server.stop() }
}
