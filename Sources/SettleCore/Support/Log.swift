import Foundation
import Synchronization

/// One line per event on stderr: time, level, event and key=value fields. With
/// `$JOURNAL_STREAM` set each line starts with its `<N>` syslog priority so journald files it
/// at the right level. Callers never pass secrets; values are quoted when they need it.
public final class Log: Sendable {
    public enum Level: String, Sendable {
        case debug, info, warning, error

        var syslogPriority: Int {
            switch self {
            case .debug: return 7
            case .info: return 6
            case .warning: return 4
            case .error: return 3
            }
        }
    }

    private let sink: @Sendable (String) -> Void
    private let journal: Bool
    private let time: any TimeSource
    private let lock = Mutex(())

    public init(environment: [String: String] = ProcessInfo.processInfo.environment, time: any TimeSource = SystemTimeSource(),
                sink: (@Sendable (String) -> Void)? = nil) {
        self.journal = environment["JOURNAL_STREAM"].map { !$0.isEmpty } ?? false
        self.time = time
        self.sink = sink ?? { line in StandardStream.error.write(line) }
    }

    /// A log that writes nothing, for library users that log elsewhere.
    public static let silent = Log(environment: [:], sink: { _ in })

    public func log(_ level: Level, _ event: String, _ fields: KeyValuePairs<String, Any?> = [:]) {
        var line = journal ? "<\(level.syslogPriority)>" : ""
        line += Timestamp.rfc3339(unixSeconds: time.unixSeconds) + " " + level.rawValue + " " + event
        for (key, value) in fields {
            guard let value else { continue }
            line += " \(key)=\(Log.quote(String(describing: value)))"
        }
        lock.withLock { _ in sink(line + "\n") }
    }

    public func info(_ event: String, _ fields: KeyValuePairs<String, Any?> = [:]) { log(.info, event, fields) }
    public func warning(_ event: String, _ fields: KeyValuePairs<String, Any?> = [:]) { log(.warning, event, fields) }
    public func error(_ event: String, _ fields: KeyValuePairs<String, Any?> = [:]) { log(.error, event, fields) }

    /// A value quoted when it holds a space, quote, `=` or any control character, which is
    /// then shown escaped: hook output or an order id can never start a forged log line.
    static func quote(_ value: String) -> String {
        let needsQuotes = value.isEmpty || value.unicodeScalars.contains {
            $0 == " " || $0 == "\"" || $0 == "=" || PrintableText.isControl($0)
        }
        guard needsQuotes else { return value }
        let escaped = value.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "\"", with: "\\\"")
        return "\"\(PrintableText.escape(escaped))\""
    }
}
