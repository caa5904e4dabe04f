/// The money side (issue 37): each order's price and when settle recovered it, on both engines.
///
/// - `price_milliunits`, `price_currency`, `price_source`: what the customer paid (`Price`),
///   written when the store confirms the purchase the order holds: `store` when the store's
///   answer states it, `configured` from the configuration's `prices`, all three NULL when
///   neither does (unknown, never guessed).
/// - `recovered_at`: when settle's hook confirmed it granted the order's purchase (its first
///   `delivery`/`delivered` history row): the goods the backend had not granted, which settle
///   did. Set once; a redelivery never moves it.
/// - `orders_recovered` (covering: the report reads it alone) and `revocations_revoked` bound
///   `settle report --since` by time.
///
/// A backend's own new row carries none of these (a trigger clears them): only settle says what
/// it recovered. CHECKs hold a price to what `Price` accepts (0 to `Price.maxMilliunits`, a
/// currency of three capital letters), so no row can make a sum overflow or a page show markup.
/// Rows delivered before this migration get `recovered_at` from their history.
extension LedgerSchema {
    /// The SQLite ledger's migration.
    static let revenueMigration = """
        ALTER TABLE orders ADD COLUMN price_milliunits INTEGER
            CHECK (price_milliunits IS NULL OR price_milliunits BETWEEN 0 AND 1000000000000);
        ALTER TABLE orders ADD COLUMN price_currency TEXT
            CHECK (price_currency IS NULL OR (length(price_currency) = 3 AND price_currency GLOB '[A-Z][A-Z][A-Z]'));
        ALTER TABLE orders ADD COLUMN price_source TEXT
            CHECK (price_source IS NULL OR price_source IN ('store','configured'));
        ALTER TABLE orders ADD COLUMN recovered_at INTEGER;
        UPDATE orders SET recovered_at = (SELECT min(h.at) FROM history h WHERE h.order_id = orders.order_id
                                          AND h.kind = 'delivery' AND h.outcome = 'delivered')
        WHERE state IN ('delivering','finished','needs_attention','rejected') AND verified_transaction_id IS NOT NULL;
        CREATE INDEX orders_recovered ON orders(recovered_at, store, price_currency, price_milliunits)
            WHERE recovered_at IS NOT NULL;
        CREATE INDEX revocations_revoked ON revocations(updated_at) WHERE state = 'revoked';
        CREATE TRIGGER orders_new_unpriced AFTER INSERT ON orders
        WHEN NEW.recovered_at IS NOT NULL OR NEW.price_milliunits IS NOT NULL OR NEW.price_currency IS NOT NULL
             OR NEW.price_source IS NOT NULL BEGIN
            UPDATE orders SET recovered_at = NULL, price_milliunits = NULL, price_currency = NULL, price_source = NULL
            WHERE rowid = NEW.rowid;
        END;
        """

    /// The migration that keeps prices and `recovered_at`.
    package static let revenueVersion = version(of: revenueMigration)
}

extension PostgresLedgerSchema {
    /// As the SQLite ledger's `revenueMigration`.
    static let revenueMigration = """
        ALTER TABLE orders ADD COLUMN price_milliunits BIGINT
            CHECK (price_milliunits IS NULL OR price_milliunits BETWEEN 0 AND 1000000000000);
        ALTER TABLE orders ADD COLUMN price_currency TEXT
            CHECK (price_currency IS NULL OR price_currency ~ '^[A-Z]{3}$');
        ALTER TABLE orders ADD COLUMN price_source TEXT
            CHECK (price_source IS NULL OR price_source IN ('store','configured'));
        ALTER TABLE orders ADD COLUMN recovered_at BIGINT;
        UPDATE orders SET recovered_at = (SELECT min(h.at) FROM history h WHERE h.order_id = orders.order_id
                                          AND h.kind = 'delivery' AND h.outcome = 'delivered')
        WHERE state IN ('delivering','finished','needs_attention','rejected') AND verified_transaction_id IS NOT NULL;
        CREATE INDEX orders_recovered ON orders(recovered_at, store, price_currency, price_milliunits)
            WHERE recovered_at IS NOT NULL;
        CREATE INDEX revocations_revoked ON revocations(updated_at) WHERE state = 'revoked';
        CREATE FUNCTION settle_orders_new_unpriced() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
            NEW.recovered_at := NULL;
            NEW.price_milliunits := NULL;
            NEW.price_currency := NULL;
            NEW.price_source := NULL;
            RETURN NEW;
        END
        $$;
        CREATE TRIGGER orders_new_unpriced BEFORE INSERT ON orders
            FOR EACH ROW EXECUTE FUNCTION settle_orders_new_unpriced();
        """

    /// The migration that keeps prices and `recovered_at`.
    package static let revenueVersion = version(of: revenueMigration)
}
