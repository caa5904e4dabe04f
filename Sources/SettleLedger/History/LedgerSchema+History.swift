/// The ledger's history: the numbered migrations every user's ledger has run, in order. They
/// are never edited (a ledger that ran one would differ from one that runs the edited text), and
/// they are the one place outside a store's folder that still spells the first two stores' names:
/// as they were when those stores lived in the core. A new store adds none; its tables are its
/// module's named migrations (`LedgerMigration`).
extension LedgerSchema {
    /// Schema 8 and before kept one breaker, Apple's, in `apple_breaker`: `ledger copy` reads it
    /// as the App Store's `store_breakers` row.
    static let breakersBeforeStoreBreakers = "SELECT 'app_store' AS store, * FROM apple_breaker"

    /// Removes the `CHECK (store IN (...))` lists from `orders` and `store_breakers`.
    static func dropStoreLists(_ database: SQLiteDatabase) throws {
        try editStoredTables(database, ["orders", "store_breakers"],
                             replacing: " CHECK (store IN (''app_store'',''google_play''))", with: "")
    }

    package static let migrations: [String] = [
        // 1: orders, deduplicated receipts, history, grants.
        """
        CREATE TABLE receipts (
            sha256      TEXT PRIMARY KEY NOT NULL CHECK (length(sha256) = 64),
            data        TEXT NOT NULL,
            created_at  INTEGER NOT NULL DEFAULT (unixepoch())
        );
        CREATE TABLE orders (
            order_id            TEXT PRIMARY KEY NOT NULL CHECK (length(order_id) BETWEEN 1 AND 200),
            user_id             TEXT NOT NULL,
            product_id          TEXT NOT NULL,
            transaction_id      TEXT,
            receipt_sha256      TEXT REFERENCES receipts(sha256),
            signed_transaction  TEXT,
            state               TEXT NOT NULL DEFAULT 'pending'
                                CHECK (state IN ('pending','verifying','delivering','finished','rejected','needs_attention')),
            attempts            INTEGER NOT NULL DEFAULT 0 CHECK (attempts >= 0),
            next_attempt_at     INTEGER NOT NULL DEFAULT 0,
            reason              TEXT,
            last_error          TEXT,
            environment         TEXT,
            verified_transaction_id  TEXT,
            original_transaction_id  TEXT,
            verified_product_id TEXT,
            quantity            INTEGER,
            purchase_date_ms    INTEGER,
            expires_date_ms     INTEGER,
            lease_host          TEXT,
            lease_pid           INTEGER,
            lease_start         TEXT,
            lease_expires_at    INTEGER,
            created_at          INTEGER NOT NULL DEFAULT (unixepoch()),
            updated_at          INTEGER NOT NULL DEFAULT (unixepoch()),
            finished_at         INTEGER,
            CHECK ((state = 'finished') = (finished_at IS NOT NULL)),
            CHECK ((state IN ('verifying','delivering')) = (lease_pid IS NOT NULL)),
            CHECK (state NOT IN ('delivering','finished') OR verified_transaction_id IS NOT NULL),
            CHECK (receipt_sha256 IS NOT NULL OR signed_transaction IS NOT NULL OR transaction_id IS NOT NULL)
        );
        CREATE INDEX orders_due ON orders(next_attempt_at) WHERE state = 'pending';
        CREATE INDEX orders_leased ON orders(lease_expires_at) WHERE state IN ('verifying','delivering');
        CREATE INDEX orders_user ON orders(user_id);
        CREATE INDEX orders_transaction ON orders(transaction_id);
        CREATE INDEX orders_verified_transaction ON orders(verified_transaction_id);
        CREATE INDEX orders_state ON orders(state, updated_at);
        CREATE TABLE history (
            id           INTEGER PRIMARY KEY,
            order_id     TEXT NOT NULL REFERENCES orders(order_id),
            at           INTEGER NOT NULL,
            kind         TEXT NOT NULL CHECK (kind IN ('enqueue','verification','delivery','rescue','retry')),
            outcome      TEXT NOT NULL,
            apple_status INTEGER,
            hook_exit    INTEGER,
            environment  TEXT,
            duration_ms  INTEGER,
            detail       TEXT
        );
        CREATE INDEX history_order ON history(order_id, id);
        CREATE TABLE grants (
            transaction_id  TEXT PRIMARY KEY NOT NULL,
            order_id        TEXT NOT NULL UNIQUE REFERENCES orders(order_id),
            granted_at      INTEGER NOT NULL
        );
        """,
        // 2: the Apple breaker and the daemon's heartbeat, one row each, for `settle status`.
        """
        CREATE TABLE apple_breaker (
            id                    INTEGER PRIMARY KEY CHECK (id = 1),
            state                 TEXT NOT NULL DEFAULT 'closed' CHECK (state IN ('closed','open')),
            consecutive_failures  INTEGER NOT NULL DEFAULT 0,
            cooldown_seconds      INTEGER NOT NULL DEFAULT 0,
            retry_at              INTEGER,
            last_error            TEXT,
            updated_at            INTEGER NOT NULL DEFAULT (unixepoch()),
            CHECK ((state = 'open') = (retry_at IS NOT NULL))
        );
        INSERT INTO apple_breaker(id) VALUES (1);
        CREATE TABLE daemon (
            id                 INTEGER PRIMARY KEY CHECK (id = 1),
            host               TEXT NOT NULL,
            pid                INTEGER NOT NULL,
            process_start      TEXT NOT NULL,
            started_at         INTEGER NOT NULL,
            last_pass_at       INTEGER,
            last_pass_summary  TEXT,
            stopped_at         INTEGER
        );
        """,
        // 3: grants keyed by what is granted once (the original transaction id of a
        // non-consumable), grants made outside settle (order_id NULL, source 'outside'), the
        // order's grant key for the hook, and the appAccountToken a backend stores with an order.
        """
        CREATE TABLE grants_v3 (
            grant_key       TEXT PRIMARY KEY NOT NULL,
            transaction_id  TEXT NOT NULL,
            order_id        TEXT UNIQUE REFERENCES orders(order_id),
            source          TEXT NOT NULL DEFAULT 'settle' CHECK (source IN ('settle','outside')),
            granted_at      INTEGER NOT NULL,
            note            TEXT,
            CHECK ((source = 'settle') = (order_id IS NOT NULL))
        );
        INSERT INTO grants_v3(grant_key, transaction_id, order_id, source, granted_at)
            SELECT transaction_id, transaction_id, order_id, 'settle', granted_at FROM grants;
        DROP TABLE grants;
        ALTER TABLE grants_v3 RENAME TO grants;
        CREATE INDEX grants_transaction ON grants(transaction_id);
        ALTER TABLE orders ADD COLUMN grant_key TEXT;
        ALTER TABLE orders ADD COLUMN app_account_token TEXT;
        """,
        // 4: indexes that keep a pass linear and status instant on large ledgers, and counts
        // by state kept by triggers (so rows backends insert count too).
        """
        CREATE INDEX orders_claim ON orders(next_attempt_at, order_id) WHERE state = 'pending';
        DROP INDEX orders_due;
        CREATE INDEX orders_recent ON orders(updated_at DESC, order_id);
        CREATE INDEX orders_state_created ON orders(state, created_at);
        CREATE INDEX orders_original_transaction ON orders(original_transaction_id);
        CREATE TABLE order_counts (
            state  TEXT PRIMARY KEY NOT NULL,
            n      INTEGER NOT NULL DEFAULT 0
        );
        INSERT INTO order_counts(state, n)
            SELECT s.column1, (SELECT count(*) FROM orders WHERE state = s.column1)
            FROM (VALUES ('pending'), ('verifying'), ('delivering'), ('finished'), ('rejected'), ('needs_attention')) AS s;
        CREATE TRIGGER orders_counted_insert AFTER INSERT ON orders BEGIN
            UPDATE order_counts SET n = n + 1 WHERE state = NEW.state;
        END;
        CREATE TRIGGER orders_counted_delete AFTER DELETE ON orders BEGIN
            UPDATE order_counts SET n = n - 1 WHERE state = OLD.state;
        END;
        CREATE TRIGGER orders_counted_update AFTER UPDATE OF state ON orders WHEN OLD.state IS NOT NEW.state BEGIN
            UPDATE order_counts SET n = n - 1 WHERE state = OLD.state;
            UPDATE order_counts SET n = n + 1 WHERE state = NEW.state;
        END;
        """,
        // 5: App Store Server Notifications: each stored once by UUID with what it led to; the
        // order's origin and refund; revoke and refund-request answers owed to hooks and Apple;
        // where Get Notification History resumes. History gains the kinds these write.
        """
        CREATE TABLE notifications (
            uuid                     TEXT PRIMARY KEY NOT NULL,
            type                     TEXT NOT NULL,
            subtype                  TEXT,
            environment              TEXT NOT NULL,
            signed_date_ms           INTEGER,
            transaction_id           TEXT,
            original_transaction_id  TEXT,
            order_id                 TEXT,
            source                   TEXT NOT NULL CHECK (source IN ('endpoint','history')),
            received_at              INTEGER NOT NULL,
            outcome                  TEXT NOT NULL,
            detail                   TEXT,
            payload                  TEXT NOT NULL
        );
        CREATE INDEX notifications_transaction ON notifications(transaction_id);
        CREATE INDEX notifications_order ON notifications(order_id);
        CREATE INDEX notifications_received ON notifications(received_at);
        ALTER TABLE orders ADD COLUMN origin TEXT NOT NULL DEFAULT 'backend';
        ALTER TABLE orders ADD COLUMN refunded_at INTEGER;
        ALTER TABLE orders ADD COLUMN refund_kind TEXT;
        ALTER TABLE orders ADD COLUMN refund_reason TEXT;
        CREATE INDEX orders_refunded ON orders(refunded_at) WHERE refunded_at IS NOT NULL;
        CREATE TABLE revocations (
            transaction_id   TEXT PRIMARY KEY NOT NULL,
            order_id         TEXT NOT NULL REFERENCES orders(order_id),
            kind             TEXT NOT NULL,
            state            TEXT NOT NULL DEFAULT 'pending'
                             CHECK (state IN ('pending','revoked','cancelled','needs_attention')),
            attempts         INTEGER NOT NULL DEFAULT 0,
            next_attempt_at  INTEGER NOT NULL,
            last_error       TEXT,
            created_at       INTEGER NOT NULL,
            updated_at       INTEGER NOT NULL
        );
        CREATE INDEX revocations_due ON revocations(next_attempt_at) WHERE state = 'pending';
        CREATE TABLE consumption_answers (
            notification_uuid  TEXT PRIMARY KEY NOT NULL REFERENCES notifications(uuid),
            transaction_id     TEXT NOT NULL,
            environment        TEXT NOT NULL,
            order_id           TEXT,
            state              TEXT NOT NULL DEFAULT 'pending' CHECK (state IN ('pending','sent','failed')),
            attempts           INTEGER NOT NULL DEFAULT 0,
            next_attempt_at    INTEGER NOT NULL,
            deadline_at        INTEGER NOT NULL,
            body               TEXT,
            apple_status       INTEGER,
            last_error         TEXT,
            updated_at         INTEGER NOT NULL
        );
        CREATE INDEX consumption_due ON consumption_answers(next_attempt_at) WHERE state = 'pending';
        CREATE TABLE notification_cursor (
            environment       TEXT PRIMARY KEY NOT NULL,
            synced_until_ms   INTEGER,
            window_start_ms   INTEGER,
            window_end_ms     INTEGER,
            pagination_token  TEXT,
            updated_at        INTEGER NOT NULL
        );
        CREATE TABLE history_v4 (
            id           INTEGER PRIMARY KEY,
            order_id     TEXT NOT NULL REFERENCES orders(order_id),
            at           INTEGER NOT NULL,
            kind         TEXT NOT NULL CHECK (kind IN ('enqueue','verification','delivery','rescue','retry',
                                                      'notification','revoke','consumption','assign')),
            outcome      TEXT NOT NULL,
            apple_status INTEGER,
            hook_exit    INTEGER,
            environment  TEXT,
            duration_ms  INTEGER,
            detail       TEXT
        );
        INSERT INTO history_v4 SELECT * FROM history;
        DROP TABLE history;
        ALTER TABLE history_v4 RENAME TO history;
        CREATE INDEX history_order ON history(order_id, id);
        """,
        // 6: where Get Notification History began in each environment (a purchase older than
        // that is reported for a person, not delivered), and the round of a revoke (a refund
        // after a reversed one is revoked again, under a key of its own).
        """
        ALTER TABLE notification_cursor ADD COLUMN started_at_ms INTEGER;
        ALTER TABLE revocations ADD COLUMN round INTEGER NOT NULL DEFAULT 1;
        """,
        // 7: revokes and refund-request answers are claimed before they run (`claim` counts the
        // claims and fences the outcome), and Get Notification History is read by one catch-up
        // at a time (its lease): the same statements serve the PostgreSQL ledger several hosts share.
        """
        ALTER TABLE revocations ADD COLUMN claim INTEGER NOT NULL DEFAULT 0;
        ALTER TABLE consumption_answers ADD COLUMN claim INTEGER NOT NULL DEFAULT 0;
        ALTER TABLE notification_cursor ADD COLUMN lease_owner TEXT;
        ALTER TABLE notification_cursor ADD COLUMN lease_expires_at INTEGER;
        """,
        // 8: Google Play. An order says which store sold it (`store`) and, for Google Play,
        // carries the purchase token (a bearer secret) as its proof; `delivered_at` marks a Play
        // order whose hook said delivered while Google is not yet told (acknowledge or consume):
        // it stays `delivering` until Google is, and is never handed to the hook again. The
        // proof CHECK of migration 1 cannot be altered in place, so the table is rebuilt (SQLite's
        // documented procedure, https://www.sqlite.org/lang_altertable.html#otheralter): foreign
        // keys are deferred to the commit, which checks every history, grant and revocation row
        // still has its order. RTDN pushes are stored once by message id; the voided purchases
        // poll keeps where it is.
        """
        PRAGMA defer_foreign_keys = ON;
        CREATE TABLE orders_v6 AS SELECT * FROM orders;
        DROP TABLE orders;
        CREATE TABLE orders (
            order_id            TEXT PRIMARY KEY NOT NULL CHECK (length(order_id) BETWEEN 1 AND 200),
            user_id             TEXT NOT NULL,
            product_id          TEXT NOT NULL,
            transaction_id      TEXT,
            receipt_sha256      TEXT REFERENCES receipts(sha256),
            signed_transaction  TEXT,
            state               TEXT NOT NULL DEFAULT 'pending'
                                CHECK (state IN ('pending','verifying','delivering','finished','rejected','needs_attention')),
            attempts            INTEGER NOT NULL DEFAULT 0 CHECK (attempts >= 0),
            next_attempt_at     INTEGER NOT NULL DEFAULT 0,
            reason              TEXT,
            last_error          TEXT,
            environment         TEXT,
            verified_transaction_id  TEXT,
            original_transaction_id  TEXT,
            verified_product_id TEXT,
            quantity            INTEGER,
            purchase_date_ms    INTEGER,
            expires_date_ms     INTEGER,
            lease_host          TEXT,
            lease_pid           INTEGER,
            lease_start         TEXT,
            lease_expires_at    INTEGER,
            created_at          INTEGER NOT NULL DEFAULT (unixepoch()),
            updated_at          INTEGER NOT NULL DEFAULT (unixepoch()),
            finished_at         INTEGER,
            grant_key           TEXT,
            app_account_token   TEXT,
            origin              TEXT NOT NULL DEFAULT 'backend',
            refunded_at         INTEGER,
            refund_kind         TEXT,
            refund_reason       TEXT,
            store               TEXT NOT NULL DEFAULT 'app_store' CHECK (store IN ('app_store','google_play')),
            purchase_token      TEXT,
            delivered_at        INTEGER,
            CHECK ((state = 'finished') = (finished_at IS NOT NULL)),
            CHECK ((state IN ('verifying','delivering')) = (lease_pid IS NOT NULL)),
            CHECK (state NOT IN ('delivering','finished') OR verified_transaction_id IS NOT NULL),
            CHECK (CASE store WHEN 'google_play' THEN purchase_token IS NOT NULL
                   ELSE receipt_sha256 IS NOT NULL OR signed_transaction IS NOT NULL OR transaction_id IS NOT NULL END),
            CHECK (delivered_at IS NULL OR state IN ('delivering','finished'))
        );
        INSERT INTO orders(order_id, user_id, product_id, transaction_id, receipt_sha256, signed_transaction, state, attempts,
                           next_attempt_at, reason, last_error, environment, verified_transaction_id, original_transaction_id,
                           verified_product_id, quantity, purchase_date_ms, expires_date_ms, lease_host, lease_pid, lease_start,
                           lease_expires_at, created_at, updated_at, finished_at, grant_key, app_account_token, origin,
                           refunded_at, refund_kind, refund_reason)
            SELECT order_id, user_id, product_id, transaction_id, receipt_sha256, signed_transaction, state, attempts,
                   next_attempt_at, reason, last_error, environment, verified_transaction_id, original_transaction_id,
                   verified_product_id, quantity, purchase_date_ms, expires_date_ms, lease_host, lease_pid, lease_start,
                   lease_expires_at, created_at, updated_at, finished_at, grant_key, app_account_token, origin,
                   refunded_at, refund_kind, refund_reason
            FROM orders_v6 ORDER BY rowid;
        DROP TABLE orders_v6;
        CREATE INDEX orders_claim ON orders(next_attempt_at, order_id) WHERE state = 'pending';
        CREATE INDEX orders_leased ON orders(lease_expires_at) WHERE state IN ('verifying','delivering');
        CREATE INDEX orders_user ON orders(user_id);
        CREATE INDEX orders_transaction ON orders(transaction_id);
        CREATE INDEX orders_verified_transaction ON orders(verified_transaction_id);
        CREATE INDEX orders_state ON orders(state, updated_at);
        CREATE INDEX orders_recent ON orders(updated_at DESC, order_id);
        CREATE INDEX orders_state_created ON orders(state, created_at);
        CREATE INDEX orders_original_transaction ON orders(original_transaction_id);
        CREATE INDEX orders_refunded ON orders(refunded_at) WHERE refunded_at IS NOT NULL;
        CREATE INDEX orders_purchase_token ON orders(purchase_token) WHERE purchase_token IS NOT NULL;
        CREATE INDEX orders_play_pending ON orders((coalesce(purchase_date_ms / 1000, created_at))) WHERE state = 'pending' AND store = 'google_play';
        CREATE INDEX orders_store_state ON orders(store, state);
        CREATE TRIGGER orders_counted_insert AFTER INSERT ON orders BEGIN
            UPDATE order_counts SET n = n + 1 WHERE state = NEW.state;
        END;
        CREATE TRIGGER orders_counted_delete AFTER DELETE ON orders BEGIN
            UPDATE order_counts SET n = n - 1 WHERE state = OLD.state;
        END;
        CREATE TRIGGER orders_counted_update AFTER UPDATE OF state ON orders WHEN OLD.state IS NOT NEW.state BEGIN
            UPDATE order_counts SET n = n - 1 WHERE state = OLD.state;
            UPDATE order_counts SET n = n + 1 WHERE state = NEW.state;
        END;
        UPDATE order_counts SET n = (SELECT count(*) FROM orders WHERE orders.state = order_counts.state);
        CREATE TABLE play_notifications (
            message_id      TEXT PRIMARY KEY NOT NULL,
            kind            TEXT NOT NULL,
            token_sha256    TEXT,
            order_id        TEXT,
            received_at     INTEGER NOT NULL,
            outcome         TEXT NOT NULL,
            detail          TEXT,
            state           TEXT NOT NULL DEFAULT 'pending' CHECK (state IN ('pending','done')),
            payload         TEXT NOT NULL
        );
        CREATE INDEX play_notifications_pending ON play_notifications(received_at) WHERE state = 'pending';
        CREATE TABLE play_cursor (
            id              INTEGER PRIMARY KEY CHECK (id = 1),
            voided_since_ms INTEGER,
            page_token      TEXT,
            polled_at       INTEGER
        );
        """,
        // 9: a breaker per store (`store_breakers`, a row each): an Apple outage never holds
        // back a Google Play order, nor the reverse. The Apple breaker's row becomes the App
        // Store's. Claims of one store's orders alone (while the other's breaker is open) read
        // an index in that store's claim order. And the counts kept by triggers are by store
        // and state, so status shows each store's from one read.
        """
        CREATE TABLE store_breakers (
            store                 TEXT PRIMARY KEY NOT NULL CHECK (store IN ('app_store','google_play')),
            state                 TEXT NOT NULL DEFAULT 'closed' CHECK (state IN ('closed','open')),
            consecutive_failures  INTEGER NOT NULL DEFAULT 0,
            cooldown_seconds      INTEGER NOT NULL DEFAULT 0,
            retry_at              INTEGER,
            last_error            TEXT,
            updated_at            INTEGER NOT NULL DEFAULT (unixepoch()),
            CHECK ((state = 'open') = (retry_at IS NOT NULL))
        );
        INSERT INTO store_breakers(store, state, consecutive_failures, cooldown_seconds, retry_at, last_error, updated_at)
            SELECT 'app_store', state, consecutive_failures, cooldown_seconds, retry_at, last_error, updated_at FROM apple_breaker;
        INSERT OR IGNORE INTO store_breakers(store) VALUES ('app_store');
        INSERT INTO store_breakers(store) VALUES ('google_play');
        DROP TABLE apple_breaker;
        CREATE INDEX orders_claim_store ON orders(store, next_attempt_at, order_id) WHERE state = 'pending';
        DROP TRIGGER orders_counted_insert;
        DROP TRIGGER orders_counted_delete;
        DROP TRIGGER orders_counted_update;
        DROP TABLE order_counts;
        CREATE TABLE order_counts (
            store  TEXT NOT NULL,
            state  TEXT NOT NULL,
            n      INTEGER NOT NULL DEFAULT 0,
            PRIMARY KEY (store, state)
        );
        INSERT INTO order_counts(store, state, n)
            SELECT st.column1, s.column1, (SELECT count(*) FROM orders WHERE store = st.column1 AND state = s.column1)
            FROM (VALUES ('app_store'), ('google_play')) AS st,
                 (VALUES ('pending'), ('verifying'), ('delivering'), ('finished'), ('rejected'), ('needs_attention')) AS s;
        CREATE TRIGGER orders_counted_insert AFTER INSERT ON orders BEGIN
            UPDATE order_counts SET n = n + 1 WHERE store = NEW.store AND state = NEW.state;
        END;
        CREATE TRIGGER orders_counted_delete AFTER DELETE ON orders BEGIN
            UPDATE order_counts SET n = n - 1 WHERE store = OLD.store AND state = OLD.state;
        END;
        CREATE TRIGGER orders_counted_update AFTER UPDATE OF state, store ON orders
        WHEN OLD.state IS NOT NEW.state OR OLD.store IS NOT NEW.store BEGIN
            UPDATE order_counts SET n = n - 1 WHERE store = OLD.store AND state = OLD.state;
            UPDATE order_counts SET n = n + 1 WHERE store = NEW.store AND state = NEW.state;
        END;
        """,
        // 10: Google Play, each voiding by the order Google names (one period of a subscription)
        // and its quantity. `replaces` names the grant a subscription purchase replaced (an
        // upgrade, a downgrade, a resubscription: Google's linkedPurchaseToken), for the hook; a
        // revoke carries how much to take back (`quantity`, NULL: all of it); `play_voided`
        // remembers what Google voided, so an order verified later is never granted it.
        """
        ALTER TABLE orders ADD COLUMN replaces TEXT;
        ALTER TABLE revocations ADD COLUMN quantity INTEGER CHECK (quantity IS NULL OR quantity > 0);
        CREATE TABLE play_voided (
            google_order_id TEXT PRIMARY KEY NOT NULL,
            quantity        INTEGER CHECK (quantity IS NULL OR quantity > 0),
            voided_at       INTEGER NOT NULL,
            source          TEXT NOT NULL
        );
        """,
        // 11: a stored Google Play push is claimed before it is worked on (`claim` counts the
        // claims and fences the outcome, `claimed_until` ends the claim of a host that died), as
        // revokes are: with several hosts each push is worked by one.
        """
        ALTER TABLE play_notifications ADD COLUMN claim INTEGER NOT NULL DEFAULT 0;
        ALTER TABLE play_notifications ADD COLUMN claimed_until INTEGER;
        """,
        // 12: who an Apple Account is. `app_transactions` holds each `appTransactionId` a signed
        // AppTransaction linked to a user (`settle link`, or an order's `app_transaction`, the
        // column backends write), so purchases without the user's token (offer codes, App Store
        // purchases, a family member's shared ones) bind to that user. `account_token_updates`:
        // after `settle assign`, Set App Account Token for the purchase, so renewals bind by themselves.
        """
        ALTER TABLE orders ADD COLUMN app_transaction TEXT;
        CREATE TABLE app_transactions (
            app_transaction_id  TEXT NOT NULL,
            user_id             TEXT NOT NULL,
            environment         TEXT NOT NULL,
            source              TEXT NOT NULL,
            order_id            TEXT,
            learned_at          INTEGER NOT NULL,
            PRIMARY KEY (app_transaction_id, user_id)
        );
        CREATE TABLE account_token_updates (
            order_id           TEXT PRIMARY KEY NOT NULL,
            app_account_token  TEXT NOT NULL,
            state              TEXT NOT NULL DEFAULT 'pending' CHECK (state IN ('pending','set','refused','failed','cancelled')),
            attempts           INTEGER NOT NULL DEFAULT 0,
            next_attempt_at    INTEGER NOT NULL,
            apple_status       INTEGER,
            last_error         TEXT,
            claim              INTEGER NOT NULL DEFAULT 0,
            created_at         INTEGER NOT NULL,
            updated_at         INTEGER NOT NULL
        );
        CREATE INDEX account_token_updates_due ON account_token_updates(next_attempt_at) WHERE state = 'pending';
        """,
        // 13: the App Store of 2026. A revoke carries Apple's `revocationType` and
        // `revocationPercentage` (a prorated refund takes back only part). `apple_finishes` is
        // what Apple is owed once an App Store order is finished (Finish Transaction), queued by
        // the transition itself so no path to `finished` forgets it, and worked after the pass.
        """
        ALTER TABLE revocations ADD COLUMN revocation_type TEXT;
        ALTER TABLE revocations ADD COLUMN revocation_percentage INTEGER;
        CREATE TABLE apple_finishes (
            transaction_id   TEXT PRIMARY KEY NOT NULL,
            order_id         TEXT NOT NULL REFERENCES orders(order_id),
            environment      TEXT NOT NULL,
            state            TEXT NOT NULL DEFAULT 'pending' CHECK (state IN ('pending','finished','refused','not_sent')),
            attempts         INTEGER NOT NULL DEFAULT 0,
            claim            INTEGER NOT NULL DEFAULT 0,
            next_attempt_at  INTEGER NOT NULL,
            last_error       TEXT,
            created_at       INTEGER NOT NULL,
            updated_at       INTEGER NOT NULL
        );
        CREATE INDEX apple_finishes_due ON apple_finishes(next_attempt_at) WHERE state = 'pending';
        CREATE INDEX apple_finishes_order ON apple_finishes(order_id);
        CREATE TRIGGER orders_apple_finish AFTER UPDATE OF state ON orders
        WHEN NEW.state = 'finished' AND OLD.state IS NOT 'finished' AND NEW.store = 'app_store'
             AND NEW.verified_transaction_id IS NOT NULL BEGIN
            INSERT OR IGNORE INTO apple_finishes(transaction_id, order_id, environment, next_attempt_at, created_at, updated_at)
            VALUES (NEW.verified_transaction_id, NEW.order_id, COALESCE(NEW.environment, ''), NEW.updated_at, NEW.updated_at,
                    NEW.updated_at);
        END;
        """,
        // 14: each host's pacer buckets as its daemon last saw them (issue 27), for `settle
        // status` and the metrics: rates in thousandths of a request a second, counters since
        // the process started, and what the last pass used. Written at most once a pass.
        """
        CREATE TABLE pacer_buckets (
            host              TEXT NOT NULL,
            store             TEXT NOT NULL,
            endpoint_group    TEXT NOT NULL,
            environment       TEXT NOT NULL,
            rate_milli        INTEGER NOT NULL,
            ceiling_milli     INTEGER NOT NULL,
            configured_milli  INTEGER NOT NULL,
            hosts             INTEGER NOT NULL,
            granted           INTEGER NOT NULL,
            granted_last_pass INTEGER NOT NULL DEFAULT 0,
            pass_seconds      INTEGER NOT NULL DEFAULT 0,
            throttled         INTEGER NOT NULL,
            floor_throttled   INTEGER NOT NULL,
            waits             INTEGER NOT NULL,
            updated_at        INTEGER NOT NULL,
            PRIMARY KEY (host, store, endpoint_group, environment)
        );
        """,
        // 15: support's transfers and redeliveries (issue 26), recorded by `settle transfer` /
        // `settle redeliver` (and the web console) and carried out by the next pass, step by
        // step: each step's time is recorded once it is done, so a crash resumes at the step not
        // recorded, under the same key. One open action per order at a time.
        """
        CREATE TABLE support_actions (
            order_id         TEXT NOT NULL REFERENCES orders(order_id),
            kind             TEXT NOT NULL CHECK (kind IN ('transfer','redeliver')),
            number           INTEGER NOT NULL CHECK (number >= 1),
            state            TEXT NOT NULL DEFAULT 'pending' CHECK (state IN ('pending','waiting','done','cancelled')),
            step             TEXT NOT NULL CHECK (step IN ('revoke','grant','resend','done')),
            from_user        TEXT,
            to_user          TEXT,
            note             TEXT NOT NULL,
            requested_by     TEXT NOT NULL,
            target           TEXT CHECK (target IS NULL OR target IN ('grant','revoke','transfer_grant','transfer_revoke')),
            target_key       TEXT,
            target_number    INTEGER,
            requested_at     INTEGER NOT NULL,
            revoked_at       INTEGER,
            granted_at       INTEGER,
            done_at          INTEGER,
            attempts         INTEGER NOT NULL DEFAULT 0,
            next_attempt_at  INTEGER NOT NULL,
            last_error       TEXT,
            claim            INTEGER NOT NULL DEFAULT 0,
            updated_at       INTEGER NOT NULL,
            PRIMARY KEY (order_id, kind, number),
            CHECK ((state = 'done') = (done_at IS NOT NULL))
        );
        CREATE UNIQUE INDEX support_actions_open ON support_actions(order_id) WHERE state IN ('pending','waiting');
        CREATE INDEX support_actions_due ON support_actions(next_attempt_at) WHERE state = 'pending';
        """,
        // 16: Google may void one order more than once (refunds of 1, then 2, of 5 gems): each
        // voiding is told apart by Google's `voidedTimeMillis`, so each is revoked once.
        """
        ALTER TABLE play_voided ADD COLUMN voided_time_ms INTEGER;
        """,
        // 17: who holds a side queue's claim (issue 32): host, pid and process start as an
        // order's lease has them, so rescue takes a dead predecessor's claim back at once
        // (`SideQueue`) instead of after its 15-minute lease.
        """
        ALTER TABLE apple_finishes ADD COLUMN claim_host TEXT;
        ALTER TABLE apple_finishes ADD COLUMN claim_pid INTEGER;
        ALTER TABLE apple_finishes ADD COLUMN claim_start TEXT;
        ALTER TABLE apple_finishes ADD COLUMN claim_expires_at INTEGER;
        ALTER TABLE revocations ADD COLUMN claim_host TEXT;
        ALTER TABLE revocations ADD COLUMN claim_pid INTEGER;
        ALTER TABLE revocations ADD COLUMN claim_start TEXT;
        ALTER TABLE revocations ADD COLUMN claim_expires_at INTEGER;
        ALTER TABLE consumption_answers ADD COLUMN claim_host TEXT;
        ALTER TABLE consumption_answers ADD COLUMN claim_pid INTEGER;
        ALTER TABLE consumption_answers ADD COLUMN claim_start TEXT;
        ALTER TABLE consumption_answers ADD COLUMN claim_expires_at INTEGER;
        ALTER TABLE account_token_updates ADD COLUMN claim_host TEXT;
        ALTER TABLE account_token_updates ADD COLUMN claim_pid INTEGER;
        ALTER TABLE account_token_updates ADD COLUMN claim_start TEXT;
        ALTER TABLE account_token_updates ADD COLUMN claim_expires_at INTEGER;
        ALTER TABLE support_actions ADD COLUMN claim_host TEXT;
        ALTER TABLE support_actions ADD COLUMN claim_pid INTEGER;
        ALTER TABLE support_actions ADD COLUMN claim_start TEXT;
        ALTER TABLE support_actions ADD COLUMN claim_expires_at INTEGER;
        ALTER TABLE play_notifications ADD COLUMN claim_host TEXT;
        ALTER TABLE play_notifications ADD COLUMN claim_pid INTEGER;
        ALTER TABLE play_notifications ADD COLUMN claim_start TEXT;
        ALTER TABLE play_notifications ADD COLUMN claim_expires_at INTEGER;
        """,
        // 18: a store is a module (issue 33): the schema names no store. The store lists leave
        // `orders` and `store_breakers` (`dropStoreLists`, after this SQL), and the counts kept by
        // trigger gain a row for a store the first time one of its orders arrives.
        """
        DROP TRIGGER orders_counted_insert;
        DROP TRIGGER orders_counted_update;
        CREATE TRIGGER orders_counted_insert AFTER INSERT ON orders BEGIN
            INSERT INTO order_counts(store, state, n) VALUES (NEW.store, NEW.state, 1)
                ON CONFLICT(store, state) DO UPDATE SET n = n + 1;
        END;
        CREATE TRIGGER orders_counted_update AFTER UPDATE OF state, store ON orders
        WHEN OLD.state IS NOT NEW.state OR OLD.store IS NOT NEW.store BEGIN
            UPDATE order_counts SET n = n - 1 WHERE store = OLD.store AND state = OLD.state;
            INSERT INTO order_counts(store, state, n) VALUES (NEW.store, NEW.state, 1)
                ON CONFLICT(store, state) DO UPDATE SET n = n + 1;
        END;
        """,
        // 19: a store module's proof is data the core does not interpret (issue 33): its kind,
        // the proof as the module wrote it, and the key the order is found by. The proof CHECK
        // accepts it (`acceptStoreProofs`, after this SQL).
        """
        ALTER TABLE orders ADD COLUMN proof_kind TEXT;
        ALTER TABLE orders ADD COLUMN proof TEXT;
        ALTER TABLE orders ADD COLUMN proof_key TEXT;
        CREATE INDEX orders_proof_key ON orders(store, proof_key) WHERE proof_key IS NOT NULL;
        """,
        // 20: the audit log (issue 36): who did what, through which channel, from where, and
        // whether it was allowed; written by the ledger in the action's own transaction
        // (`AuditEntry`), and by the console for sign-ins and refusals. With it, the daemon's last
        // failed reload (its error and time, cleared by a reload that works), for the health check.
        """
        ALTER TABLE daemon ADD COLUMN reload_error TEXT;
        ALTER TABLE daemon ADD COLUMN reload_failed_at INTEGER;
        CREATE TABLE audit_log (
            id       INTEGER PRIMARY KEY AUTOINCREMENT,
            at       INTEGER NOT NULL,
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
        // 21: the CHECKs' lists of more than two values written as comparisons, so that no
        // INSERT or UPDATE builds an ephemeral b-tree to check one (issue 38): the stored table
        // text is edited by `InListChecks.rewrite`, after this (empty) step, with no rebuild.
        "-- 21: InListChecks.rewrite",
        // 22: customers' refund policy and orders' usage evidence (issue 37, `CustomerSchema`).
        CustomerSchema.sqlite,
        // 23: the money side (issue 37): each order's price and when settle recovered it (`revenueMigration`).
        revenueMigration,
        // 24: refund history per customer (issue 37): a buyer's refunds include the orders they
        // gave away by transfer, found by the buyer here rather than by a scan of support_actions
        // at every grant; and the refunded orders a buyer holds, by the buyer and the refund's time
        // (`orders_user` alone read every order of a buyer, at every grant: a whale's thousands).
        refundHistoryMigration,
        // 25: orders by their account token (`AccountTokenIndex`): a store's report of a purchase
        // the backend never saw, a token's binding and support's search read every order of the
        // store without it.
        accountTokenIndex,
    ]
}
