import Synchronization
import SettleBase

/// A top-level configuration section a store module decodes itself (`google_play`): the core
/// reads the key, hands the object to the module's decoder and keeps what it returns in
/// `Configuration.storeSettings`, so the core holds no store's settings type and names no key.
/// A store registers its sections with its module (`StoreModule.configurationSections`).
package struct ConfigurationSection: Sendable {
    package typealias Decode = @Sendable (ConfigObject, ConfigurationDecoder) throws(ConfigError) -> any Sendable
    package typealias Check = @Sendable (Configuration) throws(ConfigError) -> Void
    package typealias Problems = @Sendable (Configuration) -> [String]

    /// The top-level key (`receipt_api`).
    package var key: String
    /// The section's settings, every key checked; its errors name the keys (`google_play.api_url: ...`).
    package var decode: Decode
    /// What is wrong with the rest of the configuration given this section (`consumption.respond`
    /// needs `server_api`), listed with every other problem; `Configuration` is as decoded so far
    /// (a section that failed is absent). Nil: nothing.
    package var problems: Problems?
    /// What must hold of the whole decoded configuration for this section (a product sold on the
    /// store needs the section), run once every section decoded cleanly; nil: nothing.
    package var check: Check?
    /// Whether the section alone configures its store (`receipt_api` does; `consumption`, how
    /// refund requests are answered, does not): a configuration with none is missing a store.
    package var configuresStore: Bool
    /// The problem reported when no store's section is configured at all, for the sections of the
    /// store settle verified with before there were more (nil for every other).
    package var whenNoStoreIsConfigured: String?

    package init(key: String, decode: @escaping Decode, problems: Problems? = nil, check: Check? = nil,
                 configuresStore: Bool = true, whenNoStoreIsConfigured: String? = nil) {
        self.key = key
        self.decode = decode
        self.problems = problems
        self.check = check
        self.configuresStore = configuresStore
        self.whenNoStoreIsConfigured = whenNoStoreIsConfigured
    }
}

/// The sections the registered store modules decode, in registration order (the order their
/// errors are listed in). Registering a key again replaces its section (a test's variant).
package enum ConfigurationSections {
    private static let registered = Mutex<[ConfigurationSection]>([])

    package static func register(_ sections: [ConfigurationSection]) {
        registered.withLock { list in
            for section in sections {
                if let index = list.firstIndex(where: { $0.key == section.key }) {
                    list[index] = section
                } else {
                    list.append(section)
                }
            }
        }
    }

    package static var all: [ConfigurationSection] { registered.withLock { $0 } }
}
