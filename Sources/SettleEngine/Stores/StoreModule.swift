import SettleBase
import SettleModel
import SettleConfig
import SettleLedger

/// A store, as the application registers it: what it is (its descriptor) and how its
/// configuration becomes an adapter. Everything settle knows about the store lives in the
/// module's folder, `Sources/Stores/<Store>/`; the core loops over the registered modules and
/// never names one.
package protocol StoreModule {
    static var descriptor: StoreDescriptor { get }

    /// The adapter its configuration describes, with its secrets read and keys loaded now (a bad
    /// key is a configuration fault at start, not at the store's first order); nil when the
    /// configuration has no section for the store.
    static func adapter(_ context: StoreContext) throws(ConfigError) -> (any StoreAdapter)?

    /// Its configured `rate_limits` (requests a second by endpoint group), over the published ones.
    static func configuredRates(_ configuration: Configuration) -> [String: Double]

    /// Checks its section (`descriptor.configurationKey`) without reading secrets or calling
    /// anyone, for `settle check-config`; errors name each key ("huawei.app_id: ...").
    static func validate(_ configuration: Configuration) throws(ConfigError)

    /// How `settle enqueue --store <store> --proof-file FILE|-` reads its proof, kept as data
    /// (`StoreProof`); nil for a store whose proofs have options of their own in the core.
    static var proofFormat: ProofFormat? { get }

    /// The account token `settle assign` has the store set on the purchase once it is verified
    /// as the user's (the App Store's Set App Account Token), with the line that says so; nil
    /// when the store sets none or the configuration gives the user none.
    static func tokenToSet(assigning order: Order, to user: String, _ configuration: Configuration) -> (token: String, notice: String)?

    /// Commands of its own (`settle link`), listed after the core's support commands.
    static var commands: [StoreCommand] { get }

    /// How `settle enqueue` reads its proof from options of its own; nil for a store whose
    /// proof is `--proof-file` (its `proofFormat`).
    static var enqueueOptions: EnqueueOptions? { get }

    /// Its own tables, by name (`<store>.<what>`), applied once each after the core's
    /// migrations; its code asks `ledger.hasMigration(name)` before reading them.
    static var migrations: [LedgerMigration] { get }
    /// Metric families of its own, in every metrics file (`Metrics.family(_:)` counts them).
    static var metricFamilies: [any StoreMetricFamilies.Type] { get }

    /// The top-level configuration sections it decodes itself, registered with it
    /// (`ConfigurationSections`) before any configuration is read.
    static var configurationSections: [ConfigurationSection] { get }

    /// Its side queues (work owed to the store outside an order's settling), which rescue visits
    /// after the core's.
    static var sideQueues: [SideQueue] { get }

    /// What it voided of a purchase while its order was verified, taken from what the order may
    /// be granted; nil for a store whose voidings arrive otherwise.
    static var voidedPurchaseFilter: VoidedPurchaseFilter? { get }

    /// The rate groups (`publishedRates` keys) an order's verification calls: the slowest of
    /// them binds how fast the store's backlog drains, as `settle status` shows it.
    static var verificationRateGroups: Set<String> { get }

    /// Reads its secrets and keys as its adapter would, without calling anyone: `settle
    /// check-config` fails on one that cannot be read.
    static func readSecrets(_ configuration: Configuration) throws(ConfigError)

    /// What `settle check-config` prints of its configuration: one line a setting, secrets
    /// named by their file only ("(contents redacted)"), URLs without credentials.
    static func describe(_ configuration: Configuration) -> [String]

    /// Records what its verification of `order` learned beyond the answer (`LearnedFacts`).
    static func record(_ learned: any LearnedFact, of order: Order, in ledger: any SettleLedger) throws(LedgerError)

    /// Sets aside, before a pass's claims, rows of its own no pass can work on (`LedgerTidying`).
    static func tidy(_ ledger: any SettleLedger, log: Log) throws(LedgerError)

    /// What it adds to the ledger's status (`StoreStatusNote`), read once a report.
    static func statusNotes(_ ledger: any SettleLedger) throws(LedgerError) -> [StoreStatusNote]

    /// What it adds to one order's status (`StoreOrderSection`).
    static func orderSections(_ ledger: any SettleLedger, orderId: String) throws(LedgerError) -> [StoreOrderSection]

    /// Whether `text` looks like an order id of this store's receipts, which its `orderLookup` can look up.
    static func isOrderId(_ text: String) -> Bool

    /// Its support lookup of an order id, paced by this process's `pacer`; nil when the
    /// configuration does not set the store up for it.
    static func orderLookup(_ configuration: Configuration, time: any TimeSource,
                            pacer: Pacer) throws(ConfigError) -> (any StoreOrderLookup)?
}

