import Foundation

/// Reads a `Retry-After` header: delta-seconds, an HTTP-date, or (as the App Store Server
/// API sends) epoch milliseconds. Returns seconds from `now`, never negative.
public enum RetryAfter {
    public static func seconds(_ header: String?, now: Date) -> Double? {
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
        guard let date = formatter.date(from: text) else { return nil }
        return max(0, date.timeIntervalSince(now))
    }
}
