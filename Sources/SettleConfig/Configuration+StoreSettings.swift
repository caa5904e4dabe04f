extension Configuration {
    /// A store module's decoded section (`ConfigurationSection`), nil when the section is absent;
    /// the module reads it through an accessor of its own (`configuration.googlePlay`).
    package func storeSetting<T>(_ key: String, as type: T.Type = T.self) -> T? {
        storeSettings[key] as? T
    }
}
