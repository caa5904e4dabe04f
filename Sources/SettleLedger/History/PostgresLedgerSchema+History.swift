/// The ledger's history: the numbered migrations every user's ledger has run, in order. They
/// are never edited (a ledger that ran one would differ from one that runs the edited text), and
/// they are the one place outside a store's folder that still spells the first two stores' names:
/// as they were when those stores lived in the core. A new store adds none; its tables are its
/// module's named migrations (`LedgerMigration`).
extension PostgresLedgerSchema {
    package static let migrations: [String] = [
        // 1: everything the SQLite ledger has at its schema 4, plus the fencing token.
        """
        CREATE TABLE receipts (
            sha256      TEXT PRIMARY KEY CHECK (length(sha256) = 64),
            data        TEXT NOT NULL,
            created_at  BIGINT NOT NULL DEFAULT extract(epoch FROM now())::bigint
        );
        CREATE TABLE orders (
            order_id            TEXT PRIMARY KEY CHECK (length(order_id) BETWEEN 1 AND 200),
            user_id             TEXT NOT NULL,
            product_id          TEXT NOT NULL,
            transaction_id      TEXT,
            receipt_sha256      TEXT REFERENCES receipts(sha256),
            signed_transaction  TEXT,
            state               TEXT NOT NULL DEFAULT 'pending'
                                CHECK (state IN ('pending','verifying','delivering','finished','rejected','needs_attention')),
            attempts            INTEGER NOT NULL DEFAULT 0 CHECK (attempts >= 0),
            next_attempt_at     BIGINT NOT NULL DEFAULT extract(epoch FROM now())::bigint,
            reason              TEXT,
            last_error          TEXT,
            environment         TEXT,
            verified_transaction_id  TEXT,
            original_transaction_id  TEXT,
            verified_product_id TEXT,
            quantity            INTEGER,
            purchase_date_ms    BIGINT,
            expires_date_ms     BIGINT,
            lease_host          TEXT,
            lease_pid           INTEGER,
            lease_start         TEXT,
            lease_expires_at    BIGINT,
            fencing_token       BIGINT NOT NULL DEFAULT 0,
            created_at          BIGINT NOT NULL DEFAULT extract(epoch FROM now())::bigint,
            updated_at          BIGINT NOT NULL DEFAULT extract(epoch FROM now())::bigint,
            finished_at         BIGINT,
            grant_key           TEXT,
            app_account_token   TEXT,
            CHECK ((state = 'finished') = (finished_at IS NOT NULL)),
            CHECK ((state IN ('verifying','delivering')) = (lease_pid IS NOT NULL)),
            CHECK (state NOT IN ('delivering','finished') OR verified_transaction_id IS NOT NULL),
            CHECK (receipt_sha256 IS NOT NULL OR signed_transaction IS NOT NULL OR transaction_id IS NOT NULL)
        );
        CREATE INDEX orders_claim ON orders(next_attempt_at, order_id) WHERE state = 'pending';
        CREATE INDEX orders_leased ON orders(lease_expires_at) WHERE state IN ('verifying','delivering');
        CREATE INDEX orders_user ON orders(user_id);
        CREATE INDEX orders_transaction ON orders(transaction_id);
        CREATE INDEX orders_verified_transaction ON orders(verified_transaction_id);
        CREATE INDEX orders_original_transaction ON orders(original_transaction_id);
        CREATE INDEX orders_recent ON orders(updated_at DESC, order_id);
        CREATE INDEX orders_state_created ON orders(state, created_at);
        CREATE TABLE history (
            id           BIGSERIAL PRIMARY KEY,
            order_id     TEXT NOT NULL REFERENCES orders(order_id),
            at           BIGINT NOT NULL,
            kind         TEXT NOT NULL CHECK (kind IN ('enqueue','verification','delivery','rescue','retry')),
            outcome      TEXT NOT NULL,
            apple_status INTEGER,
            hook_exit    INTEGER,
            environment  TEXT,
            duration_ms  BIGINT,
            detail       TEXT
        );
        CREATE INDEX history_order ON history(order_id, id);
        CREATE TABLE grants (
            grant_key       TEXT PRIMARY KEY,
            transaction_id  TEXT NOT NULL,
            order_id        TEXT UNIQUE REFERENCES orders(order_id),
            source          TEXT NOT NULL DEFAULT 'settle' CHECK (source IN ('settle','outside')),
            granted_at      BIGINT NOT NULL,
            note            TEXT,
            CHECK ((source = 'settle') = (order_id IS NOT NULL))
        );
        CREATE INDEX grants_transaction ON grants(transaction_id);
        CREATE TABLE apple_breaker (
            id                    INTEGER PRIMARY KEY CHECK (id = 1),
            state                 TEXT NOT NULL DEFAULT 'closed' CHECK (state IN ('closed','open')),
            consecutive_failures  INTEGER NOT NULL DEFAULT 0,
            cooldown_seconds      BIGINT NOT NULL DEFAULT 0,
            retry_at              BIGINT,
            last_error            TEXT,
            updated_at            BIGINT NOT NULL DEFAULT extract(epoch FROM now())::bigint,
            CHECK ((state = 'open') = (retry_at IS NOT NULL))
        );
        INSERT INTO apple_breaker(id) VALUES (1);
        CREATE TABLE daemons (
            host               TEXT NOT NULL,
            pid                INTEGER NOT NULL,
            process_start      TEXT NOT NULL,
            started_at         BIGINT NOT NULL,
            heartbeat_at       BIGINT NOT NULL,
            last_pass_at       BIGINT,
            last_pass_summary  TEXT,
            stopped_at         BIGINT,
            PRIMARY KEY (host, pid, process_start)
        );
        """,
        // 2: the SQLite ledger's order columns of its schema 5 (origin, refund marks) and history
        // kinds, so `settle ledger copy` carries them; and new rows are forced to `pending`: a
        // backend role enqueues, and nothing it inserts can claim to be verified or delivered
        // (rescue would deliver such a row without Apple). `settle ledger copy`, the one writer
        // of rows in other states, disables the trigger inside its own transaction (it owns the table).
        """
        ALTER TABLE orders ADD COLUMN origin TEXT NOT NULL DEFAULT 'backend';
        ALTER TABLE orders ADD COLUMN refunded_at BIGINT;
        ALTER TABLE orders ADD COLUMN refund_kind TEXT;
        ALTER TABLE orders ADD COLUMN refund_reason TEXT;
        ALTER TABLE history DROP CONSTRAINT history_kind_check;
        ALTER TABLE history ADD CONSTRAINT history_kind_check
            CHECK (kind IN ('enqueue','verification','delivery','rescue','retry','notification','revoke','consumption','assign'));
        CREATE FUNCTION settle_orders_new_pending() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
            NEW.state := 'pending';
            NEW.attempts := 0;
            NEW.reason := NULL;
            NEW.last_error := NULL;
            NEW.environment := NULL;
            NEW.verified_transaction_id := NULL;
            NEW.original_transaction_id := NULL;
            NEW.verified_product_id := NULL;
            NEW.quantity := NULL;
            NEW.purchase_date_ms := NULL;
            NEW.expires_date_ms := NULL;
            NEW.grant_key := NULL;
            NEW.lease_host := NULL;
            NEW.lease_pid := NULL;
            NEW.lease_start := NULL;
            NEW.lease_expires_at := NULL;
            NEW.fencing_token := 0;
            NEW.finished_at := NULL;
            NEW.origin := 'backend';
            NEW.refunded_at := NULL;
            NEW.refund_kind := NULL;
            NEW.refund_reason := NULL;
            RETURN NEW;
        END
        $$;
        CREATE TRIGGER orders_new_pending BEFORE INSERT ON orders
            FOR EACH ROW EXECUTE FUNCTION settle_orders_new_pending();
        """,
        // 3: App Store Server Notifications, as the SQLite ledger keeps them (its schemas 5 to 7):
        // each notification stored once by UUID (the primary key is what makes a retry reaching
        // another host a no-op), revokes and refund-request answers owed, each claimed by one host
        // at a time (`claim` counts the claims and fences the outcome), and the history cursor
        // with the lease of the one host reading Apple's history.
        """
        CREATE TABLE notifications (
            uuid                     TEXT PRIMARY KEY,
            type                     TEXT NOT NULL,
            subtype                  TEXT,
            environment              TEXT NOT NULL,
            signed_date_ms           BIGINT,
            transaction_id           TEXT,
            original_transaction_id  TEXT,
            order_id                 TEXT,
            source                   TEXT NOT NULL CHECK (source IN ('endpoint','history')),
            received_at              BIGINT NOT NULL,
            outcome                  TEXT NOT NULL,
            detail                   TEXT,
            payload                  TEXT NOT NULL
        );
        CREATE INDEX notifications_transaction ON notifications(transaction_id);
        CREATE INDEX notifications_order ON notifications(order_id);
        CREATE INDEX notifications_received ON notifications(received_at);
        CREATE INDEX orders_refunded ON orders(refunded_at) WHERE refunded_at IS NOT NULL;
        CREATE TABLE revocations (
            transaction_id   TEXT PRIMARY KEY,
            order_id         TEXT NOT NULL REFERENCES orders(order_id),
            kind             TEXT NOT NULL,
            state            TEXT NOT NULL DEFAULT 'pending'
                             CHECK (state IN ('pending','revoked','cancelled','needs_attention')),
            attempts         INTEGER NOT NULL DEFAULT 0,
            next_attempt_at  BIGINT NOT NULL,
            last_error       TEXT,
            created_at       BIGINT NOT NULL,
            updated_at       BIGINT NOT NULL,
            round            INTEGER NOT NULL DEFAULT 1,
            claim            BIGINT NOT NULL DEFAULT 0
        );
        CREATE INDEX revocations_due ON revocations(next_attempt_at) WHERE state = 'pending';
        CREATE INDEX revocations_order ON revocations(order_id);
        CREATE TABLE consumption_answers (
            notification_uuid  TEXT PRIMARY KEY REFERENCES notifications(uuid),
            transaction_id     TEXT NOT NULL,
            environment        TEXT NOT NULL,
            order_id           TEXT,
            state              TEXT NOT NULL DEFAULT 'pending' CHECK (state IN ('pending','sent','failed')),
            attempts           INTEGER NOT NULL DEFAULT 0,
            next_attempt_at    BIGINT NOT NULL,
            deadline_at        BIGINT NOT NULL,
            body               TEXT,
            apple_status       INTEGER,
            last_error         TEXT,
            updated_at         BIGINT NOT NULL,
            claim              BIGINT NOT NULL DEFAULT 0
        );
        CREATE INDEX consumption_due ON consumption_answers(next_attempt_at) WHERE state = 'pending';
        CREATE TABLE notification_cursor (
            environment       TEXT PRIMARY KEY,
            synced_until_ms   BIGINT,
            window_start_ms   BIGINT,
            window_end_ms     BIGINT,
            pagination_token  TEXT,
            updated_at        BIGINT NOT NULL,
            started_at_ms     BIGINT,
            lease_owner       TEXT,
            lease_expires_at  BIGINT
        );
        """,
        // 4: Google Play, as the SQLite ledger's migration 8: the order's store, its purchase
        // token (a Play order's proof) and `delivered_at` (the hook said delivered, Google is not
        // told yet); RTDN pushes stored once by message id; where the voided purchases poll is.
        // A backend role may insert `store` and `purchase_token`; the trigger still forces
        // everything settle decides (now `delivered_at` too) to its start value.
        """
        ALTER TABLE orders ADD COLUMN store TEXT NOT NULL DEFAULT 'app_store' CHECK (store IN ('app_store','google_play'));
        ALTER TABLE orders ADD COLUMN purchase_token TEXT;
        ALTER TABLE orders ADD COLUMN delivered_at BIGINT;
        DO $$
        DECLARE proof text;
        BEGIN
            SELECT conname INTO proof FROM pg_constraint
            WHERE conrelid = 'orders'::regclass AND contype = 'c'
              AND pg_get_constraintdef(oid) LIKE '%receipt_sha256 IS NOT NULL%';
            IF proof IS NOT NULL THEN
                EXECUTE format('ALTER TABLE orders DROP CONSTRAINT %I', proof);
            END IF;
        END
        $$;
        ALTER TABLE orders ADD CONSTRAINT orders_proof_check CHECK (CASE store WHEN 'google_play' THEN purchase_token IS NOT NULL
            ELSE receipt_sha256 IS NOT NULL OR signed_transaction IS NOT NULL OR transaction_id IS NOT NULL END);
        ALTER TABLE orders ADD CONSTRAINT orders_delivered_check CHECK (delivered_at IS NULL OR state IN ('delivering','finished'));
        CREATE INDEX orders_purchase_token ON orders(purchase_token) WHERE purchase_token IS NOT NULL;
        CREATE INDEX orders_play_pending ON orders((coalesce(purchase_date_ms / 1000, created_at))) WHERE state = 'pending' AND store = 'google_play';
        CREATE INDEX orders_store_state ON orders(store, state);
        CREATE OR REPLACE FUNCTION settle_orders_new_pending() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
            NEW.state := 'pending';
            NEW.attempts := 0;
            NEW.reason := NULL;
            NEW.last_error := NULL;
            NEW.environment := NULL;
            NEW.verified_transaction_id := NULL;
            NEW.original_transaction_id := NULL;
            NEW.verified_product_id := NULL;
            NEW.quantity := NULL;
            NEW.purchase_date_ms := NULL;
            NEW.expires_date_ms := NULL;
            NEW.grant_key := NULL;
            NEW.lease_host := NULL;
            NEW.lease_pid := NULL;
            NEW.lease_start := NULL;
            NEW.lease_expires_at := NULL;
            NEW.fencing_token := 0;
            NEW.finished_at := NULL;
            NEW.origin := 'backend';
            NEW.refunded_at := NULL;
            NEW.refund_kind := NULL;
            NEW.refund_reason := NULL;
            NEW.delivered_at := NULL;
            RETURN NEW;
        END
        $$;
        CREATE TABLE play_notifications (
            message_id      TEXT PRIMARY KEY,
            kind            TEXT NOT NULL,
            token_sha256    TEXT,
            order_id        TEXT,
            received_at     BIGINT NOT NULL,
            outcome         TEXT NOT NULL,
            detail          TEXT,
            state           TEXT NOT NULL DEFAULT 'pending' CHECK (state IN ('pending','done')),
            payload         TEXT NOT NULL
        );
        CREATE INDEX play_notifications_pending ON play_notifications(received_at) WHERE state = 'pending';
        CREATE TABLE play_cursor (
            id              INTEGER PRIMARY KEY CHECK (id = 1),
            voided_since_ms BIGINT,
            page_token      TEXT,
            polled_at       BIGINT
        );
        """,
        // 5: a breaker per store, as the SQLite ledger's migration 9.
        """
        CREATE TABLE store_breakers (
            store                 TEXT PRIMARY KEY CHECK (store IN ('app_store','google_play')),
            state                 TEXT NOT NULL DEFAULT 'closed' CHECK (state IN ('closed','open')),
            consecutive_failures  INTEGER NOT NULL DEFAULT 0,
            cooldown_seconds      BIGINT NOT NULL DEFAULT 0,
            retry_at              BIGINT,
            last_error            TEXT,
            updated_at            BIGINT NOT NULL DEFAULT extract(epoch FROM now())::bigint,
            CHECK ((state = 'open') = (retry_at IS NOT NULL))
        );
        INSERT INTO store_breakers(store, state, consecutive_failures, cooldown_seconds, retry_at, last_error, updated_at)
            SELECT 'app_store', state, consecutive_failures, cooldown_seconds, retry_at, last_error, updated_at FROM apple_breaker;
        INSERT INTO store_breakers(store) VALUES ('app_store') ON CONFLICT DO NOTHING;
        INSERT INTO store_breakers(store) VALUES ('google_play');
        DROP TABLE apple_breaker;
        CREATE INDEX orders_claim_store ON orders(store, next_attempt_at, order_id) WHERE state = 'pending';
        """,
        // 6: as the SQLite ledger's migration 10: a voiding by Google's order id and quantity.
        """
        ALTER TABLE orders ADD COLUMN replaces TEXT;
        ALTER TABLE revocations ADD COLUMN quantity INTEGER CHECK (quantity IS NULL OR quantity > 0);
        CREATE TABLE play_voided (
            google_order_id TEXT PRIMARY KEY,
            quantity        INTEGER CHECK (quantity IS NULL OR quantity > 0),
            voided_at       BIGINT NOT NULL,
            source          TEXT NOT NULL
        );
        """,
        // 7: as the SQLite ledger's migration 11: a stored push is claimed by one host before it
        // is worked on.
        """
        ALTER TABLE play_notifications ADD COLUMN claim BIGINT NOT NULL DEFAULT 0;
        ALTER TABLE play_notifications ADD COLUMN claimed_until BIGINT;
        """,
        // 8: as the SQLite ledger's migration 12: who an Apple Account is (`app_transactions`), and
        // the account tokens owed to Apple after an assignment (`account_token_updates`).
        """
        ALTER TABLE orders ADD COLUMN app_transaction TEXT;
        CREATE TABLE app_transactions (
            app_transaction_id  TEXT NOT NULL,
            user_id             TEXT NOT NULL,
            environment         TEXT NOT NULL,
            source              TEXT NOT NULL,
            order_id            TEXT,
            learned_at          BIGINT NOT NULL,
            PRIMARY KEY (app_transaction_id, user_id)
        );
        CREATE TABLE account_token_updates (
            order_id           TEXT PRIMARY KEY NOT NULL,
            app_account_token  TEXT NOT NULL,
            state              TEXT NOT NULL DEFAULT 'pending' CHECK (state IN ('pending','set','refused','failed','cancelled')),
            attempts           INTEGER NOT NULL DEFAULT 0,
            next_attempt_at    BIGINT NOT NULL,
            apple_status       INTEGER,
            last_error         TEXT,
            claim              BIGINT NOT NULL DEFAULT 0,
            created_at         BIGINT NOT NULL,
            updated_at         BIGINT NOT NULL
        );
        CREATE INDEX account_token_updates_due ON account_token_updates(next_attempt_at) WHERE state = 'pending';
        """,
        // 9: as the SQLite ledger's migration 13: Apple's revocation type and percentage on a
        // revoke, and the Finish Transaction calls owed once an App Store order is finished.
        """
        ALTER TABLE revocations ADD COLUMN revocation_type TEXT;
        ALTER TABLE revocations ADD COLUMN revocation_percentage BIGINT;
        CREATE TABLE apple_finishes (
            transaction_id   TEXT PRIMARY KEY,
            order_id         TEXT NOT NULL REFERENCES orders(order_id),
            environment      TEXT NOT NULL,
            state            TEXT NOT NULL DEFAULT 'pending' CHECK (state IN ('pending','finished','refused','not_sent')),
            attempts         INTEGER NOT NULL DEFAULT 0,
            claim            BIGINT NOT NULL DEFAULT 0,
            next_attempt_at  BIGINT NOT NULL,
            last_error       TEXT,
            created_at       BIGINT NOT NULL,
            updated_at       BIGINT NOT NULL
        );
        CREATE INDEX apple_finishes_due ON apple_finishes(next_attempt_at) WHERE state = 'pending';
        CREATE INDEX apple_finishes_order ON apple_finishes(order_id);
        CREATE FUNCTION settle_orders_apple_finish() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
            INSERT INTO apple_finishes(transaction_id, order_id, environment, next_attempt_at, created_at, updated_at)
            VALUES (NEW.verified_transaction_id, NEW.order_id, COALESCE(NEW.environment, ''), NEW.updated_at, NEW.updated_at,
                    NEW.updated_at)
            ON CONFLICT (transaction_id) DO NOTHING;
            RETURN NULL;
        END $$;
        CREATE TRIGGER orders_apple_finish AFTER UPDATE OF state ON orders FOR EACH ROW
            WHEN (NEW.state = 'finished' AND OLD.state IS DISTINCT FROM 'finished' AND NEW.store = 'app_store'
                  AND NEW.verified_transaction_id IS NOT NULL)
            EXECUTE FUNCTION settle_orders_apple_finish();
        """,
        // 10: as the SQLite ledger's migration 14: each host's pacer buckets.
        """
        CREATE TABLE pacer_buckets (
            host              TEXT NOT NULL,
            store             TEXT NOT NULL,
            endpoint_group    TEXT NOT NULL,
            environment       TEXT NOT NULL,
            rate_milli        BIGINT NOT NULL,
            ceiling_milli     BIGINT NOT NULL,
            configured_milli  BIGINT NOT NULL,
            hosts             BIGINT NOT NULL,
            granted           BIGINT NOT NULL,
            granted_last_pass BIGINT NOT NULL DEFAULT 0,
            pass_seconds      BIGINT NOT NULL DEFAULT 0,
            throttled         BIGINT NOT NULL,
            floor_throttled   BIGINT NOT NULL,
            waits             BIGINT NOT NULL,
            updated_at        BIGINT NOT NULL,
            PRIMARY KEY (host, store, endpoint_group, environment)
        );
        """,
        // 11: as the SQLite ledger's migration 15: support's transfers and redeliveries.
        """
        CREATE TABLE support_actions (
            order_id         TEXT NOT NULL REFERENCES orders(order_id),
            kind             TEXT NOT NULL CHECK (kind IN ('transfer','redeliver')),
            number           BIGINT NOT NULL CHECK (number >= 1),
            state            TEXT NOT NULL DEFAULT 'pending' CHECK (state IN ('pending','waiting','done','cancelled')),
            step             TEXT NOT NULL CHECK (step IN ('revoke','grant','resend','done')),
            from_user        TEXT,
            to_user          TEXT,
            note             TEXT NOT NULL,
            requested_by     TEXT NOT NULL,
            target           TEXT CHECK (target IS NULL OR target IN ('grant','revoke','transfer_grant','transfer_revoke')),
            target_key       TEXT,
            target_number    BIGINT,
            requested_at     BIGINT NOT NULL,
            revoked_at       BIGINT,
            granted_at       BIGINT,
            done_at          BIGINT,
            attempts         BIGINT NOT NULL DEFAULT 0,
            next_attempt_at  BIGINT NOT NULL,
            last_error       TEXT,
            claim            BIGINT NOT NULL DEFAULT 0,
            updated_at       BIGINT NOT NULL,
            PRIMARY KEY (order_id, kind, number),
            CHECK ((state = 'done') = (done_at IS NOT NULL))
        );
        CREATE UNIQUE INDEX support_actions_open ON support_actions(order_id) WHERE state IN ('pending','waiting');
        CREATE INDEX support_actions_due ON support_actions(next_attempt_at) WHERE state = 'pending';
        """,
        // 12: the SQLite ledger's orders_state from its first schema: the console's chart counts
        // each hour's finished and rejected orders by (state, updated_at), a range of this
        // index; without it every hour was a scan of the table (188 ms at 20,000 orders).
        """
        CREATE INDEX orders_state_updated ON orders(state, updated_at);
        """,
        // 13: as the SQLite ledger's migration 16: each voiding of a Google order by its time.
        """
        ALTER TABLE play_voided ADD COLUMN voided_time_ms BIGINT;
        """,
        // 14: as the SQLite ledger's migration 17: who holds a side queue's claim.
        """
        ALTER TABLE apple_finishes ADD COLUMN claim_host TEXT;
        ALTER TABLE apple_finishes ADD COLUMN claim_pid BIGINT;
        ALTER TABLE apple_finishes ADD COLUMN claim_start TEXT;
        ALTER TABLE apple_finishes ADD COLUMN claim_expires_at BIGINT;
        ALTER TABLE revocations ADD COLUMN claim_host TEXT;
        ALTER TABLE revocations ADD COLUMN claim_pid BIGINT;
        ALTER TABLE revocations ADD COLUMN claim_start TEXT;
        ALTER TABLE revocations ADD COLUMN claim_expires_at BIGINT;
        ALTER TABLE consumption_answers ADD COLUMN claim_host TEXT;
        ALTER TABLE consumption_answers ADD COLUMN claim_pid BIGINT;
        ALTER TABLE consumption_answers ADD COLUMN claim_start TEXT;
        ALTER TABLE consumption_answers ADD COLUMN claim_expires_at BIGINT;
        ALTER TABLE account_token_updates ADD COLUMN claim_host TEXT;
        ALTER TABLE account_token_updates ADD COLUMN claim_pid BIGINT;
        ALTER TABLE account_token_updates ADD COLUMN claim_start TEXT;
        ALTER TABLE account_token_updates ADD COLUMN claim_expires_at BIGINT;
        ALTER TABLE support_actions ADD COLUMN claim_host TEXT;
        ALTER TABLE support_actions ADD COLUMN claim_pid BIGINT;
        ALTER TABLE support_actions ADD COLUMN claim_start TEXT;
        ALTER TABLE support_actions ADD COLUMN claim_expires_at BIGINT;
        ALTER TABLE play_notifications ADD COLUMN claim_host TEXT;
        ALTER TABLE play_notifications ADD COLUMN claim_pid BIGINT;
        ALTER TABLE play_notifications ADD COLUMN claim_start TEXT;
        ALTER TABLE play_notifications ADD COLUMN claim_expires_at BIGINT;
        """,
        // 15: a store is a module (issue 33): the schema names no store, so any registered
        // store's orders fit (the store lists were the columns' own CHECKs).
        """
        ALTER TABLE orders DROP CONSTRAINT IF EXISTS orders_store_check;
        ALTER TABLE store_breakers DROP CONSTRAINT IF EXISTS store_breakers_store_check;
        """,
        // 16: a store module's proof is data the core does not interpret (issue 33): its kind,
        // the proof as the module wrote it, and the key the order is found by.
        """
        ALTER TABLE orders ADD COLUMN proof_kind TEXT;
        ALTER TABLE orders ADD COLUMN proof TEXT;
        ALTER TABLE orders ADD COLUMN proof_key TEXT;
        CREATE INDEX orders_proof_key ON orders(store, proof_key) WHERE proof_key IS NOT NULL;
        ALTER TABLE orders DROP CONSTRAINT orders_proof_check;
        ALTER TABLE orders ADD CONSTRAINT orders_proof_check CHECK (CASE store WHEN 'google_play' THEN purchase_token IS NOT NULL
            ELSE receipt_sha256 IS NOT NULL OR signed_transaction IS NOT NULL OR transaction_id IS NOT NULL OR proof IS NOT NULL END);
        """,
        // 17: as the SQLite ledger's migration 20: the audit log, and each daemon's last failed reload.
        """
        ALTER TABLE daemons ADD COLUMN reload_error TEXT;
        ALTER TABLE daemons ADD COLUMN reload_failed_at BIGINT;
        CREATE TABLE audit_log (
            id       BIGSERIAL PRIMARY KEY,
            at       BIGINT NOT NULL,
            actor    TEXT NOT NULL,
            channel  TEXT NOT NULL CHECK (channel IN ('cli','web')),
            role     TEXT,
            action   TEXT NOT NULL,
            subject  TEXT NOT NULL,
            detail   TEXT NOT NULL DEFAULT '',
            source   TEXT NOT NULL,
            outcome  TEXT NOT NULL CHECK (outcome IN ('ok','refused'))
        );
        CREATE INDEX audit_log_at ON audit_log(at);
        CREATE INDEX audit_log_actor ON audit_log(actor, id);
        """,
        // 18: the counts by store and state and the chart's hours, kept by a trigger
        // (PostgresLedgerSchema+OrderCounts).
        orderCountsMigration,
        // 19: as the SQLite ledger's migration 22: customers' refund policy, orders' usage evidence.
        CustomerSchema.postgres,
        // 20: as the SQLite ledger's migration 23: prices and `recovered_at` (`revenueMigration`).
        revenueMigration,
        // 21: as the SQLite ledger's migration 24: the transfers a buyer made, found by the buyer;
        // a buyer's refunded orders by the buyer and the refund's time.
        refundHistoryMigration,
        // 22: as the SQLite ledger's migration 25: orders by their account token (`AccountTokenIndex`).
        accountTokenIndex,
    ]
}
