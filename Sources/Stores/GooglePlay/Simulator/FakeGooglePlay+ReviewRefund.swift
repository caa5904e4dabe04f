import Foundation
import SettleBase
import SettleConfig

/// What the fake Google checks of an `orders.reviewrefund` body, as Google documents the request:
/// its fields and no other (Google refuses an unknown name), a refund preference of Google's
/// values, `consumptionPercentageMilliunits` from 0 to 100,000, at most 1,000 usage events, each
/// with only `ConsumptionUsageEvent`'s fields (an RFC 3339 `consumptionTime`, a description of at
/// most 5,000 characters, an `ipAddress`, a `location` with only `CoarseLocation`'s fields).
/// https://developers.google.com/android-publisher/api-ref/rest/v3/orders/reviewrefund
enum FakeReviewRefund {
    static let fields: Set = [
        "pendingRefundToken", "sampleContentProvided", "refundPreference", "consumptionPercentageMilliunits",
        "consumptionUsageEvents",
    ]
    static let eventFields: Set = [
        "obfuscatedAccountId", "obfuscatedProfileId", "consumptionTime", "consumptionItemDescription",
        "ipAddress", "location",
    ]
    static let locationFields: Set = ["regionCode", "administrativeArea", "locality", "sublocality"]

    /// Google's message for a body it would refuse; nil when it takes it.
    static func problem(_ body: JSONValue) -> String? {
        guard case let .object(members) = body else { return "Invalid JSON payload received." }
        if let unknown = members.first(where: { !fields.contains($0.0) }) {
            return "Invalid JSON payload received. Unknown name \"\(unknown.0)\""
        }
        guard body["pendingRefundToken"]?.looseString != nil, case .bool? = body["sampleContentProvided"] else {
            return "Request contains an invalid argument."
        }
        guard case let .string(preference)? = body["refundPreference"],
            ["DECLINE", "APPROVE", "NEUTRAL"].contains(preference)
        else {
            return "Invalid value at 'refund_preference'."
        }
        if let value = body["consumptionPercentageMilliunits"] {
            guard case let .number(text) = value, let number = Int64(text), (0...100_000).contains(number) else {
                return "consumptionPercentageMilliunits must be between 0 and 100000."
            }
        }
        guard let events = body["consumptionUsageEvents"] else { return nil }
        guard case let .array(items) = events, items.count <= 1000 else {
            return "Lists with over 1000 items will be rejected."
        }
        for item in items {
            guard case let .object(eventMembers) = item else { return "Invalid value at 'consumption_usage_events'." }
            if let unknown = eventMembers.first(where: { !eventFields.contains($0.0) }) {
                return "Invalid JSON payload received. Unknown name \"\(unknown.0)\" at 'consumption_usage_events'"
            }
            if let time = item["consumptionTime"],
                time.looseString.flatMap(ConfigurationDecoder.rfc3339Milliseconds) == nil
            {
                return "Invalid value at 'consumption_usage_events.consumption_time'."
            }
            if let text = item["consumptionItemDescription"]?.looseString, text.count > 5000 {
                return "consumptionItemDescription is longer than 5000 characters."
            }
            if let location = item["location"] {
                guard case let .object(place) = location, place.allSatisfy({ locationFields.contains($0.0) }) else {
                    return "Invalid JSON payload received. Unknown name at 'consumption_usage_events.location'"
                }
            }
        }
        return nil
    }
}
