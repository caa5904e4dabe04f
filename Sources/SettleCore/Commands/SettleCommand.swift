/// The root command: picks the subcommand, handles `--help` and `--version`, and turns
/// every failure into its exit code. The executable only calls `run`.
public enum SettleCommand {
    public static let version = "0.1.0"

    static let subcommands: [(name: String, summary: String)] = [
        ("run", "the daemon: reconcile due orders on a timer until SIGTERM"),
        ("reconcile", "one pass over every due order (or the named ones), then exit"),
        ("status", "show the ledger: counts, oldest undelivered order, orders and their history"),
        ("enqueue", "record a paid order and its proof of purchase"),
        ("retry", "put needs_attention or rejected orders back to pending"),
        ("assign", "give a purchase Apple reported and nobody claimed to its buyer"),
        ("check-config", "validate the configuration and print what was understood"),
        ("demo", "run settle against a local Apple simulator in a throwaway ledger"),
    ]

    static var help: String {
        var text = """
        settle \(version): finds App Store purchases that were paid but never delivered, re-verifies
        them with Apple, grants them through your delivery hook exactly once, and marks them finished.

        Usage: settle <command> [options]

        Commands:

        """
        for (name, summary) in subcommands {
            text += "  " + name.padding(toLength: 14, withPad: " ", startingAt: 0) + summary + "\n"
        }
        text += """

        Every command takes --config PATH (default: $SETTLE_CONFIG, else /etc/settle/settle.json) and --help.
        settle --version prints the version.
        """
        return text
    }

    /// Runs settle with `context.arguments` (without the program name) and returns the exit code.
    public static func run(_ context: CommandContext) -> Int32 {
        StandardStream.ignoreSIGPIPE()
        var arguments = context.arguments
        guard let first = arguments.first else {
            context.printError(UsageError(command: "", message: "missing command").text)
            return ExitCode.usage.rawValue
        }
        if first == "--help" || first == "-h" || first == "help" {
            context.print(help)
            return ExitCode.success.rawValue
        }
        if first == "--version" {
            context.print("settle \(version)")
            return ExitCode.success.rawValue
        }
        arguments.removeFirst()
        var sub = context
        sub.arguments = arguments
        do {
            switch first {
            case "run": try RunCommand.run(sub)
            case "reconcile": try ReconcileCommand.run(sub)
            case "status": try StatusCommand.run(sub)
            case "enqueue": try EnqueueCommand.run(sub)
            case "retry": try RetryCommand.run(sub)
            case "assign": try AssignCommand.run(sub)
            case "check-config": try CheckConfigCommand.run(sub)
            case "demo": try DemoCommand.run(sub)
            default:
                throw UsageError(command: "", message: first.hasPrefix("-") ? "unknown option '\(first)'" : "unknown command '\(first)'")
            }
            return ExitCode.success.rawValue
        } catch let error as UsageError {
            context.printError(error.text)
            return ExitCode.usage.rawValue
        } catch let failure as CommandFailure {
            context.printError("settle \(first): \(failure.message)")
            return failure.code.rawValue
        } catch let error as LedgerError {
            let failure = CommandFailure.from(error)
            context.printError("settle \(first): \(failure.message)")
            return failure.code.rawValue
        } catch let error as ConfigError {
            context.printError("settle \(first): \(error.message)")
            return ExitCode.config.rawValue
        } catch {
            context.printError("settle \(first): \(error)")
            return ExitCode.ioError.rawValue
        }
    }
}
