import SettleBase
import SettleModel
import SettleConfig

extension Configuration {
    /// The legacy verifyReceipt endpoints.
    package struct ReceiptAPIConfiguration: Sendable {
        package var productionURL: String
        package var sandboxURL: String
        package var sharedSecretFile: SecretFile
        /// `rate_limits`: `{"verify_receipt": N}`, the ceiling in production (sandbox a tenth) under
        /// which the pacer learns verifyReceipt's rate; absent, `StoreDescriptor.appStore`'s.
        package var rateLimits: [String: Double] = [:]
    }

    /// The App Store Server API (StoreKit 2) and the roots StoreKit 2 signed data must chain to.
    package struct ServerAPIConfiguration: Sendable {
        package var productionURL: String
        package var sandboxURL: String
        package var issuerId: String
        package var keyId: String
        package var privateKeyFile: SecretFile
        package var appAppleId: String?
        package var rootCertificates: [String]
        /// The roots legacy app receipts' PKCS#7 signatures must chain to when settle reads
        /// receipts itself (no `receipt_api`): Apple Inc. Root CA by default.
        package var receiptRootCertificates: [String]
        /// `finish_transactions` (default true): after a delivery, tell Apple the transaction is
        /// finished (Finish Transaction), so StoreKit stops offering it to the app again.
        package var finishTransactions: Bool = true
        /// `rate_limits`: requests a second per Server API endpoint group in production, for an
        /// app Apple granted more; absent groups keep `StoreRateLimits`'. Sandbox gets a tenth.
        package var rateLimits: [String: Double] = [:]
    }

    /// `receipt_api` as its decoder left it (`ConfigurationSection.receiptAPI`); nil when absent.
    package var receiptAPI: ReceiptAPIConfiguration? {
        get { storeSetting(ConfigurationSection.receiptAPIKey) }
        set { storeSettings[ConfigurationSection.receiptAPIKey] = newValue }
    }

    /// `server_api` as its decoder left it (`ConfigurationSection.serverAPI`); nil when absent.
    package var serverAPI: ServerAPIConfiguration? {
        get { storeSetting(ConfigurationSection.serverAPIKey) }
        set { storeSettings[ConfigurationSection.serverAPIKey] = newValue }
    }
}

extension ConfigurationSection {
    static let receiptAPIKey = "receipt_api"
    static let serverAPIKey = "server_api"

    /// `receipt_api`, the one a configuration without any store's section is told it misses.
    package static let receiptAPI = ConfigurationSection(
        key: receiptAPIKey,
        decode: { (object, decoder) throws(ConfigError) in try decoder.decodeReceiptAPI(object) },
        whenNoStoreIsConfigured: "receipt_api: required key is missing "
            + "(configure receipt_api and/or server_api to verify with Apple)")

    /// `server_api`, which answering refund requests (`consumption.respond`) needs.
    package static let serverAPI = ConfigurationSection(
        key: serverAPIKey,
        decode: { (object, decoder) throws(ConfigError) in try decoder.decodeServerAPI(object) },
        problems: { configuration in
            guard configuration.consumption.respond, configuration.serverAPI == nil else { return [] }
            return ["consumption.respond: answering refund requests needs server_api"]
        })
}

extension ConfigurationDecoder {
    func decodeReceiptAPI(_ object: ConfigObject) throws(ConfigError) -> Configuration.ReceiptAPIConfiguration {
        var o = object
        let production = try url(&o, "production_url", default: "https://buy.itunes.apple.com/verifyReceipt")
        let sandbox = try url(&o, "sandbox_url", default: "https://sandbox.itunes.apple.com/verifyReceipt")
        let secret = try secretFile(&o, "shared_secret_file")
        let limits = try rateLimits(&o, groups: StoreDescriptor.appStore.learnedRates)
        try o.rejectUnknownKeys()
        return .init(productionURL: production, sandboxURL: sandbox, sharedSecretFile: secret, rateLimits: limits)
    }

    func decodeServerAPI(_ object: ConfigObject) throws(ConfigError) -> Configuration.ServerAPIConfiguration {
        var o = object
        let production = try url(&o, "production_url", default: "https://api.storekit.apple.com")
        let sandbox = try url(&o, "sandbox_url", default: "https://api.storekit-sandbox.apple.com")
        let issuer = try o.requireString("issuer_id")
        let keyId = try o.requireString("key_id")
        let key = try secretFile(&o, "private_key_file")
        var appAppleId: String? = nil
        if let value = o.value("app_apple_id") {
            guard let text = value.looseString, !text.isEmpty else {
                throw ConfigError("\(o.name("app_apple_id")): expected a number or string, got \(value.typeName)")
            }
            appAppleId = text
        }
        // Apple Root CA - G3 and Apple Inc. Root CA ship in config/; installed next to the
        // configuration they are the default anchors for signed data and for app receipts.
        let roots = try paths(&o, "root_certificates", default: "AppleRootCA-G3.pem")
        let receiptRoots = try paths(&o, "receipt_root_certificates", default: "AppleIncRootCA.pem")
        let finish = try o.bool("finish_transactions", default: true)
        let limits = try rateLimits(&o, groups: StoreDescriptor.appStore.publishedRates)
        try o.rejectUnknownKeys()
        return .init(productionURL: production, sandboxURL: sandbox, issuerId: issuer, keyId: keyId,
                     privateKeyFile: key, appAppleId: appAppleId, rootCertificates: roots,
                     receiptRootCertificates: receiptRoots, finishTransactions: finish, rateLimits: limits)
    }
}
