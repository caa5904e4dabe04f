import Synchronization
import SettleModel

/// How a store that voids purchases after they were verified (refunds, chargebacks, revocations
/// the ledger learns of on any host while an order is verified) trims what an order may be
/// granted: its module registers one (`StoreModule.voidedPurchaseFilter`), and granting calls it
/// for that store's orders under the claim's row lock, so a voiding is never granted.
package struct VoidedPurchaseFilter: Sendable {
    /// `match` without what the store voided: a candidate voided whole is dropped, one voided in
    /// part keeps the rest. Empty candidates: everything was voided.
    package var removingVoided: @Sendable (any LedgerTransaction, Match) throws -> Match
    /// Why an order all of whose purchase was voided is rejected, in its store's words.
    package var rejection: String

    package init(rejection: String, removingVoided: @escaping @Sendable (any LedgerTransaction, Match) throws -> Match) {
        self.rejection = rejection
        self.removingVoided = removingVoided
    }

    private static let registered = Mutex<[Store: VoidedPurchaseFilter]>([:])

    /// Registers `store`'s filter (a module's, at registration); a later one replaces it.
    package static func register(_ filter: VoidedPurchaseFilter?, for store: Store) {
        guard let filter else { return }
        registered.withLock { $0[store] = filter }
    }

    /// The filter of the store named `store` (an order row's `store`); nil for one that voids nothing.
    static func of(_ store: String?) -> VoidedPurchaseFilter? {
        guard let store else { return nil }
        return registered.withLock { $0[Store(rawValue: store)] }
    }
}
