import Foundation
import SettleBase
import SettleModel
import SettleConfig

extension Configuration {
    /// The `huawei` section as its decoder left it (`ConfigurationSection.huawei`); absent means
    /// settle verifies no Huawei purchase.
    package var huawei: HuaweiConfiguration? {
        get { storeSetting(ConfigurationSection.huaweiKey) }
        set { storeSettings[ConfigurationSection.huaweiKey] = newValue }
    }

    /// Huawei AppGallery (`huawei`): HarmonyOS IAP Kit's server API (the IAP key that signs
    /// settle's requests and the Huawei root its answers must chain to) and HMS IAP's (Android
    /// AppGallery: OAuth client credentials and the app's RSA IAP public key), either or both.
    /// Reference: huawei-appgallery.md sections 1 and 2.
    package struct HuaweiConfiguration: Sendable {
        /// The app's APP ID in AppGallery Connect (the JWT's `aid`; answers must name it as
        /// `applicationId`; HMS's OAuth client id).
        package var appId: String
        /// HarmonyOS IAP Kit: nil when the section configures HMS IAP only.
        package var iapKit: IAPKit?
        /// HMS IAP (`hms`): nil when the section configures IAP Kit only.
        package var hms: HMS?

        package struct IAPKit: Sendable {
            /// The Issuer ID AppGallery Connect shows with the key (the JWT's `iss`).
            package var issuerId: String
            /// The key ID of the IAP key (the JWT's `kid`).
            package var keyId: String
            /// The `.p8` IAP key (PKCS#8 EC P-256), downloaded once from AppGallery Connect: a secret file.
            package var privateKeyFile: SecretFile
            /// PEM files of the roots Huawei's signed answers must chain to (Huawei CBG Root CA G2,
            /// from https://pki.consumer.huawei.com/ca/cer/RootCaG2Ecdsa.cer). Never taken from `x5c`.
            package var rootCertificates: [String]
            package var apiURL: String = HuaweiConfiguration.defaultAPIURL

            /// Reads the IAP key; a key that is not an EC P-256 private key is named.
            package func loadPrivateKey() throws(ConfigError) -> ES256PrivateKey {
                let secret = try privateKeyFile.read()
                do {
                    return try ES256PrivateKey(pem: secret.value)
                } catch {
                    throw ConfigError(
                        "\(privateKeyFile.key): \(privateKeyFile.path) is not an EC P-256 private key in PEM (the .p8 file AppGallery Connect gave): \(error.message)"
                    )
                }
            }

            /// Reads the pinned roots; a file without a certificate is named.
            package func loadRoots() throws(ConfigError) -> [X509Certificate] {
                var roots: [X509Certificate] = []
                for (index, path) in rootCertificates.enumerated() {
                    do {
                        roots += try X509Certificate.load(path: path)
                    } catch {
                        throw ConfigError("huawei.root_certificates[\(index)]: \(error.message)")
                    }
                }
                guard !roots.isEmpty else {
                    throw ConfigError("huawei.root_certificates: the files hold no certificate")
                }
                return roots
            }
        }

        /// HMS IAP (Android AppGallery): the app's OAuth client secret, its IAP public key, and
        /// where its orders live. Reference: huawei-appgallery.md section 2.
        package struct HMS: Sendable {
            /// The OAuth client secret of the app (AppGallery Connect > App information): a secret file.
            package var clientSecretFile: SecretFile
            /// The app's IAP public key (AppGallery Connect > In-App Purchases), base64 DER SPKI, in a file.
            package var publicKeyFile: String
            /// The order service's root for the app's site, and the AppTouch one (`accountFlag` 1).
            package var orderURL: String
            package var appTouchOrderURL: String = HMS.defaultAppTouchOrderURL
            /// The subscription service's root for the app's site, and the AppTouch one.
            package var subscriptionURL: String
            package var appTouchSubscriptionURL: String = HMS.defaultAppTouchSubscriptionURL
            package var tokenURL: String = HMS.defaultTokenURL
            /// How often `settle run` reads the cancelled and refunded purchases (`cancelledList`).
            package var cancelledPollIntervalSeconds: Double = 3600
            /// Where the notifications listener takes HMS's server notifications (v2); needs `notifications.listen`.
            package var notificationsPath: String?

            package static let sites = [
                "china": "https://orders-drcn.iap.cloud.huawei.com.cn",
                "germany": "https://orders-dre.iap.cloud.huawei.eu",
                "singapore": "https://orders-dra.iap.cloud.huawei.asia",
                "russia": "https://orders-drru.iap.cloud.huawei.ru",
            ]
            package static let defaultAppTouchOrderURL = "https://orders-at-dre.iap.dbankcloud.com"
            package static let defaultAppTouchSubscriptionURL = "https://subscr-at-dre.iap.dbankcloud.com"
            package static let subscriptionSites = [
                "china": "https://subscr-drcn.iap.cloud.huawei.com.cn",
                "germany": "https://subscr-dre.iap.cloud.huawei.eu",
                "singapore": "https://subscr-dra.iap.cloud.huawei.asia",
                "russia": "https://subscr-drru.iap.cloud.huawei.ru",
            ]
            package static let defaultTokenURL = "https://oauth-login.cloud.huawei.com/oauth2/v3/token"

            /// Reads the IAP public key; a file that is not a base64 RSA SubjectPublicKeyInfo is named.
            package func loadPublicKey() throws(ConfigError) -> RSAPublicKey {
                guard let data = FileManager.default.contents(atPath: publicKeyFile) else {
                    throw ConfigError("huawei.hms.public_key_file: cannot read \(publicKeyFile)")
                }
                let text = String(decoding: data, as: UTF8.self).components(separatedBy: .newlines)
                    .filter { !$0.hasPrefix("-----") }.joined().trimmingCharacters(in: .whitespaces)
                guard let der = Data(base64Encoded: text) else {
                    throw ConfigError(
                        "huawei.hms.public_key_file: \(publicKeyFile) is not the base64 public key AppGallery Connect shows"
                    )
                }
                do {
                    return try RSAPublicKey(subjectPublicKeyInfo: der)
                } catch {
                    throw ConfigError("huawei.hms.public_key_file: \(publicKeyFile): \(error.message)")
                }
            }
        }

        /// Requests a second by endpoint group, over the published ones (`rate_limits`).
        package var rateLimits: [String: Double] = [:]
        /// Where the notifications listener takes IAP Kit's key-event notifications (v3), as
        /// configured in AppGallery Connect; needs `notifications.listen`.
        package var notificationsPath: String?
        /// How Huawei's refund reviews (`REFUND_REQUEST`) are answered (`refund_review`).
        package var refundReview = RefundReview()
        /// Whether the daemon reads Huawei's notification history (30 days, one call a second)
        /// to catch up on notifications it missed while it was down (`history_catch_up`).
        package var historyCatchUp = true

        /// Answers to Huawei's refund reviews, opt-in: sent only when the ledger shows every order
        /// of the request delivered; otherwise nothing is sent and a person decides in AppGallery Connect.
        package struct RefundReview: Sendable, Equatable {
            package enum Decision: String, Sendable, CaseIterable {
                case approve
                case reject
            }
            package var respond = false
            /// What the operator decides for goods the ledger shows delivered; required with `respond`.
            package var delivered: Decision?
            package init() {}
        }

        /// The only root Huawei lists (mainland China); there is no documented sandbox host:
        /// sandbox purchases come from the same host and say `environment: SANDBOX`.
        package static let defaultAPIURL = "https://iap.cloud.huawei.com"
    }
}

