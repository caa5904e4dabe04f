import Synchronization
import SettleBase

/// The stores this process knows: each module registers its descriptor once, the way a GRDB
/// tokenizer is registered, and nothing else keeps a list of stores. Registering the same
/// store again replaces its descriptor (a test's variant); order is that of first registration.
package enum StoreRegistry {
    private static let registered = Mutex<[StoreDescriptor]>([])

    package static func register(_ descriptor: StoreDescriptor) {
        registered.withLock { list in
            if let index = list.firstIndex(where: { $0.store == descriptor.store }) {
                list[index] = descriptor
            } else {
                list.append(descriptor)
            }
        }
    }

    /// Every registered store, in registration order.
    package static var stores: [Store] { registered.withLock { $0.map(\.store) } }

    package static var descriptors: [StoreDescriptor] { registered.withLock { $0 } }

    /// `store`'s descriptor; a placeholder naming it when no module registered it.
    package static func descriptor(_ store: Store) -> StoreDescriptor {
        registered.withLock { list in list.first { $0.store == store } } ?? .unregistered(store)
    }

    /// The first registered store's words for one of its own reasons (a list across stores,
    /// grouped by reason).
    package static func words(for reason: String) -> StoreReasonWords? {
        registered.withLock { list in list.lazy.compactMap { $0.reasons[reason] }.first }
    }
}
