import SettleConfig
import SettleLedger
import SettleEngine

extension SettleCommand.Subcommand {
    /// A store's command as the CLI runs it: its options parsed, its input given, its failures
    /// turned into exit codes like the core's commands'.
    init(store command: StoreCommand) {
        let spec = ArgumentSpec(command: command.name, options: command.options.map { .init(name: $0, takesValue: true) })
        self.init(name: command.name, summary: command.summary, help: command.help, options: spec.options) { context in
            let parsed = try ParsedArguments(context.arguments, spec: spec)
            if parsed.wantsHelp { return context.print(command.help) }
            var values: [String: String] = [:]
            for option in command.options { values[option] = parsed.value(option) }
            let input = StoreCommandInput(
                values: values, environment: context.environment, time: context.time,
                print: { context.print($0) }, printError: { context.printError($0) },
                configuration: { try context.loadConfiguration(parsed) },
                read: { path, what, keep in try EnqueueCommand.read(path, what: what, keepingInnerSpace: keep) })
            do {
                try command.run(input)
            } catch let failure as InputFailure {
                switch failure.kind {
                case .usage: throw UsageError(command: command.name, message: failure.message)
                case .data: throw CommandFailure(.dataError, failure.message)
                }
            } catch let error as LedgerError {
                throw CommandFailure.from(error)
            } catch let error as ConfigError {
                throw CommandFailure.from(error)
            }
        }
    }
}
