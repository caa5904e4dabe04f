import Foundation
import Synchronization

/// One line per event on stderr: time, level, event and key=value fields. When stderr is the
/// journal (`$JOURNAL_STREAM` names the device and inode of fd 2, as systemd documents in
/// systemd.exec(5)) each line is `<N>event fields`: journald reads the priority from the
/// prefix and stamps its own time, so neither is printed twice. Callers never pass secrets;
/// values are quoted when they need it.
package final class Log: Sendable {
    package enum Level: String, Sendable, CaseIterable, Comparable {
        case debug, info, warning, error

        package static func < (a: Level, b: Level) -> Bool { a.rank < b.rank }
        private var rank: Int { Level.allCases.firstIndex(of: self) ?? 0 }

        package var syslogPriority: Int {
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
    private let minimum = Mutex(Level.info)

    package init(environment: [String: String] = ProcessInfo.processInfo.environment, time: any TimeSource = SystemTimeSource(),
                sink: (@Sendable (String) -> Void)? = nil) {
        self.journal = Log.isJournal(environment["JOURNAL_STREAM"], descriptor: 2)
        self.time = time
        self.sink = sink ?? { line in StandardStream.error.write(line) }
    }

    /// A log that writes nothing, for library users that log elsewhere.
    package static let silent = Log(environment: [:], sink: { _ in })

    /// The least important level written (`log_level`); set again on reload.
    package var minimumLevel: Level {
        get { minimum.withLock { $0 } }
        set { minimum.withLock { $0 = newValue } }
    }

    /// Whether `value` ("<device>:<inode>") names what `descriptor` is open on: a child that
    /// inherited the variable but writes to a pipe or file must not speak journal.
    package static func isJournal(_ value: String?, descriptor: Int32) -> Bool {
        guard let parts = value?.split(separator: ":"), parts.count == 2,
              let device = UInt64(parts[0]), let inode = UInt64(parts[1]) else { return false }
        var info = stat()
        guard fstat(descriptor, &info) == 0 else { return false }
        return UInt64(info.st_dev) == device && UInt64(info.st_ino) == inode
    }

    package func log(_ level: Level, _ event: String, _ fields: KeyValuePairs<String, Any?> = [:]) {
        log(level, event, pairs: fields.map { ($0.key, $0.value) })
    }

    /// A line whose fields are made at run time (a store task's report); nil values are left out.
    package func log(_ level: Level, _ event: String, pairs fields: [(String, Any?)]) {
        guard level >= minimumLevel else { return }
        // Written as bytes into one buffer: appending a dozen pieces to a String, each value
        // through `String(describing:)`, was 20 K instructions a line, two lines an order.
        var line: [UInt8] = []
        line.reserveCapacity(256)
        if journal {
            line += "<\(level.syslogPriority)>".utf8
        } else {
            line += Timestamp.rfc3339(unixSeconds: time.unixSeconds).utf8
            line.append(UInt8(ascii: " "))
            line += level.rawValue.utf8
            line.append(UInt8(ascii: " "))
        }
        line += event.utf8
        for (key, value) in fields {
            guard let value else { continue }
            line.append(UInt8(ascii: " "))
            line += key.utf8
            line.append(UInt8(ascii: "="))
            Log.appendQuoted(Log.text(of: value), to: &line)
        }
        line.append(UInt8(ascii: "\n"))
        let text = String(decoding: line, as: UTF8.self)
        lock.withLock { _ in sink(text) }
    }

    /// A field's text: what `String(describing:)` makes of it, the common kinds without its
    /// dynamic lookup.
    static func text(of value: Any) -> String {
        switch value {
        case let text as String: return text
        case let number as Int: return String(number)
        case let number as Int64: return String(number)
        case let number as Int32: return String(number)
        default: return String(describing: value)
        }
    }

    /// `quote(value)` appended: plain ASCII with nothing to quote goes in as it is.
    static func appendQuoted(_ value: String, to line: inout [UInt8]) {
        var plain = !value.isEmpty
        for byte in value.utf8 where byte <= 0x20 || byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "=") || byte >= 0x7F {
            plain = false
            break
        }
        if plain { line += value.utf8 } else { line += quote(value).utf8 }
    }

    package func debug(_ event: String, _ fields: KeyValuePairs<String, Any?> = [:]) { log(.debug, event, fields) }
    package func info(_ event: String, _ fields: KeyValuePairs<String, Any?> = [:]) { log(.info, event, fields) }
    package func warning(_ event: String, _ fields: KeyValuePairs<String, Any?> = [:]) { log(.warning, event, fields) }
    package func error(_ event: String, _ fields: KeyValuePairs<String, Any?> = [:]) { log(.error, event, fields) }

    /// A value quoted when it holds a space, quote, `=` or any control character, which is
    /// then shown escaped: hook output or an order id can never start a forged log line.
    package static func quote(_ value: String) -> String {
        let needsQuotes = value.isEmpty || value.unicodeScalars.contains {
            $0 == " " || $0 == "\"" || $0 == "=" || PrintableText.isControl($0)
        }
        guard needsQuotes else { return value }
        let escaped = value.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "\"", with: "\\\"")
        return "\"\(PrintableText.escape(escaped))\""
    }
}
