import SettleBase
import SettleModel
import SettleLedger

/// The customer's part of an answer to Google's refund review (`orders.reviewrefund`): the
/// developer's preference for this customer in place of the global `refund_review.refund_preference`
/// (unless the customer refused consent), and, only with consent given, the order's usage
/// evidence in Google's own fields: `consumptionPercentageMilliunits`, and one
/// `consumptionUsageEvents` entry per usage event the backend recorded, with the event's
/// `ipAddress` and coarse `location` when known. Play time has no field of its own at Google: it
/// is said in the delivery event's `consumptionItemDescription`. What is unknown is left out.
/// https://developers.google.com/android-publisher/api-ref/rest/v3/orders/reviewrefund
extension PlayNotificationInbox {
    /// Google's value for settle's preference. Google has no partial refund: a prorated preference
    /// is sent as NEUTRAL (the developer does not oppose a refund, and does not ask for a full one).
    static func googlePreference(_ preference: RefundPreference) -> String {
        switch preference {
        case .decline: "DECLINE"
        case .grantFull: "APPROVE"
        case .grantProrated, .neutral: "NEUTRAL"
        }
    }

    /// `body` (the global answer, as the ledger shows the order delivered) with the customer's part;
    /// and a note for the history of what was used and left out (empty when nothing is known).
    func withCustomerEvidence(
        _ body: JSONValue, orderId: String?
    ) throws(LedgerError) -> (body: JSONValue, note: String) {
        guard case var .object(members) = body else { return (body, "") }
        let evidence = try ledger.refundEvidence(orderId: orderId)
        var notes = [evidence.summary]
        if let preference = evidence.preference {
            members.removeAll { $0.0 == "refundPreference" }
            members.insert(("refundPreference", .string(Self.googlePreference(preference))), at: 0)
            if preference == .grantProrated { notes.append("Google has no prorated refund: NEUTRAL sent") }
        }
        guard let usage = evidence.usage else {
            return (.object(members), notes.filter { !$0.isEmpty }.joined(separator: "; "))
        }
        if let percentage = usage.consumptionMilliunits {
            members.append(("consumptionPercentageMilliunits", .number(String(percentage))))
        }
        var events: [JSONValue] = []
        if let index = members.firstIndex(where: { $0.0 == "consumptionUsageEvents" }),
            case let .array(known) = members[index].1
        {
            events = known
            members.remove(at: index)
        }
        let account = events.first?["obfuscatedAccountId"]?.looseString
        if let seconds = usage.playTimeSeconds, case var .object(delivery)? = events.first,
            let at = delivery.firstIndex(where: { $0.0 == "consumptionItemDescription" }),
            let said = delivery[at].1.looseString
        {
            delivery[at].1 = .string(said + "; the backend counts \(OrderUsage.duration(seconds)) of use in total")
            events[0] = .object(delivery)
        }
        for event in usage.events {
            var fields: [(String, JSONValue)] = [("consumptionTime", .string(Timestamp.rfc3339(unixSeconds: event.at)))]
            if let account { fields.append(("obfuscatedAccountId", .string(account))) }
            fields.append(("consumptionItemDescription", .string(event.description)))
            if let ip = usage.ipAddress { fields.append(("ipAddress", .string(ip))) }
            if let location = usage.location {
                var place: [(String, JSONValue)] = [("regionCode", .string(location.regionCode))]
                if let area = location.administrativeArea { place.append(("administrativeArea", .string(area))) }
                if let locality = location.locality { place.append(("locality", .string(locality))) }
                fields.append(("location", .object(place)))
            }
            events.append(.object(fields))
        }
        if usage.events.isEmpty, usage.ipAddress != nil || usage.location != nil {
            notes.append("IP and location describe the backend's usage events, and none is recorded: not sent")
        }
        if !events.isEmpty { members.append(("consumptionUsageEvents", .array(events))) }
        return (.object(members), notes.filter { !$0.isEmpty }.joined(separator: "; "))
    }
}
