import Foundation

/// `settle migrate`: backs the ledger up, then brings its schema to this settle's version.
enum MigrateCommand {
    static let spec = ArgumentSpec(command: "migrate", options: [])

    static let help = """
    Usage: settle migrate [--config PATH]

    Brings the ledger's schema up to this settle's version (settle run and settle reconcile do
    the same at start). An existing ledger is first copied to <ledger>.schema-<N>.backup, so
    going back to the previous settle means restoring that file. Other commands never migrate:
    they ask you to run this one.
    """

    static func run(_ context: CommandContext) throws {
        let parsed = try ParsedArguments(context.arguments, spec: spec)
        if parsed.wantsHelp { return context.print(help) }
        let configuration = try context.loadConfiguration(parsed)
        do {
            let before = FileManager.default.fileExists(atPath: configuration.ledgerPath)
                ? try Ledger(readOnlyPath: configuration.ledgerPath, time: context.time).schemaVersion() : 0
            let ledger = try Ledger(path: configuration.ledgerPath, time: context.time)
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
}
