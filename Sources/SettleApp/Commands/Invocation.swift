
/// What a command line asks of the root command, with the global options moved to the
/// subcommand: `settle -c FILE status` and `settle status -c FILE` mean the same, as in git
/// and kubectl.
struct Invocation {
    enum Action: Equatable {
        case help(String?)
        case version
        case generateManual
        case generateCompletions(String)
        case command(String, [String])
    }

    var action: Action

    init(_ arguments: [String], commands: [String]) throws(UsageError) {
        var global: [String] = []
        var index = 0
        // Global options before the command: only the configuration takes a value.
        while index < arguments.count, arguments[index].hasPrefix("-"), arguments[index] != "-" {
            let argument = arguments[index]
            switch argument {
            case "-h", "--help":
                action = .help(nil)
                return
            case "-V", "--version":
                action = .version
                return
            case "--generate-manual":
                action = .generateManual
                return
            case "--generate-completion-script":
                guard index + 1 < arguments.count else {
                    throw UsageError(command: "", message: "option '\(argument)' needs a value (bash or zsh)")
                }
                action = .generateCompletions(arguments[index + 1])
                return
            case "-c", "--config":
                guard index + 1 < arguments.count else { throw UsageError(command: "", message: "option '\(argument)' needs a value") }
                global += [argument, arguments[index + 1]]
                index += 2
            default:
                guard argument.hasPrefix("--config=") else { throw UsageError(command: "", message: "unknown option '\(argument)'") }
                global.append(argument)
                index += 1
            }
        }
        // A bare `settle` shows what it can do, as swift-argument-parser CLIs do.
        guard index < arguments.count else {
            action = .help(nil)
            return
        }
        let name = arguments[index]
        let rest = Array(arguments[(index + 1)...])
        if name == "help" {
            guard rest.count <= 1 else { throw UsageError(command: "help", message: "unexpected argument '\(rest[1])'") }
            action = .help(rest.first)
            return
        }
        guard commands.contains(name) else { throw UsageError(command: "", message: "unknown command '\(name)'") }
        action = .command(name, rest + global)
    }
}
