import SettleModel
import SettleLedger

/// `settle audit [--since T] [--user NAME] [--limit N] [--json]`: who did what to which order,
/// through the shell or the console, and what the console refused (issue 36). Read-only.
enum AuditCommand {
    static let spec = ArgumentSpec(command: "audit", options: [
        .init(name: "--since", takesValue: true), .init(name: "--user", takesValue: true),
        .init(name: "--limit", takesValue: true), .init(name: "--json", takesValue: false),
    ])

    static let help = """
    Usage: settle audit [--since T] [--user NAME] [--limit N] [--json]

    Prints the audit log, newest first: every retry, assign, resolve, transfer and redelivery
    (from the shell or the web console), every console sign-in, and every console request
    refused for its role or its password, with who, through which channel (cli or web), with
    which role, from which address ("local" for the shell) and the note. Read-only.

      --since T    only entries at or after T: \(AuditView.sinceForms)
      --user NAME  only entries by NAME (the shell's user, or the console user)
      --limit N    at most N entries, the newest (default 100, at most 10000)
      --json       JSON lines instead, one object an entry, OLDEST first, for export:
                   id, at, at_unix, actor, channel, role, action, subject, detail, source, outcome
    """

    static func run(_ context: CommandContext) throws {
        let parsed = try ParsedArguments(context.arguments, spec: spec)
        if parsed.wantsHelp { return context.print(help) }
        var limit = 100
        if let text = parsed.value("--limit") {
            guard let n = Int(text), (1...10_000).contains(n) else {
                throw UsageError(command: "audit", message: "--limit needs a number from 1 to 10000, got '\(text)'")
            }
            limit = n
        }
        let since = try parsed.value("--since").map { (text) throws(UsageError) -> Int64 in
            guard let value = AuditView.since(text, now: context.time.unixSeconds) else {
                throw UsageError(command: "audit", message: "--since takes \(AuditView.sinceForms), got '\(text)'")
            }
            return value
        }
        let configuration = try context.loadConfiguration(parsed)
        let entries: [AuditEntry]
        do {
            let ledger = try configuration.openLedger(.readOnly, time: context.time)
            entries = try ledger.auditEntries(since: since, limit: limit, actor: parsed.value("--user"))
        } catch {
            throw CommandFailure.from(error)
        }
        if parsed.has("--json") {
            if !entries.isEmpty { context.print(AuditView.jsonLines(entries)) }
        } else {
            context.print(AuditView.text(entries))
        }
    }
}