/// How a module's proof is read from the file `settle enqueue --proof-file` names (never from
/// argv: a proof may be a bearer secret).
package struct ProofFormat: Sendable {
    /// What the file holds, for help and errors: "a Huawei purchase (JSON: purchaseOrderId, purchaseToken)".
    package var what: String
    /// The proof the text (trimmed) is; a failure's message never quotes the text.
    package var read: @Sendable (String) -> Result<StoreProof, ProofError>

    package init(what: String, read: @escaping @Sendable (String) -> Result<StoreProof, ProofError>) {
        self.what = what
        self.read = read
    }
}

/// Why a proof file is not a proof of the store's; never quotes the proof.
package struct ProofError: Error, Sendable {
    package var message: String

    package init(_ message: String) {
        self.message = message
    }
}

extension StoreModule {
    package static func configuredRates(_ configuration: Configuration) -> [String: Double] { [:] }
    package static func validate(_ configuration: Configuration) throws(ConfigError) {}
    package static var proofFormat: ProofFormat? { nil }
    package static var enqueueOptions: EnqueueOptions? { nil }
    package static var migrations: [LedgerMigration] { [] }
    package static var metricFamilies: [any StoreMetricFamilies.Type] { [] }
    package static var sideQueues: [SideQueue] { [] }
    package static var voidedPurchaseFilter: VoidedPurchaseFilter? { nil }

    /// Its section as written, to decode with `ConfigObject` (nil when absent).
    package static func section(_ configuration: Configuration) throws(ConfigError) -> ConfigObject? {
        guard let key = descriptor.configurationKey, let value = configuration.storeSections[key] else { return nil }
        return try ConfigObject(value, path: key)
    }
}

/// What every module's adapter is made from: the one HTTP client and pacer of a process, the
/// ledger, the retry policy, the log and metrics.
package struct StoreContext: Sendable {
    package var configuration: Configuration
    package var ledger: any SettleLedger
    package var client: HTTPClient
    package var pacer: Pacer
    package var policy: RetryPolicy
    package var log: Log
    package var metrics: Metrics?

    package init(configuration: Configuration, ledger: any SettleLedger, client: HTTPClient, pacer: Pacer, policy: RetryPolicy,
                 log: Log, metrics: Metrics?) {
        self.configuration = configuration
        self.ledger = ledger
        self.client = client
        self.pacer = pacer
        self.policy = policy
        self.log = log
        self.metrics = metrics
    }
}

extension Array where Element == any StoreModule.Type {
    /// Registers every module's descriptor (`StoreRegistry`), migrations (`LedgerMigrations`) and
    /// configuration sections (`ConfigurationSections`), in this order: before any configuration
    /// is read or ledger opened.
    package func register() {
        for module in self {
            StoreRegistry.register(module.descriptor)
            LedgerMigrations.register(module.migrations)
            StoreMetricRegistry.register(module.metricFamilies)
            ConfigurationSections.register(module.configurationSections)
            SideQueue.register(module.sideQueues)
            VoidedPurchaseFilter.register(module.voidedPurchaseFilter, for: module.descriptor.store)
            LearnedFacts.register({ learned, order, ledger throws(LedgerError) in try module.record(learned, of: order, in: ledger) },
                                  for: module.descriptor.store)
            LedgerTidying.register({ ledger, log throws(LedgerError) in try module.tidy(ledger, log: log) },
                                   for: module.descriptor.store)
        }
    }
}
