import Foundation
import SettleModel
import SettleAppStore
import SettleConfig
import SettleEngine

/// `settle check-config` reads the shared secret, the private key and the roots it verifies
/// StoreKit's signatures with, as the daemon would at start.
extension AppStoreModule {
    package static func readSecrets(_ configuration: Configuration) throws(ConfigError) {
        _ = try configuration.receiptAPI?.sharedSecretFile.read()
        _ = try configuration.serverAPI?.loadPrivateKey()
        if configuration.receiptAPI != nil || configuration.serverAPI != nil { _ = try configuration.storeKitRoots() }
    }
}

/// What `settle check-config` prints of the App Store's sections: every setting, the secrets by
/// their files only.
extension AppStoreModule {
    package static func describe(_ c: Configuration) -> [String] {
        var lines: [String] = []
        if let r = c.receiptAPI {
            lines += ["receipt_api.production_url: \(r.productionURL)", "receipt_api.sandbox_url: \(r.sandboxURL)",
                      "receipt_api.shared_secret_file: \(r.sharedSecretFile.path) (contents redacted)",
                      "receipt_api.rate_limits: " + ConfigurationText.rates(descriptor.learnedRates, r.rateLimits)
                        + " (a ceiling in production: the rate is learned from Apple's 429s)"]
        }
        if let s = c.serverAPI {
            let sandbox = descriptor.environmentRateFractions[AppleEnvironment.sandbox.rawValue] ?? 1
            lines += ["server_api.production_url: \(s.productionURL)", "server_api.sandbox_url: \(s.sandboxURL)",
                      "server_api.issuer_id: \(s.issuerId)", "server_api.key_id: \(s.keyId)",
                      "server_api.private_key_file: \(s.privateKeyFile.path) (contents redacted)",
                      "server_api.root_certificates: \(s.rootCertificates.joined(separator: ", "))",
                      "server_api.receipt_root_certificates: \(s.receiptRootCertificates.joined(separator: ", "))",
                      "server_api.rate_limits: " + ConfigurationText.rates(descriptor.publishedRates, s.rateLimits)
                        + " (requests a second in production; sandbox at \(ConfigurationText.number(sandbox * 100)) %)"]
        } else {
            lines.append("StoreKit 2 root: \((c.sourcePath as NSString).deletingLastPathComponent)/AppleRootCA-G3.pem")
        }
        return lines
    }
}
