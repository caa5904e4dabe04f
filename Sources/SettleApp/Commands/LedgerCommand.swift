import Foundation
import SettleBase
import SettleModel
import SettleConfig
import SettleLedger

/// `settle ledger copy --from sqlite:PATH --to postgresql://...`: the way from one host's SQLite
/// ledger to a PostgreSQL ledger several hosts share.
enum LedgerCommand {
    static let spec = ArgumentSpec(command: "ledger", options: [
        .init(name: "--from", takesValue: true),
        .init(name: "--to", takesValue: true),
        .init(name: "--password-file", takesValue: true),
    ], positionals: 1...1)

    static var help: String { """
    Usage: settle ledger copy --from sqlite:PATH --to postgresql://USER@HOST/DB [--password-file FILE]

    \(StoreNames.wrap("Copies an SQLite ledger (orders of every store with their refund marks, receipts, history, grants, "
        + "each store's breaker; \(StoreNames.phrases("ledger").joined(separator: "; ")) into a PostgreSQL ledger that holds no orders yet, "
        + "migrating it first, all in one transaction, then checks that each table holds as many rows as the source. Stop "
        + "settle run first. Then point \"ledger\" in the configuration at the PostgreSQL URL. Needs no configuration."))
    """
    }

    static func run(_ context: CommandContext) throws {
        let parsed = try ParsedArguments(context.arguments, spec: spec)
        if parsed.wantsHelp { return context.print(help) }
        guard parsed.positionals[0] == "copy" else {
            throw UsageError(command: "ledger", message: "unknown action '\(parsed.positionals[0])' (settle ledger copy ...)")
        }
        guard let from = parsed.value("--from"), from.hasPrefix("sqlite:"), from.count > 7 else {
            throw UsageError(command: "ledger", message: "--from sqlite:PATH is required")
        }
        guard let to = parsed.value("--to"), PostgresLedgerConfiguration.isPostgresURL(to) else {
            throw UsageError(command: "ledger", message: "--to postgresql://... is required")
        }
        var password: Secret? = nil
        if let file = parsed.value("--password-file") {
            do { password = try SecretFile(key: "--password-file", path: file).read() } catch { throw CommandFailure.from(error) }
        }
        do {
            let destination = try PostgresLedger(url: to, password: password, time: context.time, connections: 1)
            let progress = CopyProgress.onTerminal(context)
            defer { progress?.end() }
            let report = try LedgerCopy.copy(fromSQLite: String(from.dropFirst(7)), to: destination,
                                             progress: progress.map { line in { line.update(table: $0, rows: $1) } })
            progress?.end()
            for (table, rows) in report.counts {
                context.print("\(table): \(Plural.count(rows, "row")) copied, counts match")
            }
            context.print("copied \(from) to \(PostgresLedger.redacted(to))")
        } catch {
            throw CommandFailure.from(error)
        }
    }
}
