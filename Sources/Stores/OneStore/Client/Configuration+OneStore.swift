import Foundation
import SettleBase
import SettleModel
import SettleConfig

extension Configuration {
    /// The `one_store` section as its decoder left it; absent means settle verifies no ONE store purchase.
    package var oneStore: OneStoreConfiguration? {
        get { storeSetting(ConfigurationSection.oneStoreKey) }
        set { storeSettings[ConfigurationSection.oneStoreKey] = newValue }
    }

    /// ONE store's IAP server API V7 (`one_store`). Reference: one-store.md.
    package struct OneStoreConfiguration: Sendable {
        package enum MarketCode: String, Sendable, CaseIterable {
            /// Korea: the server API's times are UTC+09 (`MKT_ONE`).
            case korea = "MKT_ONE"
            /// Everywhere else: UTC (`MKT_GLB`).
            case global = "MKT_GLB"
        }

        /// The app's client id (Developer Center > In-App > Credentials).
        package var clientId: String
        /// The `{packageName}` of the API's paths (ONE store's example: `com.sample`).
        package var packageName: String
        package var clientSecretFile: SecretFile
        /// The app's license key (base64 SubjectPublicKeyInfo): checks PNS messages and client signatures.
        package var licenseKeyFile: String
        /// Required: a wrong or missing code makes every purchase "no such data", silently.
        package var marketCode: MarketCode
        package var apiURL = OneStoreConfiguration.defaultAPIURL
        package var sandboxURL = OneStoreConfiguration.defaultSandboxURL
        /// Hours to subtract from a purchase's `purchaseTime` before settle uses it (the refund clock,
        /// the hook's `purchase_date`). Whether `MKT_ONE` answers are shifted by nine hours is not
        /// documented: by default settle reads them as if they were (9 for `MKT_ONE`, 0 for `MKT_GLB`),
        /// which puts the refund deadline earlier, never later (`purchase_time_offset_hours`).
        package var purchaseTimeOffsetHours: Int
        /// Where the notifications listener takes PNS messages; needs `notifications.listen`.
        package var notificationsPath: String?
        /// How often passes re-read recently delivered purchases for a cancellation a lost PNS did not tell of.
        package var rereadIntervalSeconds: Double = 3600
        /// Requests a second by endpoint group (`rate_limits`): ONE store publishes none, so none is
        /// paced unless configured here.
        package var rateLimits: [String: Double] = [:]

        package static let defaultAPIURL = "https://iap-apis.onestore.net"
        package static let defaultSandboxURL = "https://sbpp.onestore.net"

        /// Reads the license key; a file that is not a base64 RSA SubjectPublicKeyInfo is named.
        package func loadLicenseKey() throws(ConfigError) -> RSAPublicKey {
            guard let data = FileManager.default.contents(atPath: licenseKeyFile) else {
                throw ConfigError("one_store.license_key_file: cannot read \(licenseKeyFile)")
            }
            let text = String(decoding: data, as: UTF8.self).components(separatedBy: .newlines)
                .filter { !$0.hasPrefix("-----") }.joined().trimmingCharacters(in: .whitespaces)
            guard let der = Data(base64Encoded: text) else {
                throw ConfigError(
                    "one_store.license_key_file: \(licenseKeyFile) is not the base64 license key the Developer Center shows"
                )
            }
            do {
                return try RSAPublicKey(subjectPublicKeyInfo: der)
            } catch {
                throw ConfigError("one_store.license_key_file: \(licenseKeyFile): \(error.message)")
            }
        }
    }
}

extension ConfigurationSection {
    static let oneStoreKey = "one_store"

