import Foundation
import SettleBase

extension Configuration {
    /// The App Store Server Notifications V2 endpoint and the Get Notification History catch-up
    /// (`notifications`); absent means settle neither listens nor asks Apple for history.
    package struct NotificationsConfiguration: Sendable, Equatable {
        /// `HOST:PORT` with a numeric host, behind the operator's TLS reverse proxy.
        package var listen: String
        package var path: String = "/apple/notifications/v2"
        package var limits = NotificationEndpoint.Limits()
        /// How often Get Notification History is asked for what arrived since the last point seen.
        package var historyIntervalSeconds: Double = 3600
        /// `backfill_since` (RFC 3339): where the first history catch-up starts reading; nil:
        /// at settle's first start. Purchases made before that first start are reported for a
        /// person (`backfilled_purchase`), never delivered.
        package var backfillSinceMs: Int64? = nil
    }
}

extension ConfigurationDecoder {
    package func decodeNotifications(_ object: ConfigObject) throws(ConfigError) -> Configuration.NotificationsConfiguration {
        var o = object
        var notifications = Configuration.NotificationsConfiguration(listen: try o.requireString("listen"))
        if let path = try o.string("path") {
            guard path.hasPrefix("/"), !path.contains("?") else { throw ConfigError("\(o.name("path")): \"\(path)\" must start with / and hold no query") }
            notifications.path = path
        }
        notifications.limits.maxBodyBytes = try o.integer("max_body_bytes", default: 64 * 1024, range: 1024...(1 << 20))
        notifications.limits.timeoutSeconds = try o.integer("timeout_seconds", default: 10, range: 1...300)
        notifications.limits.maxConnections = try o.integer("max_connections", default: 64, range: 1...10_000)
        if o.value("max_connections_per_client") != nil {
            let perClient = try o.integer("max_connections_per_client", default: 16, range: 1...10_000)
            guard perClient <= notifications.limits.maxConnections else {
                throw ConfigError("\(o.name("max_connections_per_client")): \(perClient) is over max_connections "
                                  + "(\(notifications.limits.maxConnections))")
            }
            notifications.limits.maxConnectionsPerClient = perClient
        }
        notifications.historyIntervalSeconds = try o.number("history_interval_seconds", default: 3600, range: 10...86_400)
        if let text = try o.string("backfill_since") {
            guard let ms = Self.rfc3339Milliseconds(text) else {
                throw ConfigError("\(o.name("backfill_since")): \"\(text)\" is not an RFC 3339 time (like 2026-01-31T00:00:00Z)")
            }
            notifications.backfillSinceMs = ms
        }
        try o.rejectUnknownKeys()
        return notifications
    }

    /// An RFC 3339 date-time with an offset (fractional seconds allowed) as Unix milliseconds.
    package static func rfc3339Milliseconds(_ text: String) -> Int64? {
        for options in [ISO8601DateFormatter.Options.withInternetDateTime, [.withInternetDateTime, .withFractionalSeconds]] {
            let formatter = ISO8601DateFormatter()
            formatter.formatOptions = options
            if let date = formatter.date(from: text) { return Int64(saturating: (date.timeIntervalSince1970 * 1000).rounded(.down)) }
        }
        return nil
    }
}
