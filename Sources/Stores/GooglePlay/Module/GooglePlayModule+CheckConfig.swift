import SettleConfig
import SettleEngine
import SettleGooglePlay

/// `settle check-config` reads the service account key and the push key file, as the daemon
/// would at start.
extension GooglePlayModule {
    package static func readSecrets(_ configuration: Configuration) throws(ConfigError) {
        _ = try configuration.googlePlay?.loadServiceAccountKey()
        _ = try configuration.googlePlay?.loadPushKeyFile()
    }
}

/// What `settle check-config` prints of the `google_play` section: the service account key by
/// its file only, URLs without credentials.
extension GooglePlayModule {
    package static func describe(_ c: Configuration) -> [String] {
        guard let play = c.googlePlay else { return [] }
        let url = ConfigurationText.url, n = ConfigurationText.number
        var lines = ["google_play: package \(play.packageName), service account key \(play.serviceAccountFile.path) (contents redacted), "
                     + "api \(url(play.apiURL)), token \(url(play.tokenURL)), voided purchases every \(n(play.voidedPollIntervalSeconds)) s",
                     "google_play.rate_limits: " + ConfigurationText.rates(descriptor.publishedRates, play.rateLimits) + " (requests a second)"]
        if let path = play.notificationsPath, let push = play.push {
            lines.append("google_play notifications: POST \(path), audience \(push.audience), push account \(push.serviceAccountEmail), "
                         + "keys \(url(push.jwksURL))" + (push.jwksFile.map { ", else \($0)" } ?? ""))
        }
        return lines
    }
}
