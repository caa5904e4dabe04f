import SettleBase
import SettleModel
import SettleLedger

/// A customer's refund policy as `settle customer show`, `settle status --user`, `/users/U` and
/// `/api/users/U` tell it: consent, the developer's preference for them, and who set them when.
/// With no record, every store's global setting answers.
package struct CustomerPolicyView: Sendable {
    package var userId: String
    package var policy: CustomerPolicy?
    /// What the backend recorded of the use of each of their orders.
    package var usage: [OrderUsage] = []

    package static func read(_ ledger: any SettleLedger, userId: String) throws(LedgerError) -> CustomerPolicyView {
        CustomerPolicyView(userId: userId, policy: try ledger.customerPolicy(userId: userId),
                           usage: try ledger.orderUsages(userId: userId))
    }

    package var preferenceText: String {
        policy?.refundPreference?.rawValue ?? "none (each store's global setting answers)"
    }

    package var setText: String? {
        guard let policy else { return nil }
        return "\(policy.setBy.rawValue)" + (policy.setByName.map { " \($0)" } ?? "") + ", "
            + Timestamp.rfc3339(unixSeconds: policy.updatedAt)
    }

    package var text: String {
        var out: String
        if let policy {
            out = "customer \(userId) refund policy:\n  consent: \(policy.consentText)\n"
                + "  refund preference: \(preferenceText)\n"
            if let note = policy.note { out += "  note: \(note)\n" }
            if let setText { out += "  set by: \(setText)\n" }
            for problem in policy.problems { out += "  unusable: \(problem)\n" }
        } else {
            out = "customer \(userId): no refund policy recorded "
                + "(consent unknown; each store's global setting answers)\n"
        }
        for known in usage { out += "  usage of \(known.orderId): \(Self.usageLine(known))\n" }
        return String(out.dropLast())
    }

    /// "consumption 45.2 %, an IP address (hook, 2026-…)"; the IP itself is never shown.
    static func usageLine(_ usage: OrderUsage) -> String {
        "\(usage.summary) (\(usage.setBy.rawValue), \(Timestamp.rfc3339(unixSeconds: usage.updatedAt)))"
            + (usage.problems.isEmpty ? "" : "; unusable: " + usage.problems.joined(separator: "; "))
    }

    package var json: JSONValue {
        var members: [(String, JSONValue)] = [("user_id", .string(userId)), ("recorded", .bool(policy != nil))]
        if let policy {
            members += [
                ("consented", policy.consented.map(JSONValue.bool) ?? .null),
                ("consent_at", .string(policy.consentAt.map { Timestamp.rfc3339(unixSeconds: $0) })),
                ("consent_by", .string(policy.consentBy)),
                ("refund_preference", .string(policy.refundPreference?.rawValue)),
                ("note", .string(policy.note)),
                ("set_by", .string(policy.setBy.rawValue)), ("set_by_name", .string(policy.setByName)),
                ("updated_at", .string(Timestamp.rfc3339(unixSeconds: policy.updatedAt))),
                ("problems", .array(policy.problems.map { .string($0) })),
            ]
        }
        members.append(("order_usage", .array(usage.map { u in
            .object([
                ("order_id", .string(u.orderId)),
                ("consumption_milliunits", u.consumptionMilliunits.map { .number(String($0)) } ?? .null),
                ("play_time_seconds", u.playTimeSeconds.map { .number(String($0)) } ?? .null),
                ("events", .number(u.events.count)), ("ip_address_known", .bool(u.ipAddress != nil)),
                ("region_code", .string(u.location?.regionCode)), ("set_by", .string(u.setBy.rawValue)),
                ("updated_at", .string(Timestamp.rfc3339(unixSeconds: u.updatedAt))),
                ("problems", .array(u.problems.map { .string($0) })),
            ])
        })))
        return .object(members)
    }

    /// `json` as the `refund_policy` member of a customer object (`/api/users/U`, `status --user --json`).
    package func adding(to customer: JSONValue) -> JSONValue {
        guard case var .object(members) = customer else { return customer }
        members.append(("refund_policy", json))
        return .object(members)
    }
}
