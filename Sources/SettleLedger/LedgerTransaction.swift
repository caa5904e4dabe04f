
/// A value bound to a ledger statement, whichever engine runs it (`SQLiteValue` and
/// `PostgresValue` are this type).
package enum LedgerValue: Sendable, Equatable {
    case null
    case integer(Int64)
    case text(String)

    package static func from(_ value: String?) -> LedgerValue { value.map(LedgerValue.text) ?? .null }
    package static func from(_ value: Int64?) -> LedgerValue { value.map(LedgerValue.integer) ?? .null }
    package static func from(_ value: Int?) -> LedgerValue { value.map { .integer(Int64($0)) } ?? .null }
}

/// A connection inside one ledger transaction. Statements are written once, with `?`
/// placeholders and the SQL both engines speak (`INSERT ... ON CONFLICT ... DO NOTHING`,
/// `RETURNING`, `coalesce`); what the engines disagree on is asked of `dialect`.
package protocol LedgerTransaction {
    var dialect: LedgerDialect { get }
    @discardableResult
    func query(_ sql: String, _ values: [LedgerValue]) throws -> [any LedgerRow]
    /// Runs one `UPDATE` or `DELETE` and answers how many rows it changed.
    func changedRows(_ sql: String, _ values: [LedgerValue]) throws -> Int
}

extension LedgerTransaction {
    @discardableResult
    package func query(_ sql: String) throws -> [any LedgerRow] { try query(sql, []) }
}

/// What the two engines do differently, in the way of sql-kit's `SQLDialect`: only the answers,
/// never a second copy of a transition.
///
/// SQLite runs one writer at a time (`BEGIN IMMEDIATE` takes the write lock up front), so rows
/// a transaction reads cannot change under it and it needs no row locks. PostgreSQL runs
/// writers side by side (READ COMMITTED), on several hosts: a transaction that reads a row and
/// then changes it locks it, and a claim skips rows another host holds.
package struct LedgerDialect: Sendable {
    /// Appended to a `SELECT` of rows the transaction goes on to change.
    package var lockRows: String
    /// Appended to a `SELECT` of rows to claim from the table named (or aliased) so: rows
    /// another transaction holds are skipped, not waited for (that one is working on them).
    package var claimRows: @Sendable (String) -> String
    /// A statement taking a lock on one key (a transaction id) until the transaction ends, so
    /// two writers about the same purchase (two notifications of it reaching two hosts) run one
    /// after the other; nil where transactions already run one at a time.
    package var keyLock: String?
    /// A condition that a column holds text (a backend's SQLite rows may hold BLOBs).
    package var isText: @Sendable (String) -> String
    /// Appended to the owner check of a claim (`lease_host = ? AND lease_pid = ? AND lease_start = ?`),
    /// with its values: PostgreSQL's claims carry a fencing token bumped at every claim, and a
    /// transition given one acts only while the order still has it (another host may have taken
    /// the claim over). SQLite's claims are taken back only by this process's own rescue before
    /// a pass, so the owner alone identifies them: nothing is appended.
    package var fence: @Sendable (Int64?) -> (sql: String, values: [LedgerValue])
    /// Appended to the lease columns a new claim sets: PostgreSQL's claim bumps the order's
    /// fencing token, so the previous holder's transitions change nothing; nothing on SQLite.
    package var newFence: String
    /// When a lease taken now for `seconds` ends, as SQL with its values. SQLite measures leases
    /// on this process's clock (`time`; one host); PostgreSQL on the database's (`now()`), the
    /// one clock every host shares.
    package var leaseExpiry: @Sendable (_ now: Int64, _ seconds: Int64) -> (sql: String, values: [LedgerValue])

    package static let sqlite = LedgerDialect(lockRows: "", claimRows: { _ in "" }, keyLock: nil, isText: { "typeof(\($0)) = 'text'" },
                                             fence: { _ in ("", []) }, newFence: "",
                                             leaseExpiry: { now, seconds in ("?", [.integer(now + seconds)]) })
    package static let postgres = LedgerDialect(lockRows: " FOR UPDATE", claimRows: { " FOR UPDATE OF \($0) SKIP LOCKED" },
                                               keyLock: "SELECT pg_advisory_xact_lock(hashtext(?)) IS NULL AS locked",
                                               isText: { _ in "TRUE" },
                                               fence: { fence in (" AND (?::bigint IS NULL OR fencing_token = ?::bigint)", [.from(fence), .from(fence)]) },
                                               newFence: ", fencing_token = fencing_token + 1",
                                               leaseExpiry: { _, seconds in ("\(PostgresLedger.databaseNow) + ?::bigint", [.integer(seconds)]) })
}

