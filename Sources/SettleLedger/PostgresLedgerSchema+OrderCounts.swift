/// PostgreSQL's migration 18 (issue 38): the counts by store and state that `settle status`,
/// `/api/status` and the console's overview show, and the overview chart's orders ended
/// (finished, rejected) per hour of `updated_at`, kept by a trigger rather than counted.
/// Counting a million orders was a parallel scan (~210 ms) on every view; the chart's 336
/// index range counts over a week of a million-order ledger took 240–590 ms.
///
/// One row a count would be one hot row every host's transitions update, serializing them.
/// So each count is split over slots, (store, state, slot) → n, summed on read (at most stores ×
/// states × 64 rows). A writing transaction takes a slot no other running transaction holds
/// (`pg_try_advisory_xact_lock`, starting from its backend's pid) and keeps it to its end, so two
/// transactions never update the same count row: no waits, no deadlock between them. Only when 64
/// transactions write orders at once does the 65th wait for a slot.
///
/// The trigger runs as the ledger's owner (`SECURITY DEFINER`, with the schema it was created
/// in as its search path): a backend's role may insert orders without any right on the counts.
/// An hour is `updated_at - updated_at % 3600`, which cannot overflow whatever a backend wrote
/// (an absurd negative time lands in a wrong hour, never in the last week the chart reads).
extension PostgresLedgerSchema {
    /// The migration that keeps the counts by store and state in `order_count_deltas`.
    package static let orderCountsVersion = version(of: orderCountsMigration)

    /// The advisory lock class of the count slots (two-key form, apart from the migration lock):
    /// "sett" as an integer.
    package static let countSlotLock: Int32 = 0x7365_7474

    static let orderCountsMigration = """
        LOCK TABLE orders IN SHARE ROW EXCLUSIVE MODE;
        CREATE TABLE order_count_deltas (
            store  TEXT NOT NULL,
            state  TEXT NOT NULL,
            slot   INTEGER NOT NULL,
            n      BIGINT NOT NULL,
            PRIMARY KEY (store, state, slot)
        );
        CREATE FUNCTION settle_count_slot() RETURNS integer LANGUAGE plpgsql AS $$
        DECLARE
            kept text := nullif(current_setting('settle.count_slot', true), '');
            first integer := pg_backend_pid() % 64;
            candidate integer;
        BEGIN
            IF kept IS NOT NULL THEN RETURN kept::integer; END IF;
            FOR i IN 0..63 LOOP
                candidate := (first + i) % 64;
                IF pg_try_advisory_xact_lock(\(countSlotLock), candidate) THEN
                    PERFORM set_config('settle.count_slot', candidate::text, true);
                    RETURN candidate;
                END IF;
            END LOOP;
            PERFORM pg_advisory_xact_lock(\(countSlotLock), first);
            PERFORM set_config('settle.count_slot', first::text, true);
            RETURN first;
        END $$;
        CREATE TABLE order_hour_counts (
            hour   BIGINT NOT NULL,
            state  TEXT NOT NULL,
            slot   INTEGER NOT NULL,
            n      BIGINT NOT NULL,
            PRIMARY KEY (hour, state, slot)
        );
        CREATE FUNCTION settle_count_orders() RETURNS trigger LANGUAGE plpgsql
            SECURITY DEFINER SET search_path FROM CURRENT AS $$
        DECLARE
            chosen integer;
            old_hour bigint;
            new_hour bigint;
        BEGIN
            IF TG_OP <> 'INSERT' AND OLD.state IN ('finished', 'rejected') THEN
                old_hour := OLD.updated_at - OLD.updated_at % 3600;
            END IF;
            IF TG_OP <> 'DELETE' AND NEW.state IN ('finished', 'rejected') THEN
                new_hour := NEW.updated_at - NEW.updated_at % 3600;
            END IF;
            IF TG_OP = 'UPDATE' AND OLD.state = NEW.state AND OLD.store = NEW.store
               AND old_hour IS NOT DISTINCT FROM new_hour THEN
                RETURN NULL;
            END IF;
            chosen := settle_count_slot();
            IF TG_OP <> 'UPDATE' OR OLD.state <> NEW.state OR OLD.store <> NEW.store THEN
                IF TG_OP <> 'INSERT' THEN
                    INSERT INTO order_count_deltas AS d(store, state, slot, n) VALUES (OLD.store, OLD.state, chosen, -1)
                    ON CONFLICT (store, state, slot) DO UPDATE SET n = d.n - 1;
                END IF;
                IF TG_OP <> 'DELETE' THEN
                    INSERT INTO order_count_deltas AS d(store, state, slot, n) VALUES (NEW.store, NEW.state, chosen, 1)
                    ON CONFLICT (store, state, slot) DO UPDATE SET n = d.n + 1;
                END IF;
            END IF;
            IF old_hour IS NOT NULL AND (new_hour IS NULL OR old_hour <> new_hour OR OLD.state <> NEW.state) THEN
                INSERT INTO order_hour_counts AS h(hour, state, slot, n) VALUES (old_hour, OLD.state, chosen, -1)
                ON CONFLICT (hour, state, slot) DO UPDATE SET n = h.n - 1;
            END IF;
            IF new_hour IS NOT NULL AND (old_hour IS NULL OR old_hour <> new_hour OR OLD.state <> NEW.state) THEN
                INSERT INTO order_hour_counts AS h(hour, state, slot, n) VALUES (new_hour, NEW.state, chosen, 1)
                ON CONFLICT (hour, state, slot) DO UPDATE SET n = h.n + 1;
            END IF;
            RETURN NULL;
        END $$;
        CREATE TRIGGER orders_count AFTER INSERT OR DELETE OR UPDATE OF state, store, updated_at ON orders
            FOR EACH ROW EXECUTE FUNCTION settle_count_orders();
        INSERT INTO order_count_deltas(store, state, slot, n)
            SELECT store, state, 0, count(*) FROM orders GROUP BY store, state;
        INSERT INTO order_hour_counts(hour, state, slot, n)
            SELECT updated_at - updated_at % 3600, state, 0, count(*) FROM orders
            WHERE state IN ('finished', 'rejected') GROUP BY 1, 2;
        CREATE VIEW order_counts AS
            SELECT store, state, sum(n)::bigint AS n FROM order_count_deltas GROUP BY store, state;
        """

    /// Recounts `order_count_deltas` from the orders, for a bulk load that ran with the trigger
    /// off (`LedgerCopy`): one scan instead of a trigger a row.
    static let recountOrders = """
        DELETE FROM order_count_deltas;
        INSERT INTO order_count_deltas(store, state, slot, n)
            SELECT store, state, 0, count(*) FROM orders GROUP BY store, state;
        DELETE FROM order_hour_counts;
        INSERT INTO order_hour_counts(hour, state, slot, n)
            SELECT updated_at - updated_at % 3600, state, 0, count(*) FROM orders
            WHERE state IN ('finished', 'rejected') GROUP BY 1, 2;
        """
}
