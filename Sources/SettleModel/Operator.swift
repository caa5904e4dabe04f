import Foundation
import SettleBase
#if canImport(Glibc)
import Glibc
#endif

/// Who took a support action, and through what: "alice via web", "root via cli".
///
/// It goes into the order's history with the action (`retried`, `assigned`, `resolved_…`,
/// `transfer_requested`, `redeliver_requested`), so a person reading `settle status ORDER`
/// sees who did it. The name is the shell's user for the CLI and the signed-in user for the
/// web console; it is never a secret.
package struct Operator: Sendable, Equatable {
    /// Where the action came from.
    package enum Channel: String, Sendable { case cli, web }

    package var name: String
    package var channel: Channel
    /// The console role the person acted with (nil at the shell, where the Unix account decides).
    package var role: OperatorRole?
    /// Where the request came from, for the audit log: the web client's address (the forwarded
    /// one behind a trusted proxy); nil means "local" (the shell).
    package var source: String?

    /// `name` loses its control characters (a user name from the environment or a users file
    /// could carry them into a history line); so does `source`.
    package init(name: String, channel: Channel, role: OperatorRole? = nil, source: String? = nil) {
        let clean = String(String.UnicodeScalarView(name.unicodeScalars.filter { !PrintableText.isControl($0) }))
        self.name = clean.isEmpty ? "unknown" : String(clean.prefix(128))
        self.channel = channel
        self.role = role
        self.source = source.map { text in
            String(String.UnicodeScalarView(text.unicodeScalars.filter { !PrintableText.isControl($0) }).prefix(128))
        }
    }

    /// Where the action came from as the audit log records it: the client's address, or "local".
    package var origin: String { source.flatMap { $0.isEmpty ? nil : $0 } ?? "local" }

    /// "alice via web"
    package var label: String { "\(name) via \(channel.rawValue)" }

    /// A history row's detail saying who: "by alice via web: DETAIL".
    package func attributed(_ detail: String) -> String { "by \(label): \(detail)" }

    /// `detail`, attributed to `person` when one is named (the history of an action taken
    /// before settle named operators, or by a caller that names none, is `detail` alone).
    package static func attributed(_ detail: String, to person: Operator?) -> String {
        person?.attributed(detail) ?? detail
    }

    /// The person at the shell: SUDO_USER (who ran `sudo settle …`), else USER, else LOGNAME,
    /// else the uid's name (getpwuid), else "uid N"; channel `.cli`. Control characters stripped.
    package static func commandLine(environment: [String: String]) -> Operator {
        for key in ["SUDO_USER", "USER", "LOGNAME"] {
            if let value = environment[key], !stripped(value).isEmpty { return Operator(name: value, channel: .cli) }
        }
        let uid = getuid()
        if let entry = getpwuid(uid), let pointer = entry.pointee.pw_name {
            let name = String(cString: pointer)
            if !stripped(name).isEmpty { return Operator(name: name, channel: .cli) }
        }
        return Operator(name: "uid \(uid)", channel: .cli)
    }

    private static func stripped(_ text: String) -> String {
        String(String.UnicodeScalarView(text.unicodeScalars.filter { !PrintableText.isControl($0) && $0 != " " }))
    }
}
