import SettleBase
import SettleModel
import SettleConfig

extension Configuration {
    /// The `google_play` section as its decoder left it (`ConfigurationSection.googlePlay`);
    /// absent means settle verifies no Google Play purchase.
    package var googlePlay: GooglePlayConfiguration? {
        get { storeSetting(ConfigurationSection.googlePlayKey) }
        set { storeSettings[ConfigurationSection.googlePlayKey] = newValue }
    }
}

extension ConfigurationSection {
    static let googlePlayKey = "google_play"

    /// `google_play`: decoded here, then checked against the rest of the configuration: its
    /// products need it, and its pushes arrive on the notifications listener on a path of their own.
    package static let googlePlay = ConfigurationSection(
        key: googlePlayKey,
        decode: { (object, decoder) throws(ConfigError) in try decoder.decodeGooglePlay(object) },
        check: { (configuration) throws(ConfigError) in try checkGooglePlay(configuration) })

    private static func checkGooglePlay(_ configuration: Configuration) throws(ConfigError) {
        let googlePlay = configuration.googlePlay
        let products = configuration.products
        if googlePlay == nil, let play = products.first(where: { $0.value.stores.contains(.googlePlay) }) {
            throw ConfigError("products.\(play.key).store: a google_play product needs the google_play section")
        }
        if let path = googlePlay?.notificationsPath {
            let notifications = configuration.notifications
            if notifications == nil {
                throw ConfigError("google_play.notifications_path: pushes arrive on the notifications listener; "
                                  + "configure notifications.listen")
            }
            if path == notifications?.path {
                throw ConfigError("google_play.notifications_path: must differ from notifications.path (Apple's)")
            }
        }
    }
}
