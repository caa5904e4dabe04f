import CPostgres
import Foundation
import SettleConfig

/// A PostgreSQL failure: the SQLSTATE (when the server sent one), libpq's message and the
/// statement's SQL. Bound values are never part of it: they may be receipts or personal data.
package struct PostgresError: Error, Sendable, CustomStringConvertible {
    /// Five characters (https://www.postgresql.org/docs/current/errcodes-appendix.html);
    /// nil when the failure happened on the client side (no connection, lost connection).
    package var sqlstate: String?
    package var message: String
    package var sql: String?

    package var description: String {
        "PostgreSQL error" + (sqlstate.map { " \($0)" } ?? "") + ": \(message)" + (sql.map { " (in: \($0))" } ?? "")
    }

    /// Class 23, integrity constraint violation.
    package var isConstraintViolation: Bool { sqlstate?.hasPrefix("23") == true }

    /// Class 08 (connection exception), 57P01-57P03 (the server is shutting down or starting),
    /// or a failure libpq reported without a SQLSTATE: the connection cannot be trusted again.
    package var isConnectionLost: Bool {
        guard let sqlstate else { return true }
        return sqlstate.hasPrefix("08") || sqlstate.hasPrefix("57P")
    }

    /// 40001 serialization failure, 40P01 deadlock detected: the transaction may be run again.
    package var isRetryableConflict: Bool { sqlstate == "40001" || sqlstate == "40P01" }
}

/// A value bound to a statement parameter: the ledger's own (`LedgerValue`). Sent in text
/// format, typed by the server from the statement's context.
package typealias PostgresValue = LedgerValue

/// A result row, addressed by column name; every value arrives in text format.
package struct PostgresRow: Sendable, LedgerRow {
    package var values: [String: String] = [:]

    package func string(_ column: String) -> String? { values[column] }
    package func int(_ column: String) -> Int64? { values[column].flatMap { Int64($0) } }
    package func bool(_ column: String) -> Bool? { values[column].map { $0 == "t" } }
}

