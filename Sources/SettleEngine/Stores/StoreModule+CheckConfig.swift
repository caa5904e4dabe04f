import SettleConfig

/// Default of what `settle check-config` asks a module beyond `validate`: a store without
/// secrets of its own has none to read.
extension StoreModule {
    package static func readSecrets(_ configuration: Configuration) throws(ConfigError) {}
}
