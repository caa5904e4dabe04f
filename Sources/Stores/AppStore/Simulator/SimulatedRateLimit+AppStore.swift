import Foundation
import SettleBase
import SettleAppStore
import SettleSimulator

/// Apple's side of the simulators' rate limit: which Server API endpoint group a request
/// counts against, and what Apple answers over the limit or in an outage.
extension SimulatedRateLimit {
    /// The Server API endpoint group of a simulator path (`/production/inApps/...`), nil for
    /// what Apple publishes no limit for (verifyReceipt). Sandbox groups are their own buckets.
    package static func appleGroup(method: String, path: String) -> String? {
        for (prefix, suffix) in [("/production", ""), ("/sandbox", " (sandbox)")] where path.hasPrefix(prefix + "/inApps/") {
            return AppStoreRateGroups.group(method: method, path: String(path.dropFirst(prefix.count))) + suffix
        }
        return nil
    }

    /// Apple's 429: RateLimitExceededError, `Retry-After` the UNIX time in milliseconds of the
    /// next allowed request, `retryAfter` seconds after `now`.
    package static func appleRateLimited(retryAfter: Double, now: Date) -> HTTPServerResponse {
        var response = AppleSimulatorCore.apiError(429, 4290000, "Rate limit exceeded.")
        let next = ((now.timeIntervalSince1970 + retryAfter) * 1000).rounded(.up)
        response.headers.append(HTTPHeader("Retry-After", String(Int64(next))))
        return response
    }

    /// Apple's answer over the limit: 429 with RateLimitExceededError and `Retry-After` as
    /// Apple documents it, the UNIX time in milliseconds of the next allowed request. In an
    /// outage: 500 GeneralInternalRetryableError.
    package func appleRefusal(_ decision: Decision) -> HTTPServerResponse? {
        switch decision {
        case .granted:
            return nil
        case let .limited(retryAfter):
            return Self.appleRateLimited(retryAfter: retryAfter, now: time.now)
        case .outage:
            return AppleSimulatorCore.apiError(500, 5000001, "An unknown error occurred. Please try again.")
        }
    }
}
