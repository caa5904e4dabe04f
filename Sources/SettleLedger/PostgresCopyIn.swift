import CPostgres
import Foundation

/// Rows written with `COPY … FROM STDIN` in PostgreSQL's text format: the fastest way in (one
/// statement for any number of rows, no per-row round trip or parse). Rows are encoded into a
/// buffer and sent whenever it holds `chunkBytes`, so memory stays flat however many rows go.
///
/// Text format (https://www.postgresql.org/docs/current/sql-copy.html#id-1.9.3.55.9.2): columns
/// separated by tabs, rows by newlines, NULL as `\N`; a backslash, tab, newline or carriage
/// return inside a value is escaped. A value never holds NUL (PostgreSQL's text type refuses it):
/// it is cut there, as `PostgresConnection.query` cuts a bound value.
package struct PostgresCopyIn: ~Copyable {
    private let connection: PostgresConnection
    private let statement: String
    private var buffer: [UInt8] = []
    private let chunkBytes: Int
    /// Rows sent so far.
    package private(set) var rows = 0

    /// Starts `statement` (`COPY t(a, b) FROM STDIN`) on `connection`, inside its transaction.
    package init(_ statement: String, on connection: PostgresConnection,
                 chunkBytes: Int = 1 << 20) throws(PostgresError) {
        self.connection = connection
        self.statement = statement
        self.chunkBytes = chunkBytes
        buffer.reserveCapacity(chunkBytes + 4096)
        let result = PQexec(connection.handle, statement)
        defer { PQclear(result) }
        guard let result, PQresultStatus(result) == PGRES_COPY_IN else {
            _ = try connection.rows(result, sql: statement)
            throw PostgresError(sqlstate: nil, message: "the server did not start COPY", sql: statement)
        }
    }

    /// Adds one row, its values in the statement's column order.
    package mutating func append(_ values: [LedgerValue]) throws(PostgresError) {
        for (index, value) in values.enumerated() {
            if index > 0 { buffer.append(UInt8(ascii: "\t")) }
            Self.encode(value, into: &buffer)
        }
        buffer.append(UInt8(ascii: "\n"))
        rows += 1
        if buffer.count >= chunkBytes { try flush() }
    }

    /// Sends what is buffered, ends the COPY and returns once the server has taken every row
    /// (or throws its error: a constraint, a type, with no value quoted).
    package consuming func finish() throws(PostgresError) {
        try flush()
        guard PQputCopyEnd(connection.handle, nil) == 1 else { throw lost() }
        try drainResults()
    }

    /// Ends the COPY with an error, so the server discards it (the transaction then rolls back).
    package consuming func abandon() {
        _ = PQputCopyEnd(connection.handle, "abandoned by settle")
        try? drainResults()
    }

    private mutating func flush() throws(PostgresError) {
        guard !buffer.isEmpty else { return }
        let sent = buffer.withUnsafeBufferPointer { bytes in
            bytes.withMemoryRebound(to: CChar.self) { chars in
                PQputCopyData(connection.handle, chars.baseAddress, Int32(chars.count))
            }
        }
        guard sent == 1 else { throw lost() }
        buffer.removeAll(keepingCapacity: true)
    }

    private func drainResults() throws(PostgresError) {
        var failure: PostgresError?
        while let result = PQgetResult(connection.handle) {
            defer { PQclear(result) }
            do { _ = try connection.rows(result, sql: statement) } catch { failure = failure ?? error }
        }
        if let failure { throw failure }
    }

    private func lost() -> PostgresError {
        let message = PostgresConnection.trimmed(PQerrorMessage(connection.handle))
        return PostgresError(sqlstate: nil, message: message, sql: statement)
    }

    /// One value in COPY's text format.
    static func encode(_ value: LedgerValue, into buffer: inout [UInt8]) {
        switch value {
        case .null:
            buffer.append(UInt8(ascii: "\\"))
            buffer.append(UInt8(ascii: "N"))
        case let .integer(n):
            buffer.append(contentsOf: String(n).utf8)
        case let .text(text):
            for byte in text.utf8 {
                switch byte {
                case 0: return
                case UInt8(ascii: "\\"): buffer.append(UInt8(ascii: "\\")); buffer.append(UInt8(ascii: "\\"))
                case UInt8(ascii: "\t"): buffer.append(UInt8(ascii: "\\")); buffer.append(UInt8(ascii: "t"))
                case UInt8(ascii: "\n"): buffer.append(UInt8(ascii: "\\")); buffer.append(UInt8(ascii: "n"))
                case UInt8(ascii: "\r"): buffer.append(UInt8(ascii: "\\")); buffer.append(UInt8(ascii: "r"))
                default: buffer.append(byte)
                }
            }
        }
    }
}
