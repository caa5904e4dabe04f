import Foundation

/// settle's configuration (SPEC section 2), validated: every value here has been checked.
public struct Configuration: Sendable {
    /// The SQLite ledger's file; for a PostgreSQL ledger, its URL without a password (for display).
    public var ledgerPath: String
    /// Set when `ledger` names a PostgreSQL database: then it is the ledger, not `ledgerPath`.
    public var postgresLedger: PostgresLedgerConfiguration? = nil
    public var bundleId: String
    public var acceptSandbox: Bool
    public var receiptAPI: ReceiptAPIConfiguration?
    public var serverAPI: ServerAPIConfiguration?
    public var products: [String: Product]
    /// How purchases are bound to the order's user (appAccountToken) and which proofs are trusted.
    public var userBinding = UserBinding()
    public var delivery: DeliveryConfiguration
    public var schedule: Schedule
    public var http: HTTPSettings
    /// Where the daemon writes its Prometheus text file after each pass (optional).
    public var metricsFile: String?
    /// How long `settle run` lets in-flight work finish after SIGTERM.
    public var shutdownGraceSeconds: Double = 20
    /// The least important events logged (`log_level`): debug adds idle passes.
    public var logLevel: Log.Level = .info
    /// History of finished and rejected orders older than this many days is pruned
    /// (`retention.history_days`); nil keeps it for ever. Orders and grants are never pruned.
    public var historyRetentionDays: Int?
    /// The notifications endpoint and history catch-up (absent: off).
    public var notifications: NotificationsConfiguration?
    public var consumption = ConsumptionConfiguration()
    /// Google Play (absent: App Store only).
    public var googlePlay: GooglePlayConfiguration?
    /// The file this was read from; relative paths in it are resolved against its folder.
    public var sourcePath: String

    /// What a product is and what granting it means to the operator's hook.
    public struct Product: Sendable, Equatable {
        public enum Kind: String, Sendable, CaseIterable {
            case consumable
            case nonConsumable = "non_consumable"
            case autoRenewable = "auto_renewable"
            case nonRenewing = "non_renewing"
        }
        public var kind: Kind
        /// Free-form, passed to the hook unchanged.
        public var grant: JSONValue?
        /// The stores that sell it under this product id (`"store"`; the App Store by default).
        public var stores: Set<Store> = [.appStore]
    }

    /// The legacy verifyReceipt endpoints.
    public struct ReceiptAPIConfiguration: Sendable {
        public var productionURL: String
        public var sandboxURL: String
        public var sharedSecretFile: SecretFile
    }

    /// The App Store Server API (StoreKit 2) and the roots StoreKit 2 signed data must chain to.
    public struct ServerAPIConfiguration: Sendable {
        public var productionURL: String
        public var sandboxURL: String
        public var issuerId: String
        public var keyId: String
        public var privateKeyFile: SecretFile
        public var appAppleId: String?
        public var rootCertificates: [String]
        /// The roots legacy app receipts' PKCS#7 signatures must chain to when settle reads
        /// receipts itself (no `receipt_api`): Apple Inc. Root CA by default.
        public var receiptRootCertificates: [String]
    }

    /// How goods are granted.
    public struct DeliveryConfiguration: Sendable {
        public enum Method: Sendable {
            case command([String])
            case webhook(url: String, secretFile: SecretFile)
        }
        public var method: Method
        public var timeoutSeconds: Double
        /// Names of settle's environment variables a delivery command also gets (`delivery.environment`).
        public var environment: [String] = []
        /// `delivery.revoke_command`: argv of the hook that takes goods back after a refund, for a
        /// command delivery. nil: revokes wait, "no revoke route configured", until one is.
        public var revokeCommand: [String]? = nil
        /// `delivery.webhook.revoke_url`: where a webhook delivery POSTs revokes (`event: "revoke"`),
        /// never the grant URL. nil: revokes wait, "no revoke route configured", until one is.
        public var revokeURL: String? = nil
        /// `delivery.batch_size`: how many orders one run of the delivery command gets, as JSON
        /// lines, answering one line each (1: one process per order, the plain contract).
        public var batchSize = 1
    }

    public struct Schedule: Sendable {
        public var intervalSeconds: Double = 60
        public var concurrency: Int = 8
        public var maxAttempts: Int = 20
        public var backoffBaseSeconds: Double = 30
        public var backoffMaxSeconds: Double = 21600
    }

    public struct HTTPSettings: Sendable {
        public var connectTimeoutSeconds: Double = 10
        public var timeoutSeconds: Double = 30
    }

    /// Where the configuration is read from: `--config`, else `$SETTLE_CONFIG`, else the default.
    public static func defaultPath(environment: [String: String]) -> String {
        environment["SETTLE_CONFIG"].flatMap { $0.isEmpty ? nil : $0 } ?? "/etc/settle/settle.json"
    }

    /// Reads and validates the file. Secrets are not read here (see `SecretFile.read`).
    public static func load(path given: String, environment: [String: String]) throws(ConfigError) -> Configuration {
        // Absolute from here on, so that relative paths inside resolve the same from any folder.
        let path = URL(fileURLWithPath: given).standardized.path
        let data: Data
        do {
            data = try Data(contentsOf: URL(fileURLWithPath: path))
        } catch {
            throw ConfigError("cannot read configuration \(path): \((error as NSError).localizedDescription)")
        }
        let json: JSONValue
        do {
            json = try JSONValue.parse(data)
        } catch {
            // Editors and jq speak line:column, not byte offsets.
            let (line, column) = Configuration.lineAndColumn(data, offset: error.offset)
            throw ConfigError("\(path):\(line):\(column): not valid JSON: \(error.message)")
        }
        do {
            return try ConfigurationDecoder(path: path, environment: environment).decode(json)
        } catch {
            throw ConfigError(error.message.split(separator: "\n").map { "\(path): \($0)" }.joined(separator: "\n"))
        }
    }

    /// The 1-based line and column (in characters) of a byte offset.
    static func lineAndColumn(_ data: Data, offset: Int) -> (Int, Int) {
        let before = data.prefix(max(0, min(offset, data.count)))
        let line = before.filter { $0 == UInt8(ascii: "\n") }.count + 1
        let lastLine = before.lastIndex(of: UInt8(ascii: "\n")).map { before[(before.index(after: $0))...] } ?? before[...]
        return (line, String(decoding: lastLine, as: UTF8.self).count + 1)
    }
}
