import Foundation

/// SQLite codes `x IN ('a', 'b', 'c')` with more than two constants as a lookup in an ephemeral
/// b-tree, built afresh each time a statement runs: one for every INSERT into `history` and
/// every UPDATE of an order's state, a fresh page zeroed each time (issue 38's profile: `memset`
/// was the largest self cost of a pass). The same test written `x = 'a' OR x = 'b' OR x = 'c'`
/// is a few comparisons. Both say the same thing for every value, NULL included (NULL passes a
/// CHECK either way), so the stored CREATE TABLE text can be edited in place without a rebuild.
enum InListChecks {
    /// Edits every table there is when it runs whose stored text holds such a list (the core's;
    /// a store module's named migrations run after the core's and keep theirs: none is written
    /// once an order).
    static func rewrite(_ database: SQLiteDatabase) throws {
        let tables = try database.query("SELECT name, sql FROM sqlite_schema WHERE type = 'table' AND sql LIKE '% IN (%'")
        let edits = tables.compactMap { row -> (name: String, sql: String)? in
            guard let name = row.string("name"), let sql = row.string("sql") else { return nil }
            let rewritten = expanded(sql)
            return rewritten == sql ? nil : (name, rewritten)
        }
        guard !edits.isEmpty else { return }
        let version = try database.query("PRAGMA schema_version").first?.int("schema_version") ?? 0
        try database.execute("PRAGMA writable_schema = ON")
        for edit in edits {
            try database.query("UPDATE sqlite_schema SET sql = ?1 WHERE type = 'table' AND name = ?2",
                               [.text(edit.sql), .text(edit.name)])
        }
        try database.execute("PRAGMA schema_version = \(version + 1)")
        try database.execute("PRAGMA writable_schema = OFF")
    }

    /// `column IN ('a', 'b', 'c')` → `(column = 'a' OR column = 'b' OR column = 'c')` for each
    /// list of more than two string constants (SQLite compares two or fewer without a b-tree);
    /// `NOT IN` and every other text are left as they are.
    static func expanded(_ sql: String) -> String {
        let pattern = #"\b([A-Za-z_][A-Za-z0-9_]*)\s+IN\s*\(((?:\s*'[^']*'\s*,)+\s*'[^']*'\s*)\)"#
        guard let regex = try? NSRegularExpression(pattern: pattern) else { return sql }
        let text = sql as NSString
        var result = ""
        var cursor = 0
        for match in regex.matches(in: sql, range: NSRange(location: 0, length: text.length)) {
            let column = text.substring(with: match.range(at: 1))
            let values = constants(text.substring(with: match.range(at: 2)))
            guard column.uppercased() != "NOT", values.count > 2 else { continue }
            result += text.substring(with: NSRange(location: cursor, length: match.range.location - cursor))
            result += "(" + values.map { "\(column) = \($0)" }.joined(separator: " OR ") + ")"
            cursor = match.range.location + match.range.length
        }
        return result + text.substring(from: cursor)
    }

    /// The quoted constants of an `IN` list, each with its quotes.
    private static func constants(_ list: String) -> [String] {
        guard let quoted = try? NSRegularExpression(pattern: "'[^']*'") else { return [] }
        let text = list as NSString
        return quoted.matches(in: list, range: NSRange(location: 0, length: text.length)).map { text.substring(with: $0.range) }
    }
}
