import SettleBase

extension StoreRegistry {
    /// The stores a product without `store` is sold on (`StoreDescriptor.isDefaultForProducts`).
    package static var defaultProductStores: Set<Store> {
        Set(descriptors.filter { $0.isDefaultForProducts }.map { $0.store })
    }

    /// Every name a product's `store` may give for several stores, in registration order.
    package static var productStoreAliases: [String] {
        var aliases: [String] = []
        for alias in descriptors.flatMap({ $0.productStoreAliases }) where !aliases.contains(alias) {
            aliases.append(alias)
        }
        return aliases
    }

    /// The stores `alias` names (`both`); nil when no registered store answers to it.
    package static func productStores(alias: String) -> Set<Store>? {
        let stores = Set(descriptors.filter { $0.productStoreAliases.contains(alias) }.map { $0.store })
        return stores.isEmpty ? nil : stores
    }

    /// The stores whose one-time products come in purchase options, in registration order.
    package static var purchaseOptionStores: [StoreDescriptor] {
        descriptors.filter { $0.hasPurchaseOptions }
    }
}
