import SettleBase

/// The pacer's rates: each key's requests a second, from its store's descriptor (the published
/// rate of its endpoint group, or the configured one), so a store that registers a descriptor
/// is paced and one that publishes nothing is not (issue 27).
package enum StoreRateLimits {
    /// The requests a second a key may make: the configured value for its group (`configured`
    /// holds each store's `rate_limits`), else the published one, scaled for its environment.
    /// Nil for a key of a store or group settle knows no rate for.
    package static func rate(_ key: PacerKey, configured: [Store: [String: Double]]) -> Double? {
        let store = Store(rawValue: key.store)
        guard StoreRegistry.stores.contains(store) else { return nil }
        return store.descriptor.rate(group: key.group, environment: key.environment, configured: configured[store] ?? [:])
    }

    /// Whether the pacer learns a key's rate: its store publishes none for the group (verifyReceipt).
    package static func learns(_ key: PacerKey) -> Bool {
        let store = Store(rawValue: key.store)
        guard StoreRegistry.stores.contains(store) else { return false }
        return store.descriptor.learns(group: key.group)
    }
}
