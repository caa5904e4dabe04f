import Foundation
import Synchronization

/// Where settle reads the time. Injected everywhere so tests and the demo never sleep.
package protocol TimeSource: Sendable {
    var now: Date { get }
}

extension TimeSource {
    /// Whole seconds since the epoch, the ledger's unit.
    package var unixSeconds: Int64 { Int64(now.timeIntervalSince1970.rounded(.down)) }
}

/// The real wall clock.
package struct SystemTimeSource: TimeSource {
    package init() {}
    package var now: Date { Date() }
}

/// A clock that moves only when told to: for tests and the demo's simulated hours.
package final class ManualTimeSource: TimeSource {
    private let current: Mutex<Date>

    package init(_ start: Date) { current = Mutex(start) }

    package var now: Date { current.withLock { $0 } }

    package func advance(by seconds: TimeInterval) {
        current.withLock { $0 += seconds }
    }
}

/// RFC 3339 timestamps in UTC, the format of every time settle prints.
package enum Timestamp {
    package static func rfc3339(unixSeconds: Int64) -> String {
        var t = time_t(unixSeconds)
        var parts = tm()
        gmtime_r(&t, &parts)
        // Built by hand: `String(format:)` went through CoreFoundation's formatter for every
        // log line and hook payload (issue 11), and joining a dozen small strings still cost
        // 10 K instructions (1.5 % of a pass): written as bytes. Same text as
        // "%04d-%02d-%02dT%02d:%02d:%02dZ".
        var text: [UInt8] = []
        text.reserveCapacity(24)
        appendPadded(Int(parts.tm_year) + 1900, 4, then: "-", to: &text)
        appendPadded(Int(parts.tm_mon) + 1, 2, then: "-", to: &text)
        appendPadded(Int(parts.tm_mday), 2, then: "T", to: &text)
        appendPadded(Int(parts.tm_hour), 2, then: ":", to: &text)
        appendPadded(Int(parts.tm_min), 2, then: ":", to: &text)
        appendPadded(Int(parts.tm_sec), 2, then: "Z", to: &text)
        return String(decoding: text, as: UTF8.self)
    }

    /// `padded(value, width)` and then `separator`, as bytes appended to `text`.
    static func appendPadded(_ value: Int, _ width: Int, then separator: Unicode.Scalar, to text: inout [UInt8]) {
        var digits = 1
        var rest = value.magnitude
        while rest >= 10 {
            rest /= 10
            digits += 1
        }
        if value < 0 { text.append(UInt8(ascii: "-")) }
        text += repeatElement(UInt8(ascii: "0"), count: max(0, width - (value < 0 ? 1 : 0) - digits))
        let end = text.count + digits
        text += repeatElement(UInt8(ascii: "0"), count: digits)
        rest = value.magnitude
        for index in stride(from: end - 1, through: end - digits, by: -1) {
            text[index] = UInt8(ascii: "0") + UInt8(rest % 10)
            rest /= 10
        }
        text.append(UInt8(ascii: separator))
    }

    /// `value` as `%0<width>d` prints it: zero-padded to `width` characters, the sign counted.
    package static func padded(_ value: Int, _ width: Int) -> String {
        let digits = String(value.magnitude)
        let sign = value < 0 ? "-" : ""
        return sign + String(repeating: "0", count: max(0, width - sign.count - digits.count)) + digits
    }

    package static func rfc3339(milliseconds: Int64) -> String {
        // Floor division without `milliseconds - 999`, which overflows for a date Apple sent as Int64.min.
        rfc3339(unixSeconds: milliseconds / 1000 - (milliseconds % 1000 < 0 ? 1 : 0))
    }

    /// A UTC time with its age, as support reads it: "2026-11-29T10:04:05Z (3h12m ago)".
    package static func relative(_ unixSeconds: Int64, now: Int64) -> String {
        // Saturating: the time may be a ledger row's, and a backend may have written Int64.min there.
        let delta = now.saturatingSubtracting(unixSeconds)
        let words = delta == 0 ? "now"
            : delta > 0 ? "\(age(delta)) ago" : "in \(age(unixSeconds.saturatingSubtracting(now)))"
        return rfc3339(unixSeconds: unixSeconds) + " (\(words))"
    }

    /// A duration as "45s", "12m5s", "3h12m" or "2d4h".
    package static func age(_ seconds: Int64) -> String {
        if seconds < 60 { return "\(seconds)s" }
        if seconds < 3600 { return "\(seconds / 60)m\(seconds % 60)s" }
        if seconds < 86400 { return "\(seconds / 3600)h\((seconds % 3600) / 60)m" }
        return "\(seconds / 86400)d\((seconds % 86400) / 3600)h"
    }
}
