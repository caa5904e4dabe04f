import Foundation
import SettleBase
import SettleSimulator

/// Google's side of the simulators' rate limit: which Play Developer API quota bucket a
/// request counts against, and what Google answers over the quota or in an outage.
extension SimulatedRateLimit {
    /// The Play Developer API quota bucket of a request path, nil for the OAuth token endpoint
    /// and anything else Google does not count against the app's buckets.
    package static func googleGroup(path: String, packageName: String) -> String? {
        let application = "/androidpublisher/v3/applications/\(packageName)/"
        guard path.hasPrefix(application) else { return nil }
        let rest = path.dropFirst(application.count)
        if rest.hasPrefix("orders/") { return "orders" }
        guard rest.hasPrefix("purchases/") else { return nil }
        let kind = rest.dropFirst("purchases/".count).prefix { $0 != "/" && $0 != "?" }
        switch kind {
        case "products", "productsv2": return "one_time_purchases"
        case "subscriptions", "subscriptionsv2": return "subscriptions"
        case "voidedpurchases": return "voided_purchases"
        default: return nil
        }
    }

    /// Google's answer over a bucket's quota: 429 RESOURCE_EXHAUSTED with reason
    /// `rateLimitExceeded` (Google sends no Retry-After). In an outage: 503 backendError.
    package static func googleRefusal(_ decision: Decision, group: String) -> HTTPServerResponse? {
        switch decision {
        case .granted:
            return nil
        case .limited:
            let message = "Quota exceeded for quota metric 'Queries' and limit 'Queries per minute' of service "
                + "'androidpublisher.googleapis.com' (bucket \(group))."
            let error = JSONValue.object([
                ("code", .number(429)), ("message", .string(message)),
                ("errors", .array([.object([("message", .string(message)), ("domain", .string("global")),
                                            ("reason", .string("rateLimitExceeded"))])])),
                ("status", .string("RESOURCE_EXHAUSTED")),
            ])
            return HTTPServerResponse(status: 429, headers: [HTTPHeader("Content-Type", "application/json")],
                                      body: JSONValue.object([("error", error)]).data)
        case .outage:
            return FakeGooglePlay.error(503, reason: "backendError", "The service is currently unavailable.")
        }
    }
}
