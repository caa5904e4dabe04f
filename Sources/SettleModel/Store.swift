import SettleBase

/// The store that sold an order's purchase, and so which store settle asks about it: an
/// identifier and nothing more. What a store is by nature (its names, how it must hear of a
/// delivery, its published rate limits) is its `StoreDescriptor`, registered once by its module
/// (`StoreRegistry`); the raw value is the ledger's `store` column and the hook payload's `store`.
package struct Store: RawRepresentable, Hashable, Comparable, Sendable, CaseIterable, CustomStringConvertible {
    package let rawValue: String

    package init(rawValue: String) {
        self.rawValue = rawValue
    }

    /// Every registered store, in the order of registration: what status, metrics and claims
    /// loop over.
    package static var allCases: [Store] { StoreRegistry.stores }

    /// The registered store spelled `name` (the ledger's and `--store`'s spelling); nil for one
    /// no module registered.
    package static func registered(_ name: String) -> Store? {
        allCases.first { $0.rawValue == name }
    }

    /// What this store is; a placeholder naming the raw value for one no module registered.
    package var descriptor: StoreDescriptor { StoreRegistry.descriptor(self) }

    /// What people call it: "App Store", "Google Play".
    package var displayName: String { descriptor.displayName }
    /// Who runs it, in messages such as "Google did not confirm the purchase".
    package var owner: String { descriptor.owner }
    /// The first part of this store's log events (`apple.breaker_open`, `google_play.breaker_open`).
    package var logName: String { descriptor.logName }
    /// What is missing from the configuration while this store's orders cannot be verified.
    package var unconfiguredHint: String { descriptor.unconfiguredHint }
    /// Whether the store must hear that an order was delivered before settle may call it
    /// finished (the order stays `delivering` until it was told, whatever the configuration).
    package var mustBeToldOfDelivery: Bool { descriptor.deliveryNotice.beforeFinished }
    /// How long after a purchase the store refunds it unless it was told of the delivery; nil
    /// for a store that never does.
    package var refundWindowSeconds: Int64? { descriptor.deliveryNotice.refundWindowSeconds }

    package var description: String { rawValue }

    /// Registration order (so lists read the same on every run), then the name.
    package static func < (lhs: Store, rhs: Store) -> Bool {
        let order = allCases
        switch (order.firstIndex(of: lhs), order.firstIndex(of: rhs)) {
        case let (l?, r?): return l < r
        case (_?, nil): return true
        case (nil, _?): return false
        case (nil, nil): return lhs.rawValue < rhs.rawValue
        }
    }

    /// `stores` when it leaves some store out; nil when it names every store (or is nil): what
    /// a claim filters by.
    package static func only(_ stores: Set<Store>?) -> Set<Store>? {
        guard let stores, !Set(allCases).isSubset(of: stores) else { return nil }
        return stores
    }
}