extension ConfigurationSection {
    static let huaweiKey = "huawei"

    /// `huawei`: decoded here; a product sold on Huawei needs it.
    package static let huawei = ConfigurationSection(
        key: huaweiKey,
        decode: { (object, decoder) throws(ConfigError) in try decoder.decodeHuawei(object) },
        check: { (configuration) throws(ConfigError) in
            if configuration.huawei == nil,
                let product = configuration.products.first(where: { $0.value.stores.contains(.huawei) })
            {
                throw ConfigError("products.\(product.key).store: a huawei product needs the huawei section")
            }
            let paths = [
                ("huawei.notifications_path", configuration.huawei?.notificationsPath),
                ("huawei.hms.notifications_path", configuration.huawei?.hms?.notificationsPath),
            ]
            for (key, path) in paths {
                guard let path else { continue }
                guard let notifications = configuration.notifications else {
                    throw ConfigError(
                        "\(key): notifications arrive on the notifications listener; configure notifications.listen")
                }
                if path == notifications.path {
                    throw ConfigError("\(key): must differ from notifications.path (Apple's)")
                }
            }
            if let path = paths[0].1, path == paths[1].1 {
                throw ConfigError(
                    "huawei.hms.notifications_path: must differ from huawei.notifications_path (IAP Kit's)")
            }
        })
}

