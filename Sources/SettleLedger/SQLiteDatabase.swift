import CSQLite
import Foundation

/// An SQLite failure: the extended result code, SQLite's message and the statement's SQL.
/// Bound values are never part of it: they may be receipts or personal data.
package struct SQLiteError: Error, Sendable, CustomStringConvertible {
    package var code: Int32
    package var message: String
    package var sql: String?

    package var description: String {
        "SQLite error \(code): \(message)" + (sql.map { " (in: \($0))" } ?? "")
    }

    /// SQLITE_CONSTRAINT and its extended codes.
    package var isConstraintViolation: Bool { code & 0xFF == SQLITE_CONSTRAINT }

    /// SQLITE_BUSY or SQLITE_LOCKED and their extended codes: another connection held the
    /// ledger past the busy timeout. Nothing is wrong with the file; trying again later works.
    package var isBusy: Bool { code & 0xFF == SQLITE_BUSY || code & 0xFF == SQLITE_LOCKED }
}

/// A value bound to a statement parameter: the ledger's own (`LedgerValue`).
package typealias SQLiteValue = LedgerValue

/// One SQLite connection: owns the `sqlite3*` handle and closes it in `deinit`.
///
/// Not thread-safe by itself; `SQLiteLedger` serialises all use behind one lock.
package final class SQLiteDatabase {
    private var handle: OpaquePointer?
    package let path: String
    /// Prepared statements by SQL text, reused across calls: preparing is a large part of a
    /// short statement's cost ("reused ... can be more efficient than ... preparing a new
    /// statement", https://www.sqlite.org/c3ref/stmt.html). Bounded: status filters build SQL.
    private var statements: [StatementKey: SQLiteStatement] = [:]
    package static let statementCacheLimit = 128

    package enum Mode: Sendable { case readWrite, readOnly }

    package init(path: String, mode: Mode) throws(SQLiteError) {
        self.path = path
        // SQLITE_OPEN_NOMUTEX: the SQLiteLedger serialises access itself, so SQLite's own mutex is redundant.
        _ = SQLiteDatabase.memoryStatisticsOff
        _ = SQLiteDatabase.pooledMalloc
        var flags = SQLITE_OPEN_NOMUTEX | SQLITE_OPEN_EXRESCODE
        flags |= mode == .readOnly ? SQLITE_OPEN_READONLY : (SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE)
        var db: OpaquePointer?
        let rc = sqlite3_open_v2(path, &db, flags, nil)
        handle = db
        guard rc == SQLITE_OK else {
            let message = db.map { String(cString: sqlite3_errmsg($0)) } ?? "out of memory"
            sqlite3_close_v2(db)
            handle = nil
            throw SQLiteError(code: rc, message: "cannot open \(path): \(message)", sql: nil)
        }
        // "Extended result codes are enabled or disabled on a per database connection basis"
        // https://www.sqlite.org/rescode.html#extrc
        sqlite3_extended_result_codes(db, 1)
        // "Set a busy handler that sleeps ... until at least ms milliseconds of sleeping have accumulated"
        // https://www.sqlite.org/c3ref/busy_timeout.html — the 5 s Litestream and others recommend.
        sqlite3_busy_timeout(db, SQLiteDatabase.busyTimeoutMilliseconds)
        // "SQLITE_DETERMINISTIC ... always gives the same output when the input parameters are
        // the same" (https://www.sqlite.org/c3ref/c_deterministic.html): usable in any WHERE.
        sqlite3_create_function_v2(db, "settle_clean_text", 1, SQLITE_UTF8 | SQLITE_DETERMINISTIC, nil,
                                   { context, _, values in
                                       sqlite3_result_int(context, SQLiteDatabase.isCleanText(values?[0]) ? 1 : 0)
                                   }, nil, nil, nil)
    }

    /// `settle_clean_text(x)`: 1 when `x` is NULL or text that reads back exactly as written:
    /// valid UTF-8 without a NUL character. SQLite stores text bytes as given, and a NUL or an
    /// invalid sequence comes back as another string (cut at the NUL, or repaired), so a
    /// statement naming the row by what it read would miss it or hit another row.
    package static func isCleanText(_ value: OpaquePointer?) -> Bool {
        switch sqlite3_value_type(value) {
        case SQLITE_NULL: return true
        case SQLITE_TEXT:
            let count = Int(sqlite3_value_bytes(value))
            guard count > 0 else { return true }
            guard let bytes = sqlite3_value_text(value) else { return false }
            var iterator = UnsafeBufferPointer(start: bytes, count: count).makeIterator()
            var decoder = UTF8()
            while true {
                switch decoder.decode(&iterator) {
                case let .scalarValue(scalar) where scalar.value != 0: continue
                case .emptyInput: return true
                case .scalarValue, .error: return false
                }
            }
        default: return false
        }
    }

    /// SQLite's allocation counters off, once, before the process's first connection initializes
    /// SQLite: nothing here reads them, and keeping them took a global mutex around each of the
    /// ~400 mallocs and frees SQLite makes an order (a few per cent of a pass's instructions).
    private static let memoryStatisticsOff: Int32 = settle_sqlite_config_memstatus_off()

    /// SQLite's allocator: glibc's, with a pool for the 1 KiB pieces its in-memory journals come
    /// in (CSQLite's shim.h), once, before the first connection. SQLITE_OK when installed (tests look).
    package static let pooledMalloc: Int32 = settle_sqlite_config_pooled_malloc()

    /// How long a statement waits for another connection's lock before SQLITE_BUSY.
    package static let busyTimeoutMilliseconds: Int32 = 5000

    deinit {
        // sqlite3_close_v2 defers the close until statements are finalized, so it cannot fail here.
        sqlite3_close_v2(handle)
    }

    /// Closes the connection, reporting a failure instead of hiding it.
    package func close() throws(SQLiteError) {
        guard let db = handle else { return }
        // "all prepared statements must be finalized before sqlite3_close() is called"
        // (https://www.sqlite.org/c3ref/close.html).
        statements.removeAll()
        let rc = sqlite3_close(db)
        guard rc == SQLITE_OK else { throw error(rc, sql: nil) }
        handle = nil
    }

    package func error(_ rc: Int32, sql: String?) -> SQLiteError {
        let message = handle.map { String(cString: sqlite3_errmsg($0)) } ?? "connection closed"
        return SQLiteError(code: rc, message: message, sql: sql)
    }

    /// Keeps the `-wal` and `-shm` files when the last connection closes.
    ///
    /// "the WAL file ... persist after the last database connection closes" (SQLITE_FCNTL_PERSIST_WAL,
    /// https://www.sqlite.org/c3ref/c_fcntl_begin_atomic_write.html). Without it a read-only
    /// reader (`settle status`) arriving after the writer closed would have to create them,
    /// writing files beside the ledger (owned by whoever ran status).
    package func persistWAL() throws(SQLiteError) {
        var one: Int32 = 1
        let rc = sqlite3_file_control(handle, "main", SQLITE_FCNTL_PERSIST_WAL, &one)
        guard rc == SQLITE_OK else { throw error(rc, sql: nil) }
    }

    /// Runs one or more statements that take no parameters and return no rows used.
    package func execute(_ sql: String) throws(SQLiteError) {
        var errmsg: UnsafeMutablePointer<CChar>?
        let rc = sqlite3_exec(handle, sql, nil, nil, &errmsg)
        if rc != SQLITE_OK {
            let message = errmsg.map { String(cString: $0) } ?? "unknown error"
            sqlite3_free(errmsg)
            throw SQLiteError(code: rc, message: message, sql: sql)
        }
    }

    /// Runs a statement with bound parameters and returns every row.
    @discardableResult
    package func query(_ sql: String, _ arguments: [SQLiteValue] = []) throws(SQLiteError) -> [SQLiteRow] {
        try prepared(sql).run(arguments)
    }

    /// Rows the last INSERT, UPDATE or DELETE changed (not counting its triggers').
    package var changes: Int { Int(sqlite3_changes(handle)) }

    private func prepared(_ sql: String) throws(SQLiteError) -> SQLiteStatement {
        let key = StatementKey(sql)
        if let cached = statements[key] { return cached }
        let statement = try SQLiteStatement(database: self, handle: handle, sql: sql)
        if statements.count >= SQLiteDatabase.statementCacheLimit { statements.removeAll() }
        statements[key] = statement
        return statement
    }

    /// Runs `body` in a transaction that takes the write lock up front.
    ///
    /// BEGIN IMMEDIATE, not DEFERRED: a deferred transaction that reads then writes can fail
    /// with SQLITE_BUSY_SNAPSHOT without ever calling the busy handler
    /// (https://www.sqlite.org/lang_transaction.html, "If the ... write ... SQLITE_BUSY").
    package func writeTransaction<T>(_ body: () throws -> T) throws -> T {
        try query("BEGIN IMMEDIATE")
        do {
            let result = try body()
            try query("COMMIT")
            return result
        } catch {
            try? query("ROLLBACK")
            throw error
        }
    }

    /// Runs `body` in a read transaction so that every query in it sees one snapshot.
    package func readTransaction<T>(_ body: () throws -> T) throws -> T {
        try query("BEGIN DEFERRED")
        defer { try? query("COMMIT") }
        return try body()
    }
}

