import SettleConfig

extension StoreModule {
    /// None: a store whose sections stay raw (`configurationKey`, read by `section`) or that has none.
    package static var configurationSections: [ConfigurationSection] { [] }
}
