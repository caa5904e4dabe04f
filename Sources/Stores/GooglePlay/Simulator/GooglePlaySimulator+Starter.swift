import Foundation
import SettleBase
import SettleGooglePlay
import SettleSimulator

/// Google Play's part of `settle simulator --init`'s folder: the fake Google on its own port,
/// a throwaway service account key (`play-service-account.json`, mode 600) that the simulator
/// accepts once given the folder's settle.json, and one consumable bought by user u-42
/// (its obfuscated account id), scripted in Google's JSON as docs/google-play.md documents it;
/// its purchase token (a bearer secret) in `play-token.txt`, mode 600.
extension GooglePlaySimulator {
    package static let starterOrder = "o-1002"

    package static func starterKit(_ request: StarterRequest) throws -> StarterKit? {
        let base = "http://127.0.0.1:\(request.port)"
        let product = "gems_100"
        let token = "sim-play-token-" + UUID().uuidString.lowercased()
        let boughtMs = Int64((request.now.timeIntervalSince1970 - 60) * 1000)
        let key = ServiceAccountKey.document(clientEmail: "settle-simulator@example-project.iam.gserviceaccount.com",
                                             privateKeyId: "simulator-key",
                                             privateKeyPEM: try RSAPrivateKey.generatePEM(), tokenURI: base + "/token")
        var kit = StarterKit()
        kit.configuration = [("google_play", .object([
            ("package_name", .string(request.bundleId)), ("service_account_file", .string("play-service-account.json")),
            ("api_url", .string(base)), ("token_url", .string(base + "/token")),
        ]))]
        kit.products = [(product, .object([("type", .string("consumable")), ("store", .string("google_play")),
                                           ("grant", .object([("gems", .number(100))]))]))]
        kit.plans = [("google_play", .object([("products", .array([.object([
            ("purchase_token", .string(token)),
            ("purchase", .object([("purchaseState", .number(0)), ("orderId", .string("GPA.3300-0000-0000-00001")),
                                  ("productId", .string(product)), ("purchaseTimeMillis", .string(String(boughtMs))),
                                  ("acknowledgementState", .number(0)),
                                  ("obfuscatedExternalAccountId", .string("u-42"))])),
        ])]))]))]
        kit.files = [.secret("play-service-account.json", key.serialized(pretty: true) + "\n"),
                     .secret("play-token.txt", token + "\n")]
        kit.orders = [(starterOrder, ["--store", "google_play", "--order", starterOrder, "--user", "u-42",
                                      "--product", product, "--app-account-token", "u-42",
                                      "--purchase-token-file", request.shown("play-token.txt")])]
        return kit
    }
}
