/// The range of times settle believes from outside: a store's milliseconds (a push's
/// `eventTimeMillis`, a purchase time), or a time in a ledger row a backend may have written.
///
/// Every in-app purchase settle can see was made after 2000 and the stores' own answers speak of
/// years, not centuries; a time outside is the sender's fault, and arithmetic on it (a push at
/// Int64.min minus an hour) traps. Such a time is refused, naming its field, before anything
/// is computed from it.
package enum PlausibleTime {
    /// 2000-01-01T00:00:00Z.
    package static let earliestSeconds: Int64 = 946_684_800
    /// 2200-01-01T00:00:00Z.
    package static let latestSeconds: Int64 = 7_258_118_400

    package static func contains(seconds: Int64) -> Bool { (earliestSeconds...latestSeconds).contains(seconds) }

    package static func contains(milliseconds: Int64) -> Bool {
        (earliestSeconds * 1000...latestSeconds * 1000).contains(milliseconds)
    }

    /// Why `value` (of the field `field`) is refused, or nil when it is a usable time.
    package static func refusal(milliseconds value: Int64, field: String) -> String? {
        contains(milliseconds: value) ? nil : "\(field) \(value) is not a time between \(range)"
    }

    /// Why `value` (of the field `field`) is refused, or nil when it is a usable time.
    package static func refusal(seconds value: Int64, field: String) -> String? {
        contains(seconds: value) ? nil : "\(field) \(value) is not a time between \(range)"
    }

    private static var range: String {
        Timestamp.rfc3339(unixSeconds: earliestSeconds) + " and " + Timestamp.rfc3339(unixSeconds: latestSeconds)
    }
}