/// One PostgreSQL connection: owns the `PGconn*` and finishes it in `deinit`.
///
/// Not thread-safe by itself (libpq: "a PGconn ... should not be used by multiple threads
/// at once", https://www.postgresql.org/docs/current/libpq-threading.html); `PostgresPool`
/// hands each connection to one thread at a time.
package final class PostgresConnection {
    private(set) var handle: OpaquePointer?
    /// Statement names by SQL text: each statement is prepared once per connection.
    private var prepared: [String: String] = [:]
    package static let preparedLimit = 256

    /// Connects. `url` is a libpq connection URI or keyword string; `password`, when given,
    /// overrides any password in it (it comes from a `password_file`).
    package init(url: String, password: Secret? = nil, applicationName: String = "settle") throws(PostgresError) {
        // Defaults first, the URL after them: "later ... values override earlier ones", and an
        // expanded dbname's values apply where it appears
        // (https://www.postgresql.org/docs/current/libpq-connect.html#LIBPQ-PQCONNECTDBPARAMS).
        // tcp_user_timeout and keepalives: a host cut off from the network finds out in
        // seconds instead of waiting for the kernel's minutes-long TCP retransmission.
        var pairs: [(String, String)] = [
            ("connect_timeout", "10"), ("application_name", applicationName), ("tcp_user_timeout", "15000"),
            ("keepalives", "1"), ("keepalives_idle", "10"), ("keepalives_interval", "5"), ("keepalives_count", "3"),
            ("dbname", url),
        ]
        if let password { pairs.append(("password", password.value)) }
        let keywords = pairs.map { strdup($0.0) }
        let values = pairs.map { strdup($0.1) }
        defer {
            keywords.forEach { free($0) }
            values.forEach { free($0) }
        }
        let conn = (keywords.map { UnsafePointer($0) } + [nil]).withUnsafeBufferPointer { keywordPointers in
            (values.map { UnsafePointer($0) } + [nil]).withUnsafeBufferPointer { valuePointers in
                PQconnectdbParams(keywordPointers.baseAddress, valuePointers.baseAddress, 1)
            }
        }
        handle = conn
        guard let conn, PQstatus(conn) == CONNECTION_OK else {
            let message = conn.map { PostgresConnection.trimmed(PQerrorMessage($0)) } ?? "out of memory"
            PQfinish(conn)
            handle = nil
            throw PostgresError(sqlstate: nil, message: "cannot connect: \(message)", sql: nil)
        }
    }

    deinit { PQfinish(handle) }

    /// Closes the connection. libpq's PQfinish cannot fail; it is here so the owner says when.
    package func close() {
        PQfinish(handle)
        handle = nil
        prepared.removeAll()
    }

    /// Whether libpq still considers the connection usable.
    package var isHealthy: Bool { handle.map { PQstatus($0) == CONNECTION_OK } ?? false }

    /// Runs statements that take no parameters (a migration, BEGIN/COMMIT). Uses the simple
    /// query protocol, which allows several statements in one string.
    package func execute(_ sql: String) throws(PostgresError) {
        let result = PQexec(handle, sql)
        defer { PQclear(result) }
        _ = try rows(result, sql: sql)
    }

    /// Runs one statement with bound parameters (prepared once per connection) and returns its rows.
    @discardableResult
    package func query(_ sql: String, _ arguments: [PostgresValue] = []) throws(PostgresError) -> [PostgresRow] {
        let name = try statementName(sql, parameterCount: arguments.count)
        let texts: [String?] = arguments.map {
            switch $0 {
            case .null: return nil
            case let .integer(value): return String(value)
            case let .text(value): return value
            }
        }
        // Text parameters must not hold NUL, which PostgreSQL's text type refuses anyway;
        // cut there rather than fail, as the column could never store it.
        let copies = texts.map { $0.map { strdup($0) } ?? nil }
        defer { copies.forEach { free($0) } }
        let result = copies.map { UnsafePointer($0) }.withUnsafeBufferPointer { values in
            PQexecPrepared(handle, name, Int32(arguments.count), values.baseAddress, nil, nil, 0)
        }
        defer { PQclear(result) }
        return try rows(result, sql: sql)
    }

    private func statementName(_ sql: String, parameterCount: Int) throws(PostgresError) -> String {
        if let name = prepared[sql] { return name }
        if prepared.count >= PostgresConnection.preparedLimit {
            try execute("DEALLOCATE ALL")
            prepared.removeAll()
        }
        let name = "s\(prepared.count)"
        // nParams 0 and no types: "the server ... infer[s] a data type for the parameter
        // symbol in the same way it would do for an untyped literal string"
        // (https://www.postgresql.org/docs/current/libpq-exec.html#LIBPQ-PQPREPARE).
        let result = PQprepare(handle, name, sql, 0, nil)
        defer { PQclear(result) }
        _ = try rows(result, sql: sql)
        prepared[sql] = name
        return name
    }

    func rows(_ result: OpaquePointer?, sql: String) throws(PostgresError) -> [PostgresRow] {
        guard let result else {
            throw PostgresError(sqlstate: nil, message: PostgresConnection.trimmed(PQerrorMessage(handle)), sql: sql)
        }
        switch PQresultStatus(result) {
        case PGRES_COMMAND_OK, PGRES_EMPTY_QUERY:
            return []
        case PGRES_TUPLES_OK:
            let fields = PQnfields(result)
            let names = (0..<fields).map { String(cString: PQfname(result, $0)) }
            return (0..<PQntuples(result)).map { row in
                var values: [String: String] = [:]
                values.reserveCapacity(names.count)
                for (index, name) in names.enumerated() where PQgetisnull(result, row, Int32(index)) == 0 {
                    values[name] = String(cString: PQgetvalue(result, row, Int32(index)))
                }
                return PostgresRow(values: values)
            }
        default:
            let state = PQresultErrorField(result, settle_pg_diag_sqlstate()).map { String(cString: $0) }
            // The primary message only: DETAIL quotes the offending values ("Key (id)=(...)
            // already exists"), and those may be receipts or personal data.
            let primary = PQresultErrorField(result, settle_pg_diag_message_primary())
            throw PostgresError(sqlstate: state, message: PostgresConnection.trimmed(primary ?? PQresultErrorMessage(result)), sql: sql)
        }
    }

    static func trimmed(_ message: UnsafePointer<CChar>?) -> String {
        message.map { String(cString: $0).trimmingCharacters(in: .whitespacesAndNewlines) } ?? "unknown error"
    }
}
