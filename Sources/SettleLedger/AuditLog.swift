import SettleBase
import SettleModel

/// One line of the audit log (issue 36): who did what to which order, through which channel,
/// with which role, from where, and whether it was allowed. Support actions write theirs in the
/// action's own transaction (an action is never done unlogged, nor logged undone); sign-ins and
/// refusals, where nothing else is written, in one of their own.
///
/// `detail` is the person's note and the action's arguments (a user id, a resolution); never a
/// password, a token, a proof or a header: callers pass only those fields.
package struct AuditEntry: Sendable, Equatable {
    package enum Outcome: String, Sendable { case ok, refused }

    /// Increasing; the console pages by it (`?before=ID`).
    package var id: Int64 = 0
    package var at: Int64
    package var actor: String
    package var channel: Operator.Channel
    package var role: OperatorRole?
    package var action: String
    /// The order id, the user signing in, or "-".
    package var subject: String
    package var detail: String
    /// The web client's address, or "local" for the shell.
    package var source: String
    package var outcome: Outcome

    package init(_ person: Operator, action: String, subject: String = "-", at: Int64 = 0, detail: String = "",
                 outcome: Outcome = .ok) {
        self.at = at
        actor = person.name
        channel = person.channel
        role = person.role
        self.action = action
        self.subject = Self.printable(subject.isEmpty ? "-" : subject, limit: 200)
        self.detail = Self.printable(detail, limit: Self.detailLimit)
        source = person.origin
        self.outcome = outcome
    }

    init(row: any LedgerRow) {
        id = row.int("id") ?? 0
        at = row.int("at") ?? 0
        actor = row.string("actor") ?? "?"
        channel = row.string("channel").flatMap(Operator.Channel.init(rawValue:)) ?? .cli
        role = row.string("role").flatMap(OperatorRole.init(rawValue:))
        action = row.string("action") ?? "?"
        subject = row.string("subject") ?? "-"
        detail = row.string("detail") ?? ""
        source = row.string("source") ?? "?"
        outcome = row.string("outcome").flatMap(Outcome.init(rawValue:)) ?? .refused
    }

    /// A note is an operator's text, kept whole up to this many characters.
    package static let detailLimit = 1000

    /// Control characters (a newline in a note) become spaces: one entry is one line wherever it is printed.
    static func printable(_ text: String, limit: Int) -> String {
        let scalars = text.unicodeScalars.map { PrintableText.isControl($0) ? " " : $0 }
        return String(String.UnicodeScalarView(scalars).prefix(limit))
    }
}

extension LedgerTransaction {
    /// Appends `entry` inside the caller's transaction.
    package func audit(_ entry: AuditEntry) throws {
        try query("""
            INSERT INTO audit_log(at, actor, channel, role, action, subject, detail, source, outcome)
            VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
            """, [.integer(entry.at), .text(entry.actor), .text(entry.channel.rawValue), .from(entry.role?.rawValue),
                  .text(entry.action), .text(entry.subject), .text(entry.detail), .text(entry.source),
                  .text(entry.outcome.rawValue)])
    }
}

extension TransactionalLedger {
    /// Whether the schema keeps the audit log (a ledger not yet migrated has none; its actions are
    /// not audited, and reads find nothing).
    package func knowsAuditLog() throws(LedgerError) -> Bool {
        try schemaReached(isShared ? PostgresLedgerSchema.auditLogVersion : LedgerSchema.auditLogVersion)
    }

    /// The audit step of an action `person` takes: nil when nobody is named or the schema has no
    /// log. Asked before the action's transaction; the step runs inside it.
    func auditor(_ person: Operator?) throws(LedgerError) -> ((any LedgerTransaction, AuditEntry) throws -> Void)? {
        guard person != nil, try knowsAuditLog() else { return nil }
        return { db, entry in try db.audit(entry) }
    }

    /// Records an entry on its own (a sign-in, a refusal): nothing else is written with it. Its
    /// time is the ledger's clock's.
    package func recordAudit(_ entry: AuditEntry) throws(LedgerError) {
        guard try knowsAuditLog() else { return }
        var stamped = entry
        stamped.at = time.unixSeconds
        try writing { db in try db.audit(stamped) }
    }

    /// Entries newest first: at or after `since` (Unix seconds), before the entry `before` (an id,
    /// for paging), by `actor` when named; at most `limit` (1...10,000).
    package func auditEntries(since: Int64? = nil, limit: Int = 100, actor: String? = nil,
                              before: Int64? = nil) throws(LedgerError) -> [AuditEntry] {
        guard try knowsAuditLog() else { return [] }
        var conditions: [String] = []
        var values: [LedgerValue] = []
        if let since { conditions.append("at >= ?"); values.append(.integer(since)) }
        if let actor { conditions.append("actor = ?"); values.append(.text(actor)) }
        if let before { conditions.append("id < ?"); values.append(.integer(before)) }
        let filter = conditions.isEmpty ? "" : " WHERE " + conditions.joined(separator: " AND ")
        values.append(.integer(Int64(min(max(limit, 1), 10_000))))
        return try reading { db in
            try db.query("SELECT * FROM audit_log\(filter) ORDER BY id DESC LIMIT ?", values).map(AuditEntry.init(row:))
        }
    }
}
