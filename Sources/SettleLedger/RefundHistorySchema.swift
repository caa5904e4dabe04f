/// The migrations of refund history per customer (issue 37): the index that finds the orders a
/// buyer gave away by transfer (`support_actions_from_user`), so `TransactionalLedger.refundHistory`
/// reads a buyer's refunds through indexes alone, and a buyer's refunded orders by the buyer and the
/// refund's time (`orders_user` alone read every order of a buyer, at every grant: a whale's
/// thousands). The same SQL on both engines (SQLite migration 24, PostgreSQL 21).
package enum RefundHistorySchema {
    static let indexes = """
        CREATE INDEX support_actions_from_user ON support_actions(from_user) WHERE kind = 'transfer';
        CREATE INDEX orders_user_refunded ON orders(user_id, refunded_at) WHERE refunded_at IS NOT NULL;
        """
}

extension LedgerSchema {
    static let refundHistoryMigration = RefundHistorySchema.indexes
    /// The version the refund history's migration makes: its place in the list, never a number kept by hand.
    package static let refundHistoryVersion = version(of: refundHistoryMigration)
}

extension PostgresLedgerSchema {
    static let refundHistoryMigration = RefundHistorySchema.indexes
    package static let refundHistoryVersion = version(of: refundHistoryMigration)
}
