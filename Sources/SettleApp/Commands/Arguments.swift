
/// A hand-written argument parser that behaves like a mature CLI: `--name value` and
/// `--name=value`, `--` ends options, unknown options and stray arguments are usage errors.
struct ArgumentSpec {
    struct Option {
        var name: String
        var takesValue: Bool
        var repeatable = false
    }

    var command: String
    var options: [Option]
    /// How many positional arguments are allowed, and whether at least one is required.
    var positionals: ClosedRange<Int> = 0...0

    /// Options every command takes; `-c` is `--config`.
    static let common = [Option(name: "--config", takesValue: true)]
    static let aliases = ["-c": "--config"]
}

/// A wrong call: printed with a one-line hint, exit 64.
struct UsageError: Error {
    var command: String
    var message: String

    var text: String { "settle\(command.isEmpty ? "" : " " + command): \(message)\nRun 'settle\(command.isEmpty ? "" : " " + command) --help' for usage." }
}

struct ParsedArguments {
    var values: [String: [String]] = [:]
    var flags: Set<String> = []
    var positionals: [String] = []
    var wantsHelp = false

    func value(_ name: String) -> String? { values[name]?.last }
    func all(_ name: String) -> [String] { values[name] ?? [] }
    func has(_ name: String) -> Bool { flags.contains(name) }

    init(_ arguments: [String], spec: ArgumentSpec) throws(UsageError) {
        let options = spec.options + ArgumentSpec.common
        var index = 0
        var onlyPositionals = false
        while index < arguments.count {
            let argument = arguments[index]
            index += 1
            if onlyPositionals || !argument.hasPrefix("-") || argument == "-" {
                positionals.append(argument)
                continue
            }
            if argument == "--" { onlyPositionals = true; continue }
            if argument == "--help" || argument == "-h" { wantsHelp = true; continue }
            var name = ArgumentSpec.aliases[argument] ?? argument
            var inline: String? = nil
            if let equals = argument.firstIndex(of: "="), argument.hasPrefix("--") {
                name = String(argument[..<equals])
                inline = String(argument[argument.index(after: equals)...])
            }
            guard let option = options.first(where: { $0.name == name }) else {
                throw UsageError(command: spec.command, message: "unknown option '\(name)'")
            }
            if option.takesValue {
                let value: String
                if let inline {
                    value = inline
                } else {
                    guard index < arguments.count else {
                        throw UsageError(command: spec.command, message: "option '\(name)' needs a value")
                    }
                    value = arguments[index]
                    index += 1
                }
                if values[name] != nil && !option.repeatable {
                    throw UsageError(command: spec.command, message: "option '\(name)' given more than once")
                }
                values[name, default: []].append(value)
            } else {
                guard inline == nil else { throw UsageError(command: spec.command, message: "option '\(name)' takes no value") }
                flags.insert(name)
            }
        }
        guard wantsHelp || spec.positionals.contains(positionals.count) else {
            if positionals.count > spec.positionals.upperBound {
                let extra = positionals[spec.positionals.upperBound]
                throw UsageError(command: spec.command, message: "unexpected argument '\(extra)'")
            }
            throw UsageError(command: spec.command, message: "missing argument")
        }
    }
}
