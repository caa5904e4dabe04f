import SettleLedger

/// The App Store's named migrations (`LedgerMigration`): what of the ledger's schema is its own.
enum AppStoreMigrations {
    /// The trigger that queues Apple's Finish Transaction when an App Store order ends
    /// `finished` (its transaction verified), in the transaction that finishes it: the core's
    /// migration 13 (PostgreSQL 9) made it as `orders_apple_finish`; the module owns it now, by
    /// its own name, so the shared schema runs nothing written for one store.
    static let finishQueue = LedgerMigration(
        name: "app_store.finish_queue",
        sqlite: """
            DROP TRIGGER IF EXISTS orders_apple_finish;
            CREATE TRIGGER app_store_finish_queue AFTER UPDATE OF state ON orders
            WHEN NEW.state = 'finished' AND OLD.state IS NOT 'finished' AND NEW.store = 'app_store'
                 AND NEW.verified_transaction_id IS NOT NULL BEGIN
                INSERT OR IGNORE INTO apple_finishes(transaction_id, order_id, environment, next_attempt_at, created_at, updated_at)
                VALUES (NEW.verified_transaction_id, NEW.order_id, COALESCE(NEW.environment, ''), NEW.updated_at, NEW.updated_at,
                        NEW.updated_at);
            END;
            """,
        postgres: """
            DROP TRIGGER IF EXISTS orders_apple_finish ON orders;
            DROP FUNCTION IF EXISTS settle_orders_apple_finish();
            CREATE FUNCTION settle_app_store_finish_queue() RETURNS trigger LANGUAGE plpgsql AS $$
            BEGIN
                INSERT INTO apple_finishes(transaction_id, order_id, environment, next_attempt_at, created_at, updated_at)
                VALUES (NEW.verified_transaction_id, NEW.order_id, COALESCE(NEW.environment, ''), NEW.updated_at, NEW.updated_at,
                        NEW.updated_at)
                ON CONFLICT (transaction_id) DO NOTHING;
                RETURN NULL;
            END $$;
            CREATE TRIGGER app_store_finish_queue AFTER UPDATE OF state ON orders FOR EACH ROW
                WHEN (NEW.state = 'finished' AND OLD.state IS DISTINCT FROM 'finished' AND NEW.store = 'app_store'
                      AND NEW.verified_transaction_id IS NOT NULL)
                EXECUTE FUNCTION settle_app_store_finish_queue();
            """)
}
