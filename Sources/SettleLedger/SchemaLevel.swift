extension TransactionalLedger {
    /// Whether the schema reached a numbered core migration (a store's tables that predate named migrations).
    package func schemaAtLeast(sqlite: Int, postgres: Int) throws(LedgerError) -> Bool {
        try schemaReached(self is PostgresLedger ? postgres : sqlite)
    }
}
