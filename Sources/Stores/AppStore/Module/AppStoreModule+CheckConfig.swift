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
