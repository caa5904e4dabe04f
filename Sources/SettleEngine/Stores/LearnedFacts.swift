import Synchronization
import SettleModel
import SettleLedger

/// How each store records what its verification learned (`StoreModule.record`), registered
/// with its module: the pass hands a `LearnedFact` to the order's store, never reading it.
package enum LearnedFacts {
    package typealias Record = @Sendable (any LearnedFact, Order, any SettleLedger) throws(LedgerError) -> Void

    private static let byStore = Mutex<[Store: Record]>([:])

    package static func register(_ record: @escaping Record, for store: Store) {
        byStore.withLock { $0[store] = record }
    }

    /// Records `fact` through the order's store's module; nothing when none registered one.
    package static func record(_ fact: any LearnedFact, of order: Order, in ledger: any SettleLedger) throws(LedgerError) {
        guard let record = byStore.withLock({ $0[order.store] }) else { return }
        try record(fact, order, ledger)
    }
}

extension StoreModule {
    package static func record(_ learned: any LearnedFact, of order: Order, in ledger: any SettleLedger) throws(LedgerError) {}
}
