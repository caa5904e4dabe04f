extension Store {
    /// The store of an order that names none: a row of a ledger older than the `store` column
    /// (SQLite migration 8, PostgreSQL 4), or an order made without one. It is the store whose
    /// descriptor says it held such orders (`heldUnnamedOrders`); the first registered otherwise.
    package static var ofUnnamedOrders: Store {
        let descriptors = StoreRegistry.descriptors
        return (descriptors.first(where: \.heldUnnamedOrders) ?? descriptors[0]).store
    }
}
