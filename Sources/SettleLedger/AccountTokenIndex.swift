/// The orders that carry an account token (`app_account_token`), found by the token
/// (`orders_account_token`, on `lower(app_account_token)`: a UUID compares in any case).
///
/// Three reads look an order up by its token: whose purchase a store reports when the backend never
/// saw it (`TransactionalLedger.user(store:accountId:)`), whether a token being bound already
/// stands for another user (`LedgerTransaction.otherUsersOrder`), and support's search by token.
/// Without the index each read every order of its store: 0.4–0.8 s at a million orders, for every
/// store-reported purchase. The index changes only when an order is added or its token bound, not
/// on a change of state.
extension LedgerSchema {
    package static let accountTokenIndexVersion = version(of: accountTokenIndex)
    static let accountTokenIndex = "CREATE INDEX orders_account_token ON orders(lower(app_account_token));"
}

extension PostgresLedgerSchema {
    package static let accountTokenIndexVersion = version(of: accountTokenIndex)
    /// The same SQL as the SQLite ledger's.
    static let accountTokenIndex = LedgerSchema.accountTokenIndex
}

/// The token reads' SQL, the same on both engines. The store is compared as `store || ''` so that
/// no planner takes the store's index (every order of the store) over the token's; the exact token
/// as `app_account_token || ''`, since SQLite otherwise propagates `app_account_token = ?` into
/// `lower(app_account_token)`, which then matches no index, and reads every order.
package enum AccountTokenSQL {
    /// Verified orders of a store carrying exactly this token; their buyers. Arguments: the token
    /// (twice: the index's key and the exact text), the store.
    package static let buyers = """
        SELECT DISTINCT \(OrderBuyer.column) AS buyer FROM orders o
        WHERE lower(o.app_account_token) = lower(?) AND o.app_account_token || '' = ? AND o.store || '' = ?
          AND o.user_id <> '' AND \(OrderBuyer.verified) LIMIT 2
        """

    /// Another user's order of the store carrying the token, in any case. Arguments: the token, the
    /// store, the order that is not it, the user (twice: as holder and as buyer).
    package static let otherUsersOrder = """
        SELECT o.order_id FROM orders o
        WHERE lower(o.app_account_token) = lower(?) AND o.store || '' = ? AND o.order_id <> ?
          AND (o.user_id <> ? OR \(OrderBuyer.column) <> ?)
        ORDER BY o.order_id LIMIT 1
        """
}
