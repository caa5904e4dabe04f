import SettleBase

/// What the simulator checks of a Send Consumption Information v2 body, as Apple documents the
/// `ConsumptionRequest`: the five fields and no other, `customerConsented` true, a delivery status
/// and refund preference of Apple's values, a consumption percentage in milliunits (0...100,000;
/// 0 when not delivered; above 0 with GRANT_PRORATED). A body settle should never send is refused
/// with Apple's status and a message naming the field, so a test sees it.
/// https://developer.apple.com/documentation/appstoreserverapi/consumptionrequest
enum SimulatedConsumptionRequest {
    static let fields: Set = [
        "customerConsented", "deliveryStatus", "sampleContentProvided", "consumptionPercentage", "refundPreference",
    ]
    static let deliveryStatuses: Set = [
        "DELIVERED", "UNDELIVERED_QUALITY_ISSUE", "UNDELIVERED_WRONG_ITEM",
        "UNDELIVERED_SERVER_OUTAGE", "UNDELIVERED_OTHER",
    ]
    static let refundPreferences: Set = ["DECLINE", "GRANT_FULL", "GRANT_PRORATED"]

    /// Apple's error for `body`, nil when Apple would take it.
    static func problem(_ body: JSONValue?) -> (code: Int, message: String)? {
        guard let body, case let .object(members) = body else {
            return (4000000, "Invalid request: the body is not a JSON object.")
        }
        if let unknown = members.first(where: { !fields.contains($0.0) }) {
            return (4000000, "Invalid request: \(unknown.0) is not a field of ConsumptionRequest.")
        }
        guard case .bool(true)? = body["customerConsented"] else {
            return (
                4000035,
                "Invalid request. The customer consented field is invalid or doesn't indicate that the customer "
                    + "consented."
            )
        }
        guard case let .string(status)? = body["deliveryStatus"], deliveryStatuses.contains(status) else {
            return (4000036, "Invalid request. The delivery status field is invalid.")
        }
        guard case .bool? = body["sampleContentProvided"] else {
            return (4000041, "Invalid request. The sample content provided field is invalid.")
        }
        var percentage: Int64?
        if let value = body["consumptionPercentage"] {
            guard case let .number(text) = value, let number = Int64(text), (0...100_000).contains(number) else {
                return (4000000, "Invalid request: consumptionPercentage must be an integer from 0 to 100000.")
            }
            percentage = number
            if status != "DELIVERED", number != 0 { return (4000000, "UndeliveredConsumptionPercentageNonZeroError") }
        }
        if let value = body["refundPreference"] {
            guard case let .string(text) = value, refundPreferences.contains(text) else {
                return (4000000, "Invalid request: refundPreference is not one of DECLINE, GRANT_FULL, GRANT_PRORATED.")
            }
            if text == "GRANT_PRORATED", let percentage, percentage == 0 {
                return (4000000, "Invalid request: GRANT_PRORATED needs a consumptionPercentage above 0.")
            }
        }
        return nil
    }
}
