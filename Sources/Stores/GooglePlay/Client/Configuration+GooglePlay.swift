import Foundation
import SettleBase
import SettleModel
import SettleConfig

extension Configuration {
    /// The Google Play Developer API and real-time developer notifications (`google_play`);
    /// absent means settle verifies App Store purchases only.
    package struct GooglePlayConfiguration: Sendable {
        /// The app's package name (`com.example.game`), as Play Console shows it.
        package var packageName: String
        /// The service account's JSON key: a secret file like the others.
        package var serviceAccountFile: SecretFile
        package var apiURL: String = GooglePlayConfiguration.defaultAPIURL
        package var tokenURL: String = GooglePlayConfiguration.defaultTokenURL
        package static let defaultAPIURL = "https://androidpublisher.googleapis.com"
        package static let defaultTokenURL = "https://oauth2.googleapis.com/token"
        /// Where the notifications listener takes Pub/Sub pushes (needs `notifications.listen`).
        package var notificationsPath: String?
        package var push: Push?
        /// How often `settle run` reads `purchases.voidedpurchases.list`.
        package var voidedPollIntervalSeconds: Double = 3600
        /// `order_prices` (default false): read each verified purchase's price with `orders.get` (`PlayOrderPrice`).
        package var orderPrices = false
        package var refundReview = RefundReview()
        /// `rate_limits`: requests a second per Play Developer API bucket, for an app Google
        /// granted more than the published quota; absent groups keep `StoreRateLimits`'.
        package var rateLimits: [String: Double] = [:]

        /// Answers to Google's pending refund reviews (`refund_review`, `orders.reviewrefund`), opt-in
        /// like the App Store's `consumption`: sent only for purchases settle shows delivered.
        package struct RefundReview: Sendable, Equatable {
            /// Google's refund preference values (`RefundPreference`).
            package enum Preference: String, Sendable, CaseIterable {
                case decline = "DECLINE"
                case approve = "APPROVE"
                case neutral = "NEUTRAL"
            }
            package var respond = false
            /// Google requires one; `NEUTRAL` says the operator has none.
            package var refundPreference = Preference.neutral
            package var sampleContentProvided = false

            package init() {}
        }

        /// How a push is authenticated: the OIDC token Pub/Sub signs for the push subscription.
        package struct Push: Sendable, Equatable {
            /// The audience configured on the push subscription.
            package var audience: String
            /// The service account the push subscription authenticates as.
            package var serviceAccountEmail: String
            /// Where Google publishes the keys that sign push tokens: fetched, and kept as long
            /// as Google's answer says (Cache-Control max-age), since Google rotates them.
            package var jwksURL: String = Push.defaultJWKSURL
            /// A copy of the keys the operator keeps: used while the URL cannot be read.
            package var jwksFile: String?

            package static let defaultJWKSURL = "https://www.googleapis.com/oauth2/v3/certs"
        }

        /// The push signing keys of `push.jwks_file`, nil when there is none.
        package func loadPushKeyFile() throws(ConfigError) -> JSONWebKeySet? {
            guard let file = push?.jwksFile else { return nil }
            guard let data = FileManager.default.contents(atPath: file) else {
                throw ConfigError("google_play.push.jwks_file: cannot read \(file)")
            }
            do {
                return try JSONWebKeySet(json: data)
            } catch {
                throw ConfigError("google_play.push.jwks_file: \(file) is not a usable JWKS: \(error)")
            }
        }
    }
}

extension ConfigurationDecoder {
    package func decodeGooglePlay(_ object: ConfigObject) throws(ConfigError) -> Configuration.GooglePlayConfiguration {
        var o = object
        let packageName = try o.requireString("package_name")
        let packageCharacters = Set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._")
        guard packageName.contains("."), packageName.allSatisfy(packageCharacters.contains) else {
            throw ConfigError("\(o.name("package_name")): \"\(PrintableText.escape(String(packageName.prefix(100))))\" is not an Android package name")
        }
        let keyName = try o.requireString("service_account_file")
        let keyFile = SecretFile(key: o.name("service_account_file"),
                                 path: SecretFile.resolve(keyName, relativeTo: folder, environment: environment),
                                 searched: SecretFile.candidates(keyName, relativeTo: folder, environment: environment))
        var play = Configuration.GooglePlayConfiguration(packageName: packageName, serviceAccountFile: keyFile)
        if let api = try o.string("api_url") {
            try checkURL(api, name: o.name("api_url"))
            play.apiURL = api
        }
        if let token = try o.string("token_url") {
            try checkURL(token, name: o.name("token_url"))
            play.tokenURL = token
        }
        if let path = try o.string("notifications_path") {
            guard path.hasPrefix("/"), !path.contains("?") else {
                throw ConfigError("\(o.name("notifications_path")): \"\(path)\" must start with / and hold no query")
            }
            play.notificationsPath = path
        }
        if var push = try o.object("push") {
            let audience = try push.requireString("audience")
            let email = try push.requireString("service_account_email")
            var keys = Configuration.GooglePlayConfiguration.Push(audience: audience, serviceAccountEmail: email)
            if let url = try push.string("jwks_url") {
                try checkURL(url, name: push.name("jwks_url"))
                keys.jwksURL = url
            }
            keys.jwksFile = try push.string("jwks_file").map { $0.hasPrefix("/") ? $0 : (folder as NSString).appendingPathComponent($0) }
            try push.rejectUnknownKeys()
            play.push = keys
        }
        if play.notificationsPath != nil && play.push == nil {
            throw ConfigError("\(o.name("push")): required with notifications_path (settle refuses unauthenticated pushes)")
        }
        play.voidedPollIntervalSeconds = try o.number("voided_poll_interval_seconds", default: 3600, range: 60...86_400)
        play.orderPrices = try o.bool("order_prices", default: false)
        if var review = try o.object("refund_review") {
            play.refundReview.respond = try review.bool("respond", default: false)
            if let text = try review.string("refund_preference") {
                typealias Preference = Configuration.GooglePlayConfiguration.RefundReview.Preference
                guard let preference = Preference(rawValue: text) else {
                    let allowed = Preference.allCases.map { "\"\($0.rawValue)\"" }.joined(separator: ", ")
                    throw ConfigError("\(review.name("refund_preference")): \"\(PrintableText.escape(text))\" is not one of \(allowed)")
                }
                play.refundReview.refundPreference = preference
            }
            play.refundReview.sampleContentProvided = try review.bool("sample_content_provided", default: false)
            try review.rejectUnknownKeys()
            if play.refundReview.respond && play.notificationsPath == nil {
                throw ConfigError("\(review.name("respond")): Google asks for refund reviews by notification: set google_play.notifications_path")
            }
        }
        play.rateLimits = try rateLimits(&o, groups: StoreDescriptor.googlePlay.publishedRates)
        try o.rejectUnknownKeys()
        return play
    }
}
