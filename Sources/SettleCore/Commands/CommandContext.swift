import Foundation

/// What a command runs with: its arguments, the environment and where its output goes.
/// The executable passes the real ones; tests and the demo pass their own.
public struct CommandContext: Sendable {
    public var arguments: [String]
    public var environment: [String: String]
    public var standardOutput: @Sendable (String) -> Void
    public var standardError: @Sendable (String) -> Void
    public var time: any TimeSource

    public init(arguments: [String], environment: [String: String],
                standardOutput: @escaping @Sendable (String) -> Void = { FileHandle.standardOutput.write(Data($0.utf8)) },
                standardError: @escaping @Sendable (String) -> Void = { FileHandle.standardError.write(Data($0.utf8)) },
                time: any TimeSource = SystemTimeSource()) {
        self.arguments = arguments
        self.environment = environment
        self.standardOutput = standardOutput
        self.standardError = standardError
        self.time = time
    }

    func print(_ text: String) { standardOutput(text.hasSuffix("\n") ? text : text + "\n") }
    func printError(_ text: String) { standardError(text.hasSuffix("\n") ? text : text + "\n") }

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