extension ConfigurationDecoder {
    package func decodeHuawei(_ object: ConfigObject) throws(ConfigError) -> Configuration.HuaweiConfiguration {
        let known: Set<String> = [
            "app_id", "issuer_id", "key_id", "private_key_file", "root_certificates", "api_url", "rate_limits",
            "notifications_path", "history_catch_up", "refund_review", "hms",
        ]
        return try object.decode(knownKeys: known) { (o: inout ConfigObject) throws(ConfigError) in
            let appId = try o.requireString("app_id")
            guard appId.count <= 128, appId.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber) }) else {
                throw ConfigError(
                    "\(o.name("app_id")): \"\(PrintableText.escape(String(appId.prefix(64))))\" is not an APP ID "
                        + "(letters and digits, as AppGallery Connect shows it)")
            }
            var huawei = Configuration.HuaweiConfiguration(appId: appId)
            huawei.iapKit = try decodeIAPKit(&o)
            huawei.hms = try o.object("hms").map { (hms) throws(ConfigError) in try decodeHMS(hms) }
            guard huawei.iapKit != nil || huawei.hms != nil else {
                throw ConfigError(
                    "huawei: configure HarmonyOS IAP Kit (issuer_id, key_id, private_key_file, root_certificates), "
                        + "HMS IAP (hms), or both")
            }
            huawei.rateLimits = try rateLimits(&o, groups: HuaweiRateGroups.all)
            if let path = try o.string("notifications_path") {
                guard path.hasPrefix("/"), !path.contains("?") else {
                    throw ConfigError(
                        "\(o.name("notifications_path")): \"\(PrintableText.escape(path))\" must start with / and hold no query"
                    )
                }
                guard huawei.iapKit != nil else {
                    throw ConfigError(
                        "\(o.name("notifications_path")): IAP Kit's notifications are verified with its root: configure IAP Kit"
                    )
                }
                huawei.notificationsPath = path
            }
            huawei.historyCatchUp = try o.bool("history_catch_up", default: true)
            if var review = try o.object("refund_review") {
                huawei.refundReview.respond = try review.bool("respond", default: false)
                if let text = try review.string("delivered") {
                    typealias Decision = Configuration.HuaweiConfiguration.RefundReview.Decision
                    guard let decision = Decision(rawValue: text) else {
                        throw ConfigError(
                            "\(review.name("delivered")): \"\(PrintableText.escape(text))\" is not \"approve\" or \"reject\""
                        )
                    }
                    huawei.refundReview.delivered = decision
                }
                try review.rejectUnknownKeys()
                if huawei.refundReview.respond {
                    guard huawei.refundReview.delivered != nil else {
                        throw ConfigError(
                            "\(review.name("delivered")): required with respond: what to answer when settle shows the goods "
                                + "delivered (\"approve\" or \"reject\")")
                    }
                    guard huawei.notificationsPath != nil else {
                        throw ConfigError(
                            "\(review.name("respond")): Huawei asks for refund reviews by notification: set huawei.notifications_path"
                        )
                    }
                }
            }
            try o.rejectUnknownKeys()
            return huawei
        }
    }

    /// IAP Kit's keys, all or none.
    private func decodeIAPKit(_ o: inout ConfigObject) throws(ConfigError) -> Configuration.HuaweiConfiguration.IAPKit?
    {
        let keys = ["issuer_id", "key_id", "private_key_file", "root_certificates"]
        let given = keys.filter { o.value($0) != nil }
        guard !given.isEmpty else {
            if try o.string("api_url") != nil {
                throw ConfigError("\(o.name("api_url")): IAP Kit's URL, without IAP Kit's keys")
            }
            return nil
        }
        for key in keys where !given.contains(key) {
            let hint =
                key == "root_certificates"
                ? " (the Huawei CBG Root CA G2 certificate, from https://pki.consumer.huawei.com/ca/cer/RootCaG2Ecdsa.cer, as PEM)"
                : ""
            throw ConfigError(
                "\(o.name(key)): required key is missing with \(given.joined(separator: ", ")) (IAP Kit)\(hint)")
        }
        let issuerId = try o.requireString("issuer_id")
        let keyId = try o.requireString("key_id")
        let keyName = try o.requireString("private_key_file")
        let keyFile = SecretFile(
            key: o.name("private_key_file"),
            path: SecretFile.resolve(keyName, relativeTo: folder, environment: environment),
            searched: SecretFile.candidates(keyName, relativeTo: folder, environment: environment))
        var kit = Configuration.HuaweiConfiguration.IAPKit(
            issuerId: issuerId, keyId: keyId, privateKeyFile: keyFile,
            rootCertificates: try paths(&o, "root_certificates", default: ""))
        if let api = try o.string("api_url") {
            try checkURL(api, name: o.name("api_url"))
            kit.apiURL = api.hasSuffix("/") ? String(api.dropLast()) : api
        }
        return kit
    }

    private func decodeHMS(_ object: ConfigObject) throws(ConfigError) -> Configuration.HuaweiConfiguration.HMS {
        let known: Set<String> = [
            "client_secret_file", "public_key_file", "site", "order_url", "apptouch_order_url", "token_url",
            "subscription_url", "apptouch_subscription_url",
            "cancelled_poll_interval_seconds", "notifications_path",
        ]
        return try object.decode(knownKeys: known) { (o: inout ConfigObject) throws(ConfigError) in
            let secretName = try o.requireString("client_secret_file")
            let secret = SecretFile(
                key: o.name("client_secret_file"),
                path: SecretFile.resolve(secretName, relativeTo: folder, environment: environment),
                searched: SecretFile.candidates(secretName, relativeTo: folder, environment: environment))
            let keyName = try o.requireString("public_key_file")
            let keyPath = keyName.hasPrefix("/") ? keyName : (folder as NSString).appendingPathComponent(keyName)
            typealias HMS = Configuration.HuaweiConfiguration.HMS
            let site = try o.string("site")
            func root(_ key: String, _ sites: [String: String]) throws(ConfigError) -> String {
                if let url = try o.string(key) {
                    try checkURL(url, name: o.name(key))
                    return Self.trimmed(url)
                }
                guard let site, let url = sites[site] else {
                    let names = sites.keys.sorted().map { "\"\($0)\"" }.joined(separator: ", ")
                    throw ConfigError(
                        "\(o.name("site")): \(site.map { "\"\(PrintableText.escape($0))\" is not one of \(names)" } ?? "required"): "
                            + "the site of the app's orders (\(names)), or \(key)")
                }
                return url
            }
            var hms = HMS(
                clientSecretFile: secret, publicKeyFile: keyPath, orderURL: try root("order_url", HMS.sites),
                subscriptionURL: try root("subscription_url", HMS.subscriptionSites))
            if let url = try o.string("apptouch_subscription_url") {
                try checkURL(url, name: o.name("apptouch_subscription_url"))
                hms.appTouchSubscriptionURL = Self.trimmed(url)
            }
            if let url = try o.string("apptouch_order_url") {
                try checkURL(url, name: o.name("apptouch_order_url"))
                hms.appTouchOrderURL = Self.trimmed(url)
            }
            if let url = try o.string("token_url") {
                try checkURL(url, name: o.name("token_url"))
                hms.tokenURL = url
            }
            hms.cancelledPollIntervalSeconds = try o.number(
                "cancelled_poll_interval_seconds", default: 3600, range: 60...86_400)
            if let path = try o.string("notifications_path") {
                guard path.hasPrefix("/"), !path.contains("?") else {
                    throw ConfigError(
                        "\(o.name("notifications_path")): \"\(PrintableText.escape(path))\" must start with / and hold no query"
                    )
                }
                hms.notificationsPath = path
            }
            try o.rejectUnknownKeys()
            return hms
        }
    }

    private static func trimmed(_ url: String) -> String { url.hasSuffix("/") ? String(url.dropLast()) : url }
}

/// IAP Kit's endpoint groups, as `rate_limits` and the pacer name them: the published rate where
/// Huawei publishes one, else a group that may be configured but is not paced by default.
package enum HuaweiRateGroups {
    package static let orders = "orders"
    package static let subscriptions = "subscriptions"
    package static let notificationHistory = "notification_history"
    package static let refundReviews = "refund_reviews"

    /// Every group `rate_limits` may name, with its published rate (0: none published).
    package static var all: [String: Double] {
        var groups = StoreDescriptor.huawei.publishedRates
        for group in [orders, subscriptions, refundReviews] where groups[group] == nil { groups[group] = 0 }
        return groups
    }
}