/// A ledger whose transitions can be written once over `LedgerTransaction`: both engines.
package protocol TransactionalLedger: LedgerStore {
    /// The highest schema version seen (`schemaReached`).
    var schemaFloor: SchemaFloor { get }
    /// One read-write transaction. Returns once it is committed (durable), or throws and
    /// nothing of it stays.
    @discardableResult
    func writing<T>(_ body: (any LedgerTransaction) throws -> T) throws(LedgerError) -> T
    /// One transition of a claimed order, as one unit that commits before this returns. On
    /// SQLite it joins the group commit (one transaction for every transition waiting at that
    /// moment, one fsync for all); on PostgreSQL it is its own transaction.
    ///
    /// `body` may run twice on SQLite: when another transition of its batch fails, nothing of
    /// the batch's run is kept and the batch runs again, each in its own savepoint. So `body`
    /// reads the ledger and writes it and nothing else (no log line, no captured state); what
    /// the caller gets is its last run's answer.
    func transition<T>(_ body: (any LedgerTransaction) throws -> T) throws(LedgerError) -> T
    /// `transition`, for a caller that goes on without waiting for the commit: `done` gets the
    /// result once the commit holding it finished (durable), or the error. On SQLite it joins
    /// the group commit, waiting for company, and `done` runs on the thread that led that
    /// commit once it gave up the lead; on PostgreSQL it commits at once and `done` runs before
    /// this returns.
    func transition<T>(_ body: @escaping (any LedgerTransaction) throws -> T,
                       then done: @escaping (Result<T, LedgerError>) -> Void)
    /// Several transitions of one caller, each its own unit as `transition` (one failing leaves
    /// the others), each result apart: on SQLite submitted together, so one group commit (one
    /// fsync) holds them all; on PostgreSQL one transaction each.
    func transitions<T>(_ bodies: [(any LedgerTransaction) throws -> T]) -> [Result<T, LedgerError>]
    /// One read-only transaction with one snapshot.
    func reading<T>(_ body: (any LedgerTransaction) throws -> T) throws(LedgerError) -> T
    /// A read whose body runs exactly one statement, which is a snapshot by itself: on SQLite
    /// without BEGIN and COMMIT; on PostgreSQL `reading`.
    func readingStatement<T>(_ body: (any LedgerTransaction) throws -> T) throws(LedgerError) -> T
    /// Whether the schema has the notification tables (a read-only status of an older ledger may not).
    func hasNotificationTables() throws(LedgerError) -> Bool
    /// Whether the schema keeps the counts by store and state in `order_counts` (SQLite's schema
    /// 9, kept by triggers, so status does not count a million rows); on PostgreSQL (schema 18) a view
    /// of the same name sums `order_count_deltas`, kept by a trigger.
    func keepsOrderCounts() throws(LedgerError) -> Bool
    /// Whether the schema keeps each host's pacer buckets (`pacer_buckets`).
    func knowsPacerBuckets() throws(LedgerError) -> Bool
    /// Whether the schema records support's transfers and redeliveries (`support_actions`).
    func knowsSupportActions() throws(LedgerError) -> Bool
    /// Whether a store module's named migration was applied (its tables are there).
    func hasMigration(_ name: String) throws(LedgerError) -> Bool
}

/// The SQLite connection of `SQLiteLedger`, inside one of its transactions.
package struct SQLiteTransaction: LedgerTransaction {
    package let database: SQLiteDatabase
    package var dialect: LedgerDialect { .sqlite }

    package func query(_ sql: String, _ values: [LedgerValue]) throws -> [any LedgerRow] { try database.query(sql, values) }

    package func changedRows(_ sql: String, _ values: [LedgerValue]) throws -> Int {
        try database.query(sql, values)
        return database.changes
    }
}

