/// The customers' refund policy and the orders' usage evidence (issue 37): two core tables, the
/// same on both engines, that name no store. A backend may write them with plain SQL (the
/// documented `INSERT` in docs/backend.md): the CHECKs refuse what no store would take, the
/// defaults fill who and when. Appended to each engine's migrations (`LedgerSchema.migrations`,
/// `PostgresLedgerSchema.migrations`).
enum CustomerSchema {
    /// The columns and CHECKs both engines share; `integer` is the engine's 64-bit integer type,
    /// `now` its clock in Unix seconds.
    static func tables(integer: String, now: String) -> String {
        """
        CREATE TABLE customers (
            user_id            TEXT PRIMARY KEY
                               CHECK (length(user_id) BETWEEN 1 AND \(CustomerLimits.userIdCharacters)),
            consented          \(integer) CHECK (consented IN (0, 1)),
            consent_at         \(integer),
            consent_by         TEXT CHECK (length(consent_by) <= 200),
            refund_preference  TEXT CHECK (refund_preference IN ('decline', 'grant_full', 'grant_prorated', 'neutral')),
            note               TEXT CHECK (length(note) <= \(CustomerLimits.noteCharacters)),
            updated_at         \(integer) NOT NULL DEFAULT (\(now)),
            set_by             TEXT NOT NULL DEFAULT 'backend' CHECK (set_by IN ('backend', 'cli', 'hook', 'console')),
            set_by_name        TEXT CHECK (length(set_by_name) <= 200)
        );
        CREATE TABLE order_usage (
            order_id               TEXT PRIMARY KEY CHECK (length(order_id) BETWEEN 1 AND 200),
            consumption_milliunits \(integer)
                                   CHECK (consumption_milliunits BETWEEN 0 AND \(CustomerLimits.maxMilliunits)),
            play_time_seconds      \(integer) CHECK (play_time_seconds BETWEEN 0 AND \(CustomerLimits.maxSecondsOfUse)),
            usage_events           TEXT CHECK (length(usage_events) <= \(CustomerLimits.eventsTextCharacters)),
            ip_address             TEXT CHECK (length(ip_address) BETWEEN 2 AND 45),
            region_code            TEXT CHECK (length(region_code) BETWEEN 2 AND 3),
            administrative_area    TEXT CHECK (length(administrative_area) <= \(CustomerLimits.placeCharacters)),
            locality               TEXT CHECK (length(locality) <= \(CustomerLimits.placeCharacters)),
            updated_at             \(integer) NOT NULL DEFAULT (\(now)),
            set_by                 TEXT NOT NULL DEFAULT 'backend'
                                   CHECK (set_by IN ('backend', 'cli', 'hook', 'console'))
        );
        """
    }

    static let sqlite = tables(integer: "INTEGER", now: "unixepoch()")
    static let postgres = tables(integer: "BIGINT", now: "extract(epoch FROM now())::bigint")

    /// The tables and columns `settle ledger copy` carries.
    static let copied: [(name: String, columns: [String])] = [
        (
            "customers",
            [
                "user_id", "consented", "consent_at", "consent_by", "refund_preference", "note", "updated_at", "set_by",
                "set_by_name",
            ]
        ),
        (
            "order_usage",
            [
                "order_id", "consumption_milliunits", "play_time_seconds", "usage_events", "ip_address", "region_code",
                "administrative_area", "locality", "updated_at", "set_by",
            ]
        ),
    ]
}

extension LedgerSchema {
    /// The migration that keeps customers' refund policy and orders' usage evidence (issue 37).
    package static let customersVersion = version(of: CustomerSchema.sqlite)
}

extension PostgresLedgerSchema {
    /// As the SQLite ledger's `customersVersion`.
    package static let customersVersion = version(of: CustomerSchema.postgres)
}
