import Foundation
import SettleConfig
import SettleLedger

/// `settle migrate [--dry-run]`: brings the ledger's schema to this settle's version (an SQLite
/// ledger is backed up first), or with `--dry-run` says what it would do and changes nothing.
enum MigrateCommand {
    static let spec = ArgumentSpec(command: "migrate", options: [.init(name: "--dry-run", takesValue: false)])

    static let help = """
    Usage: settle migrate [--dry-run] [--config PATH]

    Brings the ledger's schema up to this settle's version (settle run and settle reconcile do
    the same at start). An existing SQLite ledger is first copied to <ledger>.schema-<N>.backup,
    so going back to the previous settle means restoring that file. A PostgreSQL ledger is
    migrated one version per transaction under an advisory lock, so hosts starting together
    never race; back it up with pg_dump first. Other commands never migrate: they ask you to
    run this one. --dry-run prints the current and target versions and changes nothing.
    """

    static func run(_ context: CommandContext) throws {
        let parsed = try ParsedArguments(context.arguments, spec: spec)
        if parsed.wantsHelp { return context.print(help) }
        let configuration = try context.loadConfiguration(parsed)
        do {
            if configuration.postgresLedger != nil {
                try migratePostgres(configuration, context, dryRun: parsed.has("--dry-run"))
                return
            }
            let before = FileManager.default.fileExists(atPath: configuration.ledgerPath)
                ? try SQLiteLedger(readOnlyPath: configuration.ledgerPath, time: context.time).schemaVersion() : 0
            let target = LedgerSchema.migrations.count
            if parsed.has("--dry-run") {
                context.print(plan(configuration.ledgerPath, before: before, target: target))
                return
            }
            let ledger = try SQLiteLedger(path: configuration.ledgerPath, time: context.time)
            let after = try ledger.schemaVersion()
            if before == after {
                context.print("ledger \(configuration.ledgerPath) is at schema \(after): nothing to do")
            } else if before == 0 {
                context.print("created ledger \(configuration.ledgerPath) at schema \(after)")
            } else {
                context.print("migrated ledger \(configuration.ledgerPath) from schema \(before) to \(after); "
                              + "the previous one is in \(configuration.ledgerPath).schema-\(before).backup")
            }
        } catch {
            throw CommandFailure.from(error)
        }
    }

    private static func migratePostgres(_ configuration: Configuration, _ context: CommandContext, dryRun: Bool) throws(LedgerError) {
        let location = configuration.ledgerLocation
        let target = PostgresLedgerSchema.migrations.count
        let before = try PostgresLedger.inspectSchemaVersion(configuration)
        if dryRun {
            context.print(plan(location, before: before, target: target))
            return
        }
        let after = try configuration.openLedger(.migrating, time: context.time).schemaVersion()
        context.print(before == after ? "ledger \(location) is at schema \(after): nothing to do"
                                      : "migrated ledger \(location) from schema \(before) to \(after)")
    }

    /// What `--dry-run` says.
    static func plan(_ location: String, before: Int, target: Int) -> String {
        if before > target { return "ledger \(location) is at schema \(before), newer than this settle (\(target)): upgrade settle" }
        if before == target { return "ledger \(location) is at schema \(before): nothing to do" }
        let steps = ((before + 1)...target).map(String.init).joined(separator: ", ")
        return "ledger \(location) is at schema \(before); settle migrate would apply migration\(target - before == 1 ? "" : "s") \(steps) "
            + "to reach schema \(target) (dry run: nothing changed)"
    }
}