/// A pooled PostgreSQL connection, inside one of `PostgresLedger`'s transactions.
package struct PostgresTransaction: LedgerTransaction {
    package let connection: PostgresConnection
    package var dialect: LedgerDialect { .postgres }

    package func query(_ sql: String, _ values: [LedgerValue]) throws -> [any LedgerRow] { try connection.run(sql, values) }

    package func changedRows(_ sql: String, _ values: [LedgerValue]) throws -> Int {
        Int(try connection.run("WITH changed AS (\(sql) RETURNING 1) SELECT count(*) AS n FROM changed", values).first?.int("n") ?? 0)
    }
}

extension SQLiteLedger: TransactionalLedger {
    @discardableResult
    package func writing<T>(_ body: (any LedgerTransaction) throws -> T) throws(LedgerError) -> T {
        try locked { () throws(LedgerError) in try write { try body(SQLiteTransaction(database: database)) } }
    }

    package func reading<T>(_ body: (any LedgerTransaction) throws -> T) throws(LedgerError) -> T {
        try read { connection in try body(SQLiteTransaction(database: connection)) }
    }

    package func readingStatement<T>(_ body: (any LedgerTransaction) throws -> T) throws(LedgerError) -> T {
        try readStatement { connection in try body(SQLiteTransaction(database: connection)) }
    }

    package func transition<T>(_ body: (any LedgerTransaction) throws -> T) throws(LedgerError) -> T {
        try transition { try body(SQLiteTransaction(database: database)) }
    }

    package func transition<T>(_ body: @escaping (any LedgerTransaction) throws -> T,
                               then done: @escaping (Result<T, LedgerError>) -> Void) {
        let database = database
        transitionDetached({ try body(SQLiteTransaction(database: database)) }, done: done)
    }

    package func transitions<T>(_ bodies: [(any LedgerTransaction) throws -> T]) -> [Result<T, LedgerError>] {
        let database = database
        return transitions(bodies.map { body in { try body(SQLiteTransaction(database: database)) } })
    }

    package func hasNotificationTables() throws(LedgerError) -> Bool { try schemaReached(5) }

    package func keepsOrderCounts() throws(LedgerError) -> Bool { try schemaReached(LedgerSchema.storeBreakersVersion) }

    package func knowsPacerBuckets() throws(LedgerError) -> Bool { try schemaReached(LedgerSchema.pacerBucketsVersion) }
    package func knowsSupportActions() throws(LedgerError) -> Bool { try schemaReached(LedgerSchema.supportActionsVersion) }
}

extension PostgresLedger: TransactionalLedger {
    @discardableResult
    package func writing<T>(_ body: (any LedgerTransaction) throws -> T) throws(LedgerError) -> T {
        try write { connection in try body(PostgresTransaction(connection: connection)) }
    }

    package func reading<T>(_ body: (any LedgerTransaction) throws -> T) throws(LedgerError) -> T {
        try read { connection in try body(PostgresTransaction(connection: connection)) }
    }

    package func readingStatement<T>(_ body: (any LedgerTransaction) throws -> T) throws(LedgerError) -> T { try reading(body) }

    package func transition<T>(_ body: (any LedgerTransaction) throws -> T) throws(LedgerError) -> T { try writing(body) }

    package func transition<T>(_ body: @escaping (any LedgerTransaction) throws -> T,
                               then done: @escaping (Result<T, LedgerError>) -> Void) {
        done(Result { () throws(LedgerError) in try writing(body) })
    }

    package func transitions<T>(_ bodies: [(any LedgerTransaction) throws -> T]) -> [Result<T, LedgerError>] {
        bodies.map { body in Result { () throws(LedgerError) in try writing(body) } }
    }

    package func keepsOrderCounts() throws(LedgerError) -> Bool {
        try schemaReached(PostgresLedgerSchema.orderCountsVersion)
    }

    package func hasNotificationTables() throws(LedgerError) -> Bool { try schemaReached(PostgresLedgerSchema.notificationsVersion) }

    package func knowsPacerBuckets() throws(LedgerError) -> Bool { try schemaReached(PostgresLedgerSchema.pacerBucketsVersion) }
    package func knowsSupportActions() throws(LedgerError) -> Bool { try schemaReached(PostgresLedgerSchema.supportActionsVersion) }
}
