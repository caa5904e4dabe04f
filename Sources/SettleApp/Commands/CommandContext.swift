import Foundation
import SettleBase
import SettleConfig
import SettleEngine

/// What a command runs with: its arguments, the environment and where its output goes.
/// The executable passes the real ones; tests and the demo pass their own.
package struct CommandContext: Sendable {
    package var arguments: [String]
    package var environment: [String: String]
    package var standardOutput: @Sendable (String) -> Void
    package var standardError: @Sendable (String) -> Void
    package var time: any TimeSource
    /// The stores the command knows (the application's; a test adds its own).
    package var modules: [any StoreModule.Type]

    package init(arguments: [String], environment: [String: String],
                standardOutput: @escaping @Sendable (String) -> Void = { StandardStream.output.write($0) },
                standardError: @escaping @Sendable (String) -> Void = { StandardStream.error.write($0) },
                time: any TimeSource = SystemTimeSource(), modules: [any StoreModule.Type] = StoreModules.all) {
        self.modules = modules
        self.arguments = arguments
        self.environment = environment
        self.standardOutput = standardOutput
        self.standardError = standardError
        self.time = time
    }

    /// Text for people: whatever outside text it carries, its control characters are shown, not obeyed.
    func print(_ text: String) { standardOutput(Self.line(text)) }
    func printError(_ text: String) { standardError(Self.line(text)) }

    private static func line(_ text: String) -> String {
        let printable = PrintableText.escape(text, keepingLineBreaks: true)
        return printable.hasSuffix("\n") ? printable : printable + "\n"
    }

    /// `--config`, else `$SETTLE_CONFIG`, else /etc/settle/settle.json.
    func configPath(_ parsed: ParsedArguments) -> String {
        parsed.value("--config") ?? Configuration.defaultPath(environment: environment)
    }

    func loadConfiguration(_ parsed: ParsedArguments) throws(CommandFailure) -> Configuration {
        do {
            return try Configuration.load(path: configPath(parsed), environment: environment)
        } catch {
            throw .from(error)
        }
    }

    var log: Log { Log(environment: environment, time: time, sink: standardError) }
}
