import Foundation
import SettleBase

/// `settle web-passwd NAME`: reads a password (asked twice without echo at a terminal, else
/// the first line of standard input) and prints the line for `web.users_file`. The password
/// never goes in argv (where `ps` shows it) or anywhere else.
enum WebPasswdCommand {
    static let spec = ArgumentSpec(command: "web-passwd", options: [], positionals: 1...1)

    static let help = """
    Usage: settle web-passwd NAME [< password]

    Reads a password and prints NAME:HASH, a line for the file web.users_file names. At a
    terminal it asks twice, without echo (different entries: exit 64, nothing printed); from a
    pipe or file it reads the first line of standard input. The hash is PBKDF2-HMAC-SHA256 with 600000 iterations over a
    16-byte random salt (pbkdf2-sha256$600000$SALT$HASH): the same password hashes differently
    each time. NAME: letters, digits and . _ @ - (it is shown in orders' histories).

      printf '%s\\n' "$PASSWORD" | settle web-passwd alice >> /etc/settle/credentials/web-users
    """

    static func run(_ context: CommandContext) throws {
        let parsed = try ParsedArguments(context.arguments, spec: spec)
        if parsed.wantsHelp { return context.print(help) }
        let name = parsed.positionals[0]
        guard WebUsers.isName(name) else {
            throw UsageError(command: "web-passwd", message: "NAME must be 1 to 64 letters, digits or . _ @ -, got '\(name)'")
        }
        let password: String
        if TerminalPassword.isTerminal {
            switch TerminalPassword.ask("Password for \(name): ", again: "Again, to be sure: ") {
            case let .entered(typed): password = typed
            case .differ: throw CommandFailure(.usage, "passwords differ; nothing was printed")
            case .ended: password = ""
            }
        } else {
            let input = String(decoding: FileHandle.standardInput.readDataToEndOfFile(), as: UTF8.self)
            password = String(input.split(separator: "\n", maxSplits: 1, omittingEmptySubsequences: false).first ?? "")
                .trimmingCharacters(in: CharacterSet(charactersIn: "\r"))
        }
        guard !password.isEmpty else {
            throw CommandFailure(.dataError, "no password on standard input (printf '%s\\n' \"$PASSWORD\" | settle web-passwd \(name))")
        }
        context.print("\(name):\(WebPasswordHash.make(password).text)")
    }
}
