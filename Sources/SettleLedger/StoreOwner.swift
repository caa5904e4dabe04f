import SettleModel

/// Who answers for an order's store in a message ("Apple reported a REFUND"), read from the
/// order's `store` column through the store's descriptor, so the ledger names no store itself.
enum StoreOwner {
    /// The descriptor's `owner` of the store a row's `store` column names ("the store" for none).
    static func of(_ stored: String?) -> String {
        stored.map { StoreRegistry.descriptor(Store(rawValue: $0)).owner } ?? "the store"
    }
}
