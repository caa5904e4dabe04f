import Synchronization
import SettleBase
import SettleModel
import SettleLedger

/// What each store tidies in the ledger before a pass claims anything (`StoreModule.tidy`),
/// registered with its module whether or not the store is configured: rows it must set aside
/// are set aside all the same.
package enum LedgerTidying {
    package typealias Tidy = @Sendable (any SettleLedger, Log) throws(LedgerError) -> Void

    private static let byStore = Mutex<[(Store, Tidy)]>([])

    /// Registering a store again replaces its tidying.
    package static func register(_ tidy: @escaping Tidy, for store: Store) {
        byStore.withLock { list in
            list.removeAll { $0.0 == store }
            list.append((store, tidy))
        }
    }

    package static var registered: [Tidy] { byStore.withLock { $0.map(\.1) } }
}

extension StoreModule {
    package static func tidy(_ ledger: any SettleLedger, log: Log) throws(LedgerError) {}
}
