import Foundation
import SettleBase
import SettleModel
import SettleLedger

/// The audit log as people and programs read it (`settle audit`, the console's `/audit` and
/// `/api/audit`): one line of text or one JSON object an entry, with the same fields.
enum AuditView {
    /// A table, in the order given (newest first as the ledger reads it).
    static func text(_ entries: [AuditEntry]) -> String {
        guard !entries.isEmpty else { return "no audit entries" }
        let header = ["time", "actor", "channel", "role", "action", "subject", "outcome", "source", "detail"]
        let rows = entries.map { e in
            [Timestamp.rfc3339(unixSeconds: e.at), e.actor, e.channel.rawValue, e.role?.rawValue ?? "-", e.action,
             e.subject, e.outcome.rawValue, e.source, e.detail.isEmpty ? "-" : e.detail]
        }
        var widths = header.map(\.count)
        for row in rows {
            for (c, cell) in row.enumerated() where c < header.count - 1 { widths[c] = max(widths[c], cell.count) }
        }
        // The last column (the note) is not padded: it may be long.
        func line(_ cells: [String]) -> String {
            cells.enumerated().map { c, cell in
                c == cells.count - 1 ? cell : cell.padding(toLength: widths[c], withPad: " ", startingAt: 0)
            }.joined(separator: "  ")
        }
        return ([line(header)] + rows.map(line)).joined(separator: "\n")
    }

    static func json(_ e: AuditEntry) -> JSONValue {
        .object([("id", .number(e.id)), ("at", .string(Timestamp.rfc3339(unixSeconds: e.at))),
                 ("at_unix", .number(e.at)), ("actor", .string(e.actor)), ("channel", .string(e.channel.rawValue)),
                 ("role", .string(e.role?.rawValue)), ("action", .string(e.action)), ("subject", .string(e.subject)),
                 ("detail", .string(e.detail)), ("source", .string(e.source)),
                 ("outcome", .string(e.outcome.rawValue))])
    }

    /// JSON lines, oldest first (so a later export appends after an earlier one), one object a line.
    static func jsonLines(_ newestFirst: [AuditEntry]) -> String {
        newestFirst.reversed().map { json($0).serialized() }.joined(separator: "\n")
    }

    /// `--since`/`?since=`: Unix seconds, an RFC 3339 time (`2026-12-05T10:00:00Z`), a date
    /// (`2026-12-05`, midnight UTC), or an age back from `now` (`90m`, `24h`, `7d`); nil when none.
    static func since(_ text: String, now: Int64) -> Int64? {
        let t = text.trimmingCharacters(in: .whitespaces)
        if let seconds = Int64(t), seconds >= 0 { return seconds }
        if let unit = t.last, let amount = Int64(t.dropLast()), amount >= 0, amount <= 100_000 {
            switch unit {
            case "s": return now - amount
            case "m": return now - amount * 60
            case "h": return now - amount * 3600
            case "d": return now - amount * 86400
            default: break
            }
        }
        let formatter = ISO8601DateFormatter()
        if let date = formatter.date(from: t) { return Int64(date.timeIntervalSince1970) }
        formatter.formatOptions = [.withFullDate]
        if let date = formatter.date(from: t) { return Int64(date.timeIntervalSince1970) }
        return nil
    }

    /// What `--since` accepts, for errors and help.
    static let sinceForms = "Unix seconds, 2026-12-05T10:00:00Z, 2026-12-05, or an age such as 90m, 24h, 7d"
}
