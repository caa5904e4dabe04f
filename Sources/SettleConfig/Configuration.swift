import Foundation
import SettleBase
import SettleModel

/// settle's configuration (SPEC section 2), validated: every value here has been checked.
package struct Configuration: Sendable {
    /// The SQLite ledger's file; empty for a PostgreSQL ledger. To show which ledger this is,
    /// whichever the engine, use `ledgerLocation` (SettleLedger).
    package var ledgerPath: String
    /// Set when `ledger` names a PostgreSQL database: then it is the ledger, not `ledgerPath`.
    package var postgresLedger: PostgresLedgerConfiguration? = nil
    package var bundleId: String
    package var acceptSandbox: Bool
    package var products: [String: Product]
    /// `prices`: one unit's price by product id, for orders whose store states none (`decodePrices`).
    package var prices: [String: Price] = [:]
    /// How purchases are bound to the order's user (appAccountToken) and which proofs are trusted.
    package var userBinding = UserBinding()
    package var delivery: DeliveryConfiguration
    package var schedule: Schedule
    package var http: HTTPSettings
    /// Where the daemon writes its Prometheus text file after each pass (optional).
    package var metricsFile: String?
    /// How long `settle run` lets in-flight work finish after SIGTERM.
    package var shutdownGraceSeconds: Double = 20
    /// The least important events logged (`log_level`): debug adds idle passes.
    package var logLevel: Log.Level = .info
    /// History of finished and rejected orders older than this many days is pruned
    /// (`retention.history_days`); nil keeps it for ever. Orders and grants are never pruned.
    package var historyRetentionDays: Int?
    /// The notifications endpoint and history catch-up (absent: off).
    package var notifications: NotificationsConfiguration?
    /// Each store module's decoded sections (`ConfigurationSection`), by top-level key: the
    /// module reads its own through an accessor of its own.
    package var storeSettings: [String: any Sendable] = [:]
    /// Each registered store module's own section, by its descriptor's `configurationKey`,
    /// as written: the module decodes it (`StoreModule.adapter`, `settle check-config`).
    package var storeSections: [String: JSONValue] = [:]
    /// The support console, `settle web` (absent: every default).
    package var web = WebConfiguration()
    /// Refund history thresholds (`refunds`; absent: nobody held, flagged from 3).
    package var refunds = Refunds()
    /// The file this was read from; relative paths in it are resolved against its folder.
    package var sourcePath: String

    /// What a product is and what granting it means to the operator's hook.
    package struct Product: Sendable, Equatable {
        package typealias Kind = ProductKind
        package var kind: Kind
        /// Free-form, passed to the hook unchanged.
        package var grant: JSONValue?
        /// The stores that sell it under this product id (`"store"`; by default the ones whose
        /// descriptors say so, `StoreDescriptor.isDefaultForProducts`).
        package var stores: Set<Store> = StoreRegistry.defaultProductStores
        /// A Google Play one-time product's purchase option this product is (`"purchase_option"`):
        /// a purchase of the product under another option is not this product. Nil: any option
        /// that is not a rental.
        package var purchaseOption: String? = nil
        /// How long a rental option lasts (`"rental_period"`, ISO 8601): the hook's `expires_date`
        /// is the purchase's completion plus this. A rental is never granted without one.
        package var rentalPeriodSeconds: Int64? = nil
    }

    /// How goods are granted.
    package struct DeliveryConfiguration: Sendable {
        package enum Method: Sendable {
            case command([String])
            case webhook(url: String, secretFile: SecretFile)
        }
        package var method: Method
        package var timeoutSeconds: Double
        /// Names of settle's environment variables a delivery command also gets (`delivery.environment`).
        package var environment: [String] = []
        /// `delivery.revoke_command`: argv of the hook that takes goods back after a refund, for a
        /// command delivery. nil: revokes wait, "no revoke route configured", until one is.
        package var revokeCommand: [String]? = nil
        /// `delivery.webhook.revoke_url`: where a webhook delivery POSTs revokes (`event: "revoke"`),
        /// never the grant URL. nil: revokes wait, "no revoke route configured", until one is.
        package var revokeURL: String? = nil
        /// `delivery.batch_size`: how many orders one run of the delivery command gets, as JSON
        /// lines, answering one line each (1: one process per order, the plain contract).
        package var batchSize = 1
    }

    package struct Schedule: Sendable {
        package var intervalSeconds: Double = 60
        package var concurrency: Int = 8
        package var maxAttempts: Int = 20
        package var backoffBaseSeconds: Double = 30
        package var backoffMaxSeconds: Double = 21600
    }

    package struct HTTPSettings: Sendable {
        package var connectTimeoutSeconds: Double = 10
        package var timeoutSeconds: Double = 30
    }

    /// Where the configuration is read from: `--config`, else `$SETTLE_CONFIG`, else the default.
    package static func defaultPath(environment: [String: String]) -> String {
        environment["SETTLE_CONFIG"].flatMap { $0.isEmpty ? nil : $0 } ?? "/etc/settle/settle.json"
    }

    /// Reads and validates the file. Secrets are not read here (see `SecretFile.read`).
    package static func load(path given: String, environment: [String: String]) throws(ConfigError) -> Configuration {
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
    package static func lineAndColumn(_ data: Data, offset: Int) -> (Int, Int) {
        let before = data.prefix(max(0, min(offset, data.count)))
        let line = before.filter { $0 == UInt8(ascii: "\n") }.count + 1
        let lastLine = before.lastIndex(of: UInt8(ascii: "\n")).map { before[(before.index(after: $0))...] } ?? before[...]
        return (line, String(decoding: lastLine, as: UTF8.self).count + 1)
    }
}

extension Configuration.Product {
    /// A product as a module's tests and tools make one without a configuration file.
    package init(kind: Kind, grant: JSONValue? = nil, soldOn stores: Set<Store>) {
        self.init(kind: kind, grant: grant, stores: stores, purchaseOption: nil, rentalPeriodSeconds: nil)
    }
}
