import Foundation
import SettleBase
import SettleSimulator

/// The App Store's part of `settle simulator --init`'s folder: verifyReceipt and the Server
/// API on the first port, a fresh shared secret and Server API key (mode 600) that the
/// simulator accepts once given the folder's settle.json, the simulator's root as the
/// StoreKit root (`sim-root.pem`: trust it in a TEST configuration only), and one consumable
/// bought with a receipt (`receipt.b64`), scripted as plans.json's `receipts` documents it.
extension AppStoreSimulator {
    package static let starterOrder = "o-1001"
    package static let starterTransaction = "1000000000000001"

    package static func starterKit(_ request: StarterRequest) throws -> StarterKit? {
        let base = "http://127.0.0.1:\(request.port)"
        let product = request.bundleId + ".coins100"
        // Test values, fresh for each folder: a secret the docs print is no secret.
        let secret = "sim-shared-secret-" + UUID().uuidString.lowercased()
        let receipt = Data("settle simulator --init example receipt \(UUID().uuidString)".utf8).base64EncodedString()
        let boughtMs = Int64((request.now.timeIntervalSince1970 - 60) * 1000)
        var kit = StarterKit()
        kit.configuration = [
            ("receipt_api", .object([("production_url", .string(base + "/production/verifyReceipt")),
                                     ("sandbox_url", .string(base + "/sandbox/verifyReceipt")),
                                     ("shared_secret_file", .string("shared-secret"))])),
            ("server_api", .object([("production_url", .string(base + "/production")),
                                    ("sandbox_url", .string(base + "/sandbox")),
                                    ("issuer_id", .string("00000000-0000-0000-0000-000000000000")),
                                    ("key_id", .string("SIMULATOR1")),
                                    ("private_key_file", .string("appstore-key.p8")),
                                    ("root_certificates", .array([.string("sim-root.pem")]))])),
        ]
        kit.products = [(product, .object([("type", .string("consumable")),
                                           ("grant", .object([("coins", .number(100))]))]))]
        kit.plans = [("receipts", .array([.object([
            ("receipt_data", .string(receipt)), ("environment", .string("Production")),
            ("in_app", .array([.object([("product_id", .string(product)),
                                        ("transaction_id", .string(starterTransaction)),
                                        ("purchase_date_ms", .number(boughtMs))])])),
        ])])),
            // The Server API knows it too, as Apple does: Finish Transaction, after the grant, finds it.
            ("transactions", .array([.object([("transaction_id", .string(starterTransaction)),
                                              ("product_id", .string(product)), ("environment", .string("Production")),
                                              ("purchase_date_ms", .number(boughtMs))])])),
        ]
        kit.files = [
            .secret("shared-secret", secret + "\n"),
            .secret("appstore-key.p8", try ES256PrivateKey.generatePEM()),
            StarterFile("sim-root.pem", SimulatorSigningChain.rootPEM),
            StarterFile("receipt.b64", receipt),
        ]
        kit.orders = [(starterOrder, ["--order", starterOrder, "--user", "u-42", "--product", product,
                                      "--receipt-file", request.shown("receipt.b64")])]
        return kit
    }
}
