import SettleBase
import SettleModel
import SettleLedger

/// A customer's refund policy as `settle customer show`, `settle status --user`, `/users/U` and
/// `/api/users/U` tell it: consent, the developer's preference for them, and who set them when.
/// With no record, every store's global setting answers.
package struct CustomerPolicyView: Sendable {
    package var userId: String
    package var policy: CustomerPolicy?

    package static func read(_ ledger: any SettleLedger, userId: String) throws(LedgerError) -> CustomerPolicyView {
        CustomerPolicyView(userId: userId, policy: try ledger.customerPolicy(userId: userId))
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
        guard let policy else {
            return
                "customer \(userId): no refund policy recorded (consent unknown; each store's global setting answers)"
        }
        var out =
            "customer \(userId) refund policy:\n  consent: \(policy.consentText)\n"
            + "  refund preference: \(preferenceText)\n"
        if let note = policy.note { out += "  note: \(note)\n" }
        if let setText { out += "  set by: \(setText)\n" }
        for problem in policy.problems { out += "  unusable: \(problem)\n" }
        return String(out.dropLast())
    }

    package var json: JSONValue {
        guard let policy else { return .object([("user_id", .string(userId)), ("recorded", .bool(false))]) }
        return .object([
            ("user_id", .string(userId)), ("recorded", .bool(true)),
            ("consented", policy.consented.map(JSONValue.bool) ?? .null),
            ("consent_at", .string(policy.consentAt.map { Timestamp.rfc3339(unixSeconds: $0) })),
            ("consent_by", .string(policy.consentBy)),
            ("refund_preference", .string(policy.refundPreference?.rawValue)),
            ("note", .string(policy.note)),
            ("set_by", .string(policy.setBy.rawValue)), ("set_by_name", .string(policy.setByName)),
            ("updated_at", .string(Timestamp.rfc3339(unixSeconds: policy.updatedAt))),
            ("problems", .array(policy.problems.map { .string($0) })),
        ])
    }

    /// `json` as the `refund_policy` member of a customer object (`/api/users/U`, `status --user --json`).
    package func adding(to customer: JSONValue) -> JSONValue {
        guard case var .object(members) = customer else { return customer }
        members.append(("refund_policy", json))
        return .object(members)
    }
}
