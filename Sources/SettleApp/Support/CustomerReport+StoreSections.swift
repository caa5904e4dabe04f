import SettleBase
import SettleModel
import SettleConfig
import SettleLedger
import SettleEngine

/// What the order's store adds to a customer's subscription line (`StoreOrderSection`): a
/// subscription on hold or in its grace period as the store describes it, and what the store was
/// told of whose it is. Any store, through its module; the core names none.
extension CustomerReport {
    static func subscription(_ order: Order, configuration: Configuration, now: Int64, ledger: any SettleLedger,
                             modules: [any StoreModule.Type] = StoreModules.all) throws(LedgerError) -> String? {
        let base = subscription(order, configuration: configuration, now: now)
        guard base != nil else { return nil }
        let notes = try modules.filter { $0.descriptor.store == order.store }.orderSections(ledger, orderId: order.orderId)
            .compactMap(\.subscriptionNote).filter { !$0.isEmpty }
        return ([base].compactMap { $0 } + notes).joined(separator: "; ")
    }
}
