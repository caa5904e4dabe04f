import SettleBase
import SettleModel
import SettleLedger

/// The customer's part of an answer to Apple's refund request (Send Consumption Information v2):
/// the developer's preference for this customer and the order's usage evidence, each only when
/// the ledger holds it and the customer consented (`RefundEvidence`). Apple takes an answer only
/// with `customerConsented: true`, so a customer who refused consent gets no answer at all:
/// sending `true` would be false, and an answer without it is refused. With consent unknown,
/// the operator's global statement (`consumption.customer_consented`) answers as before.
/// https://developer.apple.com/documentation/appstoreserverapi/consumptionrequest
extension NotificationInbox {
    /// What settle does with one refund request, given what it knows of the customer.
    package enum ConsumptionAnswer: Sendable, Equatable {
        /// Send `body`; `note` says for the history what of the customer's was used, and what was left out.
        case send(body: JSONValue, note: String)
        /// Send nothing, for this reason.
        case withhold(String)

        /// Why nothing is sent; nil when an answer is.
        package var withheldBecause: String? {
            if case let .withhold(why) = self { return why }
            return nil
        }
    }

    /// The answer for a delivered purchase of `orderId`: the global body, with the customer's
    /// preference in place of the global one and, with consent, the consumption percentage.
    package func consumptionAnswer(orderId: String?) throws(LedgerError) -> ConsumptionAnswer {
        let evidence = try ledger.refundEvidence(orderId: orderId)
        if evidence.consent == .refused {
            return .withhold(
                evidence.summary + "; Apple takes consumption information only from a customer who consented")
        }
        var global = consumption.refundPreference  // replaced by the customer's own, where Apple has one
        var notes = [evidence.summary]
        let subscription =
            try orderId.flatMap { id throws(LedgerError) in try ledger.orderRecord(id) }?.order.verified?.expiresDateMs
            != nil
        // Apple: no percentage for an auto-renewable subscription (it computes it itself).
        let percentage = subscription ? nil : evidence.usage?.consumptionMilliunits
        if subscription, evidence.usage?.consumptionMilliunits != nil {
            notes.append("consumptionPercentage left out: Apple computes it for a subscription")
        }
        switch evidence.preference {
        case .decline?: global = .decline
        case .grantFull?: global = .grantFull
        case .grantProrated? where subscription || (percentage ?? 0) > 0: global = .grantProrated
        case .grantProrated?:
            notes.append("GRANT_PRORATED needs a consumption percentage above 0; the global preference is sent")
        case .neutral?:
            global = nil
            notes.append("Apple has no neutral preference: refundPreference left out")
        case nil: break
        }
        if global == .grantProrated, percentage == 0 {
            // Apple refuses GRANT_PRORATED with a consumption percentage of 0.
            global = nil
            notes.append("GRANT_PRORATED with nothing used cannot be sent: refundPreference left out")
        }
        var members: [(String, JSONValue)] = [
            ("customerConsented", .bool(true)),
            ("deliveryStatus", .string("DELIVERED")),
            ("sampleContentProvided", .bool(consumption.sampleContentProvided)),
        ]
        if let percentage { members.append(("consumptionPercentage", .number(String(percentage)))) }
        if let global { members.append(("refundPreference", .string(global.rawValue))) }
        if let usage = evidence.usage,
            usage.playTimeSeconds != nil || usage.ipAddress != nil || usage.location != nil
                || !usage.events.isEmpty
        {
            notes.append(
                "play time, usage events, IP and location are not fields of Apple's ConsumptionRequest v2: not sent")
        }
        return .send(body: .object(members), note: notes.filter { !$0.isEmpty }.joined(separator: "; "))
    }
}