/// One prepared statement, finalized in `deinit`.
package final class SQLiteStatement {
    private var handle: OpaquePointer?
    private let sql: String
    /// Unowned: the database keeps its statements, and finalizes them before it closes.
    private unowned let database: SQLiteDatabase
    /// Column names, read once: they do not change between runs of a prepared statement.
    private var columns: SQLiteColumns?

    package init(database: SQLiteDatabase, handle db: OpaquePointer?, sql: String) throws(SQLiteError) {
        self.database = database
        self.sql = sql
        // SQLITE_PREPARE_PERSISTENT: "the prepared statement will be retained for a long time
        // and probably reused many times" (https://www.sqlite.org/c3ref/c_prepare_normalize.html).
        let rc = sqlite3_prepare_v3(db, sql, -1, UInt32(SQLITE_PREPARE_PERSISTENT), &handle, nil)
        guard rc == SQLITE_OK else {
            sqlite3_finalize(handle)
            handle = nil
            throw database.error(rc, sql: sql)
        }
    }

    deinit { sqlite3_finalize(handle) }

    /// Makes the statement ready for its next run: rewound, parameters cleared.
    package func reset() {
        sqlite3_reset(handle)
        sqlite3_clear_bindings(handle)
    }

    /// Binds `arguments`, runs the statement, and resets it before returning its rows.
    ///
    /// Text is bound in place (SQLITE_STATIC), not copied: each string is bound inside its own
    /// `withUTF8`, one within the next, the statement runs inside the innermost, and it is reset
    /// and its parameters cleared there, before any of those pointers ends. A copied (transient)
    /// string was a malloc, a copy and a free each, some forty an order.
    package func run(_ arguments: [SQLiteValue]) throws(SQLiteError) -> [SQLiteRow] {
        try runBinding(arguments, from: 0).get()
    }

    /// How many leading parameters are bound in place (hot statements have fewer); the rest are copied.
    static let textBoundInPlace = 24

    private func runBinding(_ arguments: [SQLiteValue], from first: Int) -> Result<[SQLiteRow], SQLiteError> {
        var offset = first
        while offset < arguments.count {
            let index = Int32(offset + 1)
            let rc: Int32
            switch arguments[offset] {
            case .null: rc = sqlite3_bind_null(handle, index)
            case let .integer(v): rc = sqlite3_bind_int64(handle, index, v)
            case let .text(s) where offset >= Self.textBoundInPlace:
                // Past the first few, copied: a list of thousands (a customer's every transaction)
                // must not nest a frame each on a thread's stack.
                rc = sqlite3_bind_text(handle, index, s, Int32(s.utf8.count), settle_sqlite_transient())
            case let .text(s):
                var text = s
                let next = offset + 1
                return text.withUTF8 { bytes in
                    // An explicit byte length: text may hold NUL bytes (a hook's output). A NULL
                    // pointer would bind NULL, so text without one is bound as a copy of "".
                    let rc = bytes.baseAddress.map {
                        sqlite3_bind_text(handle, index, UnsafeRawPointer($0).assumingMemoryBound(to: CChar.self),
                                          Int32(bytes.count), settle_sqlite_static())
                    } ?? sqlite3_bind_text(handle, index, "", 0, settle_sqlite_transient())
                    return rc == SQLITE_OK ? runBinding(arguments, from: next) : failed(rc)
                }
            }
            guard rc == SQLITE_OK else { return failed(rc) }
            offset += 1
        }
        defer { reset() }
        return Result { () throws(SQLiteError) in try rows() }
    }

    /// A failed bind: the error as SQLite words it, then the statement reset (nothing stays bound).
    private func failed(_ rc: Int32) -> Result<[SQLiteRow], SQLiteError> {
        let error = database.error(rc, sql: sql)
        reset()
        return .failure(error)
    }

    package func rows() throws(SQLiteError) -> [SQLiteRow] {
        var rows: [SQLiteRow] = []
        while true {
            let rc = sqlite3_step(handle)
            if rc == SQLITE_DONE { return rows }
            guard rc == SQLITE_ROW else { throw database.error(rc, sql: sql) }
            // A statement SQLite re-prepared after a schema change (another process migrated)
            // may have more columns: read the names again then.
            let count = Int(sqlite3_column_count(handle))
            let columns: SQLiteColumns
            if let known = self.columns, known.names.count == count {
                columns = known
            } else {
                columns = SQLiteColumns((0..<count).map { String(cString: sqlite3_column_name(handle, Int32($0))) })
                self.columns = columns
            }
            var cells: [SQLiteValue] = []
            cells.reserveCapacity(count)
            for index in 0..<count {
                let column = Int32(index)
                switch sqlite3_column_type(handle, column) {
                case SQLITE_NULL: cells.append(.null)
                case SQLITE_INTEGER: cells.append(.integer(sqlite3_column_int64(handle, column)))
                default:
                    // "call sqlite3_column_text() first ... then sqlite3_column_bytes()" (https://www.sqlite.org/c3ref/column_blob.html)
                    let text = sqlite3_column_text(handle, column)
                    let bytes = Int(sqlite3_column_bytes(handle, column))
                    cells.append(.text(text.map { String(decoding: UnsafeBufferPointer(start: $0, count: bytes), as: UTF8.self) } ?? ""))
                }
            }
            rows.append(SQLiteRow(columns: columns, cells: cells))
        }
    }
}

/// The column names of a statement's rows and where each stands: read once per statement and
/// shared by every row it returns, so a row is an array, not a dictionary built per row.
package final class SQLiteColumns: Sendable {
    package let names: [String]
    /// Each name's position; the last column of a name wins.
    let positions: ColumnPositions

    package init(_ names: [String]) {
        self.names = names
        positions = ColumnPositions(names)
    }
}

/// A result row, addressed by column name.
package struct SQLiteRow: Sendable {
    package let columns: SQLiteColumns
    package let cells: [SQLiteValue]

    /// The value of `column`; nil when the row has no such column.
    package func value(_ column: String) -> SQLiteValue? {
        columns.positions.position(column).map { cells[$0] }
    }

    package func string(_ column: String) -> String? {
        switch value(column) {
        case let .text(s): return s
        case let .integer(i): return String(i)
        default: return nil
        }
    }

    package func int(_ column: String) -> Int64? {
        switch value(column) {
        case let .integer(i): return i
        case let .text(s): return Int64(s)
        default: return nil
        }
    }
}

extension SQLiteDatabase {
    /// The SQLite library as loaded at run time, for `settle --version`.
    package static var libraryVersion: String { String(cString: sqlite3_libversion()) }
}
