import Foundation
import SettleBase
import SettleModel
import SettleEngine
import SettleGooglePlay
import SettleGooglePlaySimulator

/// Google Play's part of `settle demo`: a fake Google (token endpoint, purchases, acknowledge,
/// consume) on loopback, a throwaway service account key, and Play orders of each kind.
package final class GooglePlayDemo: DemoChapter {
    package static let synopsis = """
    Google Play: a fake Google Play with a throwaway service account key; purchases consumed,
    already acknowledged and pending.
    """

    static let packageName = "com.example.game"
    static let serviceAccountEmail = "settle-demo@example-project.iam.gserviceaccount.com"
    static let gems = "gems_100"
    static let unlock = "premium_unlock"

    let fake: FakeGooglePlay
    let server: LoopbackHTTPServer
    /// Purchase tokens by order id: secrets, never printed.
    let tokens: [String: String]

    /// Starts the fake Google, writes the service account key next to the configuration and
    /// scripts a consumable bought by u-60, a non-consumable already acknowledged by the app
    /// (u-61), and a purchase still pending payment (u-62).
    package init(_ setting: DemoSetting) throws(DemoFailure) {
        let (folder, time) = (setting.folder, setting.time)
        let packageName = Self.packageName, gems = Self.gems, unlock = Self.unlock
        let fake: FakeGooglePlay
        do {
            let pem = try RSAPrivateKey.generatePEM()
            let document = ServiceAccountKey.document(clientEmail: Self.serviceAccountEmail, privateKeyId: "demo-key",
                                                      privateKeyPEM: pem, tokenURI: "https://oauth2.googleapis.com/token")
            guard FileManager.default.createFile(atPath: folder + "/play-service-account.json", contents: document.data,
                                                 attributes: [.posixPermissions: 0o600]) else {
                throw DemoFailure(.io, "cannot write the demo's service account key in \(folder)")
            }
            fake = FakeGooglePlay(packageName: packageName, serviceAccount: try ServiceAccountKey(json: document.data),
                                  pushKey: try RSAPrivateKey(pem: RSAPrivateKey.generatePEM()), time: time)
        } catch let failure as DemoFailure {
            throw failure
        } catch {
            throw DemoFailure(.io, "cannot make the demo's service account key: \(error)")
        }
        let server: LoopbackHTTPServer
        do {
            server = try LoopbackHTTPServer { fake.handle($0) }
        } catch {
            throw DemoFailure(.unavailable, "cannot start the fake Google Play on 127.0.0.1: \(error)")
        }
        fake.expectTokenURL(server.baseURL + "/token")
        let bought = (time.unixSeconds - 600) * 1000
        var tokens: [String: String] = [:]
        func script(_ order: String, product: String, googleOrder: String, state: Int, account: String, acknowledged: Bool = false) {
            let token = "demo-token-\(order)-" + UUID().uuidString
            tokens[order] = token
            fake.script(product: token, ProductPurchase(rawPurchaseState: state, rawAcknowledgementState: acknowledged ? 1 : 0,
                                                        orderId: googleOrder, productId: product, purchaseTimeMillis: bought,
                                                        obfuscatedExternalAccountId: account))
        }
        script("o-3001", product: gems, googleOrder: "GPA.3301-0001-0001-00001", state: 0, account: "u-60")
        script("o-3002", product: unlock, googleOrder: "GPA.3301-0002-0002-00002", state: 0, account: "u-61", acknowledged: true)
        script("o-3003", product: gems, googleOrder: "GPA.3301-0003-0003-00003", state: 2, account: "u-62")
        self.fake = fake
        self.server = server
        self.tokens = tokens
    }

    package var files: [String] { ["play-service-account.json"] }

    /// The configuration's `google_play` section.
    package var sections: [(String, JSONValue)] {
        [("google_play", .object([
            ("package_name", .string(Self.packageName)),
            ("service_account_file", .string("play-service-account.json")),
            ("api_url", .string(server.baseURL)),
            ("token_url", .string(server.baseURL + "/token")),
        ]))]
    }

    /// Its products, sold on Google Play only.
    package var products: [(String, JSONValue)] {
        [(Self.gems, .object([("type", .string("consumable")), ("store", .string("google_play")),
                              ("grant", .object([("gems", .number(100))]))])),
         (Self.unlock, .object([("type", .string("non_consumable")), ("store", .string("google_play"))]))]
    }

    /// The backend stores each user's account id with the order (`user_binding.app_account_token: "order"`).
    package func orders(now: Date) -> [NewOrder] {
        [("o-3001", "u-60", Self.gems), ("o-3002", "u-61", Self.unlock), ("o-3003", "u-62", Self.gems)].map { id, user, product in
            NewOrder(orderId: id, userId: user, productId: product, appAccountToken: user, store: .googlePlay,
                     purchaseToken: PurchaseToken(tokens[id]!))
        }
    }

    /// What Google was told, in words, once the orders were reconciled.
    package func afterPasses(_ stage: DemoStage) {
        stage.print(summary() + "\n")
    }

    package func stop() {
        server.stop()
    }

    /// What Google was told, in words.
    func summary() -> String {
        var lines = ["Google Play (fake, at \(server.baseURL)):"]
        for order in ["o-3001", "o-3002", "o-3003"] {
            guard let token = tokens[order], let purchase = fake.product(token) else { continue }
            let finish = purchase.consumptionState == .consumed ? "consumed"
                : purchase.acknowledgementState == .acknowledged ? "acknowledged" : "not acknowledged"
            let state = purchase.purchaseState == .pending ? "pending payment" : "purchased"
            lines.append("  \(order) \(purchase.orderId ?? "-") (\(PurchaseToken(token)!.fingerprint)): \(state), \(finish)")
        }
        return lines.joined(separator: "\n")
    }
}
