extension TransactionalLedger {
    /// Whether orders name their store and may hold a purchase token (the `store` and
    /// `purchase_token` columns: SQLite migration 8, PostgreSQL 4). A read-only status of an older
    /// ledger may lack them: its orders are all of the one store settle knew then.
    package func namesOrderStores() throws(LedgerError) -> Bool {
        try schemaAtLeast(sqlite: LedgerSchema.storeColumnVersion, postgres: PostgresLedgerSchema.storeColumnVersion)
    }
}
