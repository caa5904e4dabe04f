import SettleModel
import SettleBase
import SettleLedger

/// `settle backup DEST`: a consistent copy of the live ledger.
enum BackupCommand {
    static let spec = ArgumentSpec(command: "backup", options: [], positionals: 1...1)

    static let help = """
    Usage: settle backup DEST [--config PATH]

    Copies the ledger to DEST while settle keeps running (SQLite VACUUM INTO: one consistent
    snapshot, no WAL file to forget), fsyncs it, and checks the copy as verify-backup does.
    DEST must not exist. Never cp a live ledger: the copy can miss committed orders.
    """

    static func run(_ context: CommandContext) throws {
        let parsed = try ParsedArguments(context.arguments, spec: spec)
        if parsed.wantsHelp { return context.print(help) }
        let destination = parsed.positionals[0]
        let configuration = try context.loadConfiguration(parsed)
        if configuration.postgresLedger != nil {
            throw CommandFailure(.config, "it copies an SQLite ledger only; back a PostgreSQL ledger up with pg_dump "
                                 + "(or your database's own backups)")
        }
        do {
            let ledger = try SQLiteLedger(readOnlyPath: configuration.ledgerPath, time: context.time)
            try ledger.backup(to: destination)
            let check = try SQLiteLedger.verifyBackup(path: destination)
            context.print("backed up \(configuration.ledgerPath) to \(destination): " + VerifyBackupCommand.describe(check))
        } catch {
            throw CommandFailure.from(error)
        }
    }
}

/// `settle verify-backup FILE`: is this a whole settle ledger a restore can use?
enum VerifyBackupCommand {
    static let spec = ArgumentSpec(command: "verify-backup", options: [], positionals: 1...1)

    static let help = """
    Usage: settle verify-backup FILE

    Opens FILE read-only and checks that it is a whole settle ledger: SQLite's integrity check,
    a schema version this settle reads, the orders, grants and history tables. Prints what it
    holds. Exit 0 when it is usable, 65 when it is not. Needs no configuration.
    """

    static func run(_ context: CommandContext) throws {
        let parsed = try ParsedArguments(context.arguments, spec: spec)
        if parsed.wantsHelp { return context.print(help) }
        let path = parsed.positionals[0]
        do {
            context.print("\(path): " + describe(try SQLiteLedger.verifyBackup(path: path)))
        } catch let error as LedgerError {
            if case .invalid = error { throw CommandFailure(.dataError, "not a usable backup: \(error)") }
            throw CommandFailure.from(error)
        }
    }

    static func describe(_ check: BackupCheck) -> String {
        let orders = check.counts.values.reduce(0, +)
        let states = OrderState.allCases.compactMap { s in check.counts[s].flatMap { $0 > 0 ? "\($0) \(s.rawValue)" : nil } }
        return "OK, schema \(check.schemaVersion), \(Plural.count(orders, "order"))"
            + (states.isEmpty ? "" : " (\(states.joined(separator: ", ")))")
            + ", \(Plural.count(check.grants, "grant")), \(Plural.count(check.historyRows, "history row"))"
            + ", integrity ok"
    }
}
