import SettleBase
import SettleModel
import SettleConfig
import SettleLedger

/// The root command: picks the subcommand, handles help and version, and turns every failure
/// into its exit code. The executable only calls `run`.
package enum SettleCommand {
    /// A subcommand: its name, its one-line summary for `settle help`, its full help and what it does.
    struct Subcommand: Sendable {
        var name: String
        var summary: String
        var help: String
        var options: [ArgumentSpec.Option]
        var run: @Sendable (CommandContext) throws -> Void
    }

    /// The core's commands, with each store's own (`StoreModule.commands`) after `assign`.
    static let subcommands: [Subcommand] = {
        var list = coreSubcommands
        let at = (list.firstIndex { $0.name == "assign" } ?? list.count - 1) + 1
        list.insert(contentsOf: StoreModules.all.flatMap { module in module.commands.map(Subcommand.init(store:)) }, at: at)
        return list
    }()

    private static let coreSubcommands: [Subcommand] = [
        .init(name: "run", summary: "the daemon: reconcile due orders on a timer until SIGTERM",
              help: RunCommand.help, options: RunCommand.spec.options, run: RunCommand.run),
        .init(name: "reconcile", summary: "one pass over every due order (or the named ones), then exit",
              help: ReconcileCommand.help, options: ReconcileCommand.spec.options, run: ReconcileCommand.run),
        .init(name: "status", summary: "what happened to an order, a customer or the whole ledger",
              help: StatusCommand.help, options: StatusCommand.spec.options, run: StatusCommand.run),
        .init(name: "enqueue", summary: "record a paid order and its proof of purchase",
              help: EnqueueCommand.help, options: EnqueueCommand.spec.options, run: EnqueueCommand.run),
        .init(name: "retry", summary: "put needs_attention or rejected orders back to pending, with a fresh proof if given",
              help: RetryCommand.help, options: RetryCommand.spec.options, run: RetryCommand.run),
        .init(name: "assign", summary: "give an unclaimed purchase a store reported to its buyer",
              help: AssignCommand.help, options: AssignCommand.spec.options, run: AssignCommand.run),
        .init(name: "bind", summary: "store a user's account token with a token_unverifiable order, then verify it",
              help: BindCommand.help, options: BindCommand.spec.options, run: BindCommand.run),
        .init(name: "grant-recorded", summary: "record that your backend granted a transaction itself",
              help: GrantRecordedCommand.help, options: GrantRecordedCommand.spec.options, run: GrantRecordedCommand.run),
        .init(name: "resolve", summary: "close needs_attention or rejected orders by hand (granted_by_hand or wont_grant)",
              help: ResolveCommand.help, options: ResolveCommand.spec.options, run: ResolveCommand.run),
        .init(name: "transfer", summary: "move a granted purchase to another user (revoke from one, grant to the other)",
              help: TransferCommand.help, options: TransferCommand.spec.options, run: TransferCommand.run),
        .init(name: "redeliver", summary: "re-send an order's last grant or revoke to the hook under its original key",
              help: RedeliverCommand.help, options: RedeliverCommand.spec.options, run: RedeliverCommand.run),
        .init(name: "customer", summary: "record a customer's consent and refund preference, or an order's usage",
              help: CustomerCommand.help, options: CustomerCommand.spec.options, run: CustomerCommand.run),
        .init(name: "audit", summary: "who did what to which order (shell or console), and what the console refused",
              help: AuditCommand.help, options: AuditCommand.spec.options, run: AuditCommand.run),
        .init(name: "report", summary: "what settle recovered and clawed back, by currency, store and day",
              help: ReportCommand.help, options: ReportCommand.spec.options, run: ReportCommand.run),
        .init(name: "web", summary: "the support console in a browser: overview, search, each order's story (read-only by default)",
              help: WebCommand.help, options: WebCommand.spec.options, run: WebCommand.run),
        .init(name: "web-passwd", summary: "hash a console user's password read on standard input (a line for web.users_file)",
              help: WebPasswdCommand.help, options: WebPasswdCommand.spec.options, run: WebPasswdCommand.run),
        .init(name: "check-config", summary: "validate the configuration and print what was understood",
              help: CheckConfigCommand.help, options: CheckConfigCommand.spec.options, run: CheckConfigCommand.run),
        .init(name: "migrate", summary: "back up the ledger, then bring its schema up to date",
              help: MigrateCommand.help, options: MigrateCommand.spec.options, run: MigrateCommand.run),
        .init(name: "backup", summary: "copy the live ledger to a file, consistently (SQLite online backup)",
              help: BackupCommand.help, options: BackupCommand.spec.options, run: BackupCommand.run),
        .init(name: "verify-backup", summary: "check that a backup file is a whole, readable settle ledger",
              help: VerifyBackupCommand.help, options: VerifyBackupCommand.spec.options, run: VerifyBackupCommand.run),
        .init(name: "ledger", summary: "copy an SQLite ledger into PostgreSQL (settle ledger copy --from sqlite:PATH --to URL)",
              help: LedgerCommand.help, options: LedgerCommand.spec.options, run: LedgerCommand.run),
        .init(name: "simulator", summary: "local, scripted stand-ins for \(StoreNames.displayNames()), to test your hook against",
              help: SimulatorCommand.help, options: SimulatorCommand.spec.options, run: SimulatorCommand.run),
        .init(name: "demo", summary: "run settle against local stand-ins of \(StoreNames.displayNames()) in a throwaway ledger",
              help: DemoCommand.help, options: DemoCommand.spec.options, run: DemoCommand.run),
        .init(name: "help", summary: "show help for settle or one command (settle help COMMAND)",
              help: "Usage: settle help [COMMAND]\n\nShows the help of settle, or of COMMAND (the same as settle COMMAND --help).",
              options: [], run: { _ in }),
    ]

    static var help: String {
        let refunding = StoreNames.list(StoreRegistry.descriptors.filter { $0.deliveryNotice.refundWindowSeconds != nil }
            .map(\.displayName), "and")
        var text = """
        settle \(SettleVersion.number): finds \(StoreNames.displayNames()) purchases that were paid but never delivered,
        re-verifies them with \(StoreNames.owners()), grants them through your delivery hook exactly once, and
        marks them finished (telling a store that refunds what it was not told of first: \(refunding)).

        Usage: settle [--config PATH] <command> [options]

        Commands:

        """
        for command in subcommands {
            text += "  " + command.name.padding(toLength: 15, withPad: " ", startingAt: 0) + command.summary + "\n"
        }
        text += """

        Global options (before or after the command):
          -c, --config PATH  the configuration (default: $SETTLE_CONFIG, else /etc/settle/settle.json)
          -h, --help         show help (settle help COMMAND shows a command's)
          -V, --version      show the version, commit, ledger schema and library versions

        See settle(1) for the whole manual.
        """
        return text
    }

    /// Runs settle with `context.arguments` (without the program name) and returns the exit code.
    package static func run(_ context: CommandContext) -> Int32 {
        StandardStream.ignoreSIGPIPE()
        MallocArenas.bound()
        // The stores this run knows, before any configuration is read or ledger opened.
        context.modules.register()
        let invocation: Invocation
        do {
            invocation = try Invocation(context.arguments, commands: subcommands.map(\.name))
        } catch {
            context.printError(error.text)
            return ExitCode.usage.rawValue
        }
        switch invocation.action {
        case .help(nil):
            context.print(help)
            return ExitCode.success.rawValue
        case let .help(name?):
            guard let command = subcommands.first(where: { $0.name == name }) else {
                context.printError(UsageError(command: "", message: "unknown command '\(name)'").text)
                return ExitCode.usage.rawValue
            }
            context.print(command.help)
            return ExitCode.success.rawValue
        case .version:
            context.print(BuildInfo.versionText)
            return ExitCode.success.rawValue
        case .generateManual:
            context.print(Manual.roff(commands: subcommands, overview: help))
            return ExitCode.success.rawValue
        case let .generateCompletions(shell):
            guard let script = Completions.script(shell: shell, commands: subcommands) else {
                context.printError(UsageError(command: "", message: "no completions for shell '\(shell)' (bash or zsh)").text)
                return ExitCode.usage.rawValue
            }
            context.print(script)
            return ExitCode.success.rawValue
        case let .command(name, arguments):
            var sub = context
            sub.arguments = arguments
            return execute(name, sub)
        }
    }

    private static func execute(_ name: String, _ context: CommandContext) -> Int32 {
        do {
            guard let command = subcommands.first(where: { $0.name == name }) else {
                throw UsageError(command: "", message: "unknown command '\(name)'")
            }
            try command.run(context)
            return ExitCode.success.rawValue
        } catch let error as UsageError {
            context.printError(error.text)
            return ExitCode.usage.rawValue
        } catch let failure as CommandFailure {
            context.printError("settle \(name): \(failure.message)")
            return failure.code.rawValue
        } catch let error as LedgerError {
            let failure = CommandFailure.from(error)
            context.printError("settle \(name): \(failure.message)")
            return failure.code.rawValue
        } catch let error as ConfigError {
            context.printError("settle \(name): \(error.message)")
            return ExitCode.config.rawValue
        } catch {
            context.printError("settle \(name): \(error)")
            return ExitCode.ioError.rawValue
        }
    }
}
