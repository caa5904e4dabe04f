import Foundation

/// Reads a `Retry-After` header: delta-seconds, an HTTP-date, or (as the App Store Server
/// API sends) epoch milliseconds. Returns seconds from `now`, never negative, at most `longest`.
package enum RetryAfter {
    /// A day. Apple asks for seconds to minutes; anything longer (a header of `1e22`) is a
    /// fault of the sender, and believing it would park orders for ever or overflow the
    /// arithmetic that turns it into a time.
    package static let longest: Double = 86_400

    package static func seconds(_ header: String?, now: Date) -> Double? {
        parse(header, now: now).map { min(longest, $0) }
    }

    private static func parse(_ header: String?, now: Date) -> Double? {
        guard let text = header?.trimmingCharacters(in: .whitespaces), !text.isEmpty else { return nil }
        if let number = Double(text), number.isFinite, number >= 0 {
            // Anything this large is a point in time in epoch milliseconds, not a delay.
            if number > 1e11 { return max(0, number / 1000 - now.timeIntervalSince1970) }
            return number
        }
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "GMT")
        formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss zzz"
        guard let date = formatter.date(from: text), date.timeIntervalSince(now).isFinite else { return nil }
        return max(0, date.timeIntervalSince(now))
    }
}
