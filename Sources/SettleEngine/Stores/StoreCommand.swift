import SettleBase
import SettleModel
import SettleConfig

/// A command a store adds to `settle` (the App Store's `link`): listed, completed and documented
/// with the core's, run with what it needs and nothing of the CLI's own types.
package struct StoreCommand: Sendable {
    package var name: String
    /// Its line in `settle help`.
    package var summary: String
    package var help: String
    /// Its options, each taking a value.
    package var options: [String]
    /// Runs it; throws `InputFailure` for a usage mistake (64) or bad input (65), and lets the
    /// ledger's and configuration's errors through (the CLI gives each its exit code).
    package var run: @Sendable (StoreCommandInput) throws -> Void

    package init(name: String, summary: String, help: String, options: [String],
                 run: @escaping @Sendable (StoreCommandInput) throws -> Void) {
        (self.name, self.summary, self.help, self.options, self.run) = (name, summary, help, options, run)
    }
}

/// What a store's command is given: its options' values, the environment (who runs it), the
/// clock, where to print, and the configuration, read on first use.
package struct StoreCommandInput {
    package var values: [String: String]
    package var environment: [String: String]
    package var time: any TimeSource
    package var print: (String) -> Void
    package var printError: (String) -> Void
    package var configuration: () throws -> Configuration
    /// Reads a file (`-`: standard input) as text, as `enqueue` reads a proof.
    package var read: (_ path: String, _ what: String, _ keepingInnerSpace: Bool) throws -> String

    package init(values: [String: String], environment: [String: String], time: any TimeSource,
                 print: @escaping (String) -> Void, printError: @escaping (String) -> Void,
                 configuration: @escaping () throws -> Configuration,
                 read: @escaping (String, String, Bool) throws -> String) {
        (self.values, self.environment, self.time) = (values, environment, time)
        (self.print, self.printError, self.configuration, self.read) = (print, printError, configuration, read)
    }
}

extension StoreModule {
    package static var commands: [StoreCommand] { [] }

    package static func tokenToSet(assigning order: Order, to user: String,
                                   _ configuration: Configuration) -> (token: String, notice: String)? { nil }
}
