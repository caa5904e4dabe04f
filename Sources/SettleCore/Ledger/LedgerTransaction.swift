/// A value bound to a ledger statement, whichever engine runs it (`SQLiteValue` and
/// `PostgresValue` are this type).
public enum LedgerValue: Sendable, Equatable {
    case null
    case integer(Int64)
    case text(String)

    static func from(_ value: String?) -> LedgerValue { value.map(LedgerValue.text) ?? .null }
    static func from(_ value: Int64?) -> LedgerValue { value.map(LedgerValue.integer) ?? .null }
    static func from(_ value: Int?) -> LedgerValue { value.map { .integer(Int64($0)) } ?? .null }
}

/// A connection inside one ledger transaction. Statements are written once, with `?`
/// placeholders and the SQL both engines speak (`INSERT ... ON CONFLICT ... DO NOTHING`,
/// `RETURNING`, `coalesce`); what the engines disagree on is asked of `dialect`.
public protocol LedgerTransaction {
    var dialect: LedgerDialect { get }
    @discardableResult
    func query(_ sql: String, _ values: [LedgerValue]) throws -> [any LedgerRow]
}

extension LedgerTransaction {
    @discardableResult
    public func query(_ sql: String) throws -> [any LedgerRow] { try query(sql, []) }
}

/// What the two engines do differently, in the way of sql-kit's `SQLDialect`: only the answers,
/// never a second copy of a transition.
///
/// SQLite runs one writer at a time (`BEGIN IMMEDIATE` takes the write lock up front), so rows
/// a transaction reads cannot change under it and it needs no row locks. PostgreSQL runs
/// writers side by side (READ COMMITTED), on several hosts: a transaction that reads a row and
/// then changes it locks it, and a claim skips rows another host holds.
public struct LedgerDialect: Sendable {
    /// Appended to a `SELECT` of rows the transaction goes on to change.
    public var lockRows: String
    /// Appended to a `SELECT` of rows to claim from the table named (or aliased) so: rows
    /// another transaction holds are skipped, not waited for (that one is working on them).
    public var claimRows: @Sendable (String) -> String
    /// A statement taking a lock on one key (a transaction id) until the transaction ends, so
    /// two writers about the same purchase (two notifications of it reaching two hosts) run one
    /// after the other; nil where transactions already run one at a time.
    public var keyLock: String?
    /// A condition that a column holds text (a backend's SQLite rows may hold BLOBs).
    public var isText: @Sendable (String) -> String

    public static let sqlite = LedgerDialect(lockRows: "", claimRows: { _ in "" }, keyLock: nil, isText: { "typeof(\($0)) = 'text'" })
    public static let postgres = LedgerDialect(lockRows: " FOR UPDATE", claimRows: { " FOR UPDATE OF \($0) SKIP LOCKED" },
                                               keyLock: "SELECT pg_advisory_xact_lock(hashtext(?)) IS NULL AS locked",
                                               isText: { _ in "TRUE" })
}

/// A ledger whose transitions can be written once over `LedgerTransaction`: both engines.
public protocol TransactionalLedger: LedgerStore {
    /// One read-write transaction. Returns once it is committed (durable), or throws and
    /// nothing of it stays.
    @discardableResult
    func writing<T>(_ body: (any LedgerTransaction) throws -> T) throws(LedgerError) -> T
    /// One read-only transaction with one snapshot.
    func reading<T>(_ body: (any LedgerTransaction) throws -> T) throws(LedgerError) -> T
    /// Whether the schema has the notification tables (a read-only status of an older ledger may not).
    func hasNotificationTables() throws(LedgerError) -> Bool
}

/// The SQLite connection of `Ledger`, inside one of its transactions.
struct SQLiteTransaction: LedgerTransaction {
    let database: SQLiteDatabase
    var dialect: LedgerDialect { .sqlite }

    func query(_ sql: String, _ values: [LedgerValue]) throws -> [any LedgerRow] { try database.query(sql, values) }
}

/// A pooled PostgreSQL connection, inside one of `PostgresLedger`'s transactions.
struct PostgresTransaction: LedgerTransaction {
    let connection: PostgresConnection
    var dialect: LedgerDialect { .postgres }

    func query(_ sql: String, _ values: [LedgerValue]) throws -> [any LedgerRow] { try connection.run(sql, values) }
}

extension Ledger: TransactionalLedger {
    @discardableResult
    public func writing<T>(_ body: (any LedgerTransaction) throws -> T) throws(LedgerError) -> T {
        try locked { () throws(LedgerError) in try write { try body(SQLiteTransaction(database: database)) } }
    }

    public func reading<T>(_ body: (any LedgerTransaction) throws -> T) throws(LedgerError) -> T {
        try read { try body(SQLiteTransaction(database: database)) }
    }

    public func hasNotificationTables() throws(LedgerError) -> Bool { try schemaVersion() >= 5 }
}

extension PostgresLedger: TransactionalLedger {
    @discardableResult
    public func writing<T>(_ body: (any LedgerTransaction) throws -> T) throws(LedgerError) -> T {
        try write { connection in try body(PostgresTransaction(connection: connection)) }
    }

    public func reading<T>(_ body: (any LedgerTransaction) throws -> T) throws(LedgerError) -> T {
        try read { connection in try body(PostgresTransaction(connection: connection)) }
    }

    public func hasNotificationTables() throws(LedgerError) -> Bool { try schemaVersion() >= PostgresLedgerSchema.notificationsVersion }
}
