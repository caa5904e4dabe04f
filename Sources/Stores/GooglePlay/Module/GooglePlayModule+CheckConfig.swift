import SettleConfig
import SettleGooglePlay
import SettleEngine

/// `settle check-config` reads the service account key and the push key file, as the daemon
/// would at start.
extension GooglePlayModule {
    package static func readSecrets(_ configuration: Configuration) throws(ConfigError) {
        _ = try configuration.googlePlay?.loadServiceAccountKey()
        _ = try configuration.googlePlay?.loadPushKeyFile()
    }
}