    /// `one_store`: decoded here; a product sold on ONE store needs it, PNS needs the listener.
    package static let oneStore = ConfigurationSection(
        key: oneStoreKey,
        decode: { (object, decoder) throws(ConfigError) in try decoder.decodeOneStore(object) },
        check: { (configuration) throws(ConfigError) in
            if configuration.oneStore == nil,
                let product = configuration.products.first(where: { $0.value.stores.contains(.oneStore) })
            {
                throw ConfigError("products.\(product.key).store: a one_store product needs the one_store section")
            }
            if let path = configuration.oneStore?.notificationsPath {
                guard let notifications = configuration.notifications else {
                    throw ConfigError(
                        "one_store.notifications_path: PNS messages arrive on the notifications listener; configure notifications.listen"
                    )
                }
                if path == notifications.path {
                    throw ConfigError("one_store.notifications_path: must differ from notifications.path (Apple's)")
                }
            }
        })
}

extension ConfigurationDecoder {
    package func decodeOneStore(_ object: ConfigObject) throws(ConfigError) -> Configuration.OneStoreConfiguration {
        let known: Set<String> = [
            "client_id", "package_name", "client_secret_file", "license_key_file", "market_code", "api_url",
            "sandbox_url", "purchase_time_offset_hours", "notifications_path", "reread_interval_seconds", "rate_limits",
        ]
        return try object.decode(knownKeys: known) { (o: inout ConfigObject) throws(ConfigError) in
            typealias Settings = Configuration.OneStoreConfiguration
            let clientId = try o.requireString("client_id")
            let packageName = try o.requireString("package_name")
            let secretName = try o.requireString("client_secret_file")
            let secret = SecretFile(
                key: o.name("client_secret_file"),
                path: SecretFile.resolve(secretName, relativeTo: folder, environment: environment),
                searched: SecretFile.candidates(secretName, relativeTo: folder, environment: environment))
            let keyName = try o.requireString("license_key_file")
            let keyPath = keyName.hasPrefix("/") ? keyName : (folder as NSString).appendingPathComponent(keyName)
            let codes = Settings.MarketCode.allCases.map { "\"\($0.rawValue)\"" }.joined(separator: " or ")
            guard let text = try o.string("market_code") else {
                throw ConfigError(
                    "\(o.name("market_code")): required: \(codes) (Korea or global); a wrong or missing code makes "
                        + "ONE store answer every purchase \"no such data\"")
            }
            guard let market = Settings.MarketCode(rawValue: text) else {
                throw ConfigError(
                    "\(o.name("market_code")): \"\(PrintableText.escape(String(text.prefix(32))))\" is not \(codes)")
            }
            var settings = Settings(
                clientId: clientId, packageName: packageName, clientSecretFile: secret, licenseKeyFile: keyPath,
                marketCode: market, purchaseTimeOffsetHours: market == .korea ? 9 : 0)
            for (key, keyPath) in [("api_url", \Settings.apiURL), ("sandbox_url", \Settings.sandboxURL)] {
                if let url = try o.string(key) {
                    try checkURL(url, name: o.name(key))
                    settings[keyPath: keyPath] = url.hasSuffix("/") ? String(url.dropLast()) : url
                }
            }
            settings.purchaseTimeOffsetHours = try o.integer(
                "purchase_time_offset_hours", default: settings.purchaseTimeOffsetHours, range: 0...9)
            if let path = try o.string("notifications_path") {
                guard path.hasPrefix("/"), !path.contains("?") else {
                    throw ConfigError(
                        "\(o.name("notifications_path")): \"\(PrintableText.escape(path))\" must start with / and hold no query"
                    )
                }
                settings.notificationsPath = path
            }
            settings.rereadIntervalSeconds = try o.number("reread_interval_seconds", default: 3600, range: 60...86_400)
            settings.rateLimits = try rateLimits(
                &o, groups: [OneStoreRateGroups.purchases: 0, OneStoreRateGroups.finishes: 0])
            try o.rejectUnknownKeys()
            return settings
        }
    }
}

/// ONE store's endpoint groups, as `rate_limits` and the pacer name them: purchase details, and
/// acknowledge or consume.
package enum OneStoreRateGroups {
    package static let purchases = "purchases"
    package static let finishes = "finishes"
}
