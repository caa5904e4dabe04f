import Foundation
import SettleBase
import SettleModel
import SettleLedger
import SettleDelivery

/// A delivery hook may say, with its confirmation, what it knows of the customer and of the
/// order's use, in the same JSON object (a command's last line of output, a webhook's body):
///
///     {"granted": "<key>", "customer": {"consented": true, "refund_preference": "decline"},
///      "usage": {"consumption_percentage": 45200, "play_time_seconds": 3600}}
///
/// Both members are optional, and an answer without them reads as before. Only a delivered
/// order's answer is read, and only about that order and its own customer: a `user_id` in
/// `customer` naming anyone else refuses the whole `customer` member (a hook cannot set another
/// customer's policy). A value out of range refuses its member, named in the log; the grant
/// stands either way. A batch's answer lines carry no customer (docs/backend.md).
extension Reconciler {
    func recordCustomerAnswer(_ report: DeliveryReport, of order: Order) {
        guard case .delivered = report.outcome, let answer = Self.answerObject(report.output) else { return }
        if let customer = answer["customer"], customer != .null {
            do {
                let change = try Self.customerChange(customer, order: order)
                if !change.isEmpty { try ledger.setCustomer(order.userId, change, source: .hook) }
            } catch {
                log.warning("hook.customer_refused", ["order": order.orderId, "why": "\(error)"])
            }
        }
        if let usage = answer["usage"], usage != .null {
            do {
                let known = try CustomerInput.usage(usage, orderId: order.orderId)
                if !known.isEmpty { try ledger.setOrderUsage(known, source: .hook) }
            } catch {
                log.warning("hook.usage_refused", ["order": order.orderId, "why": "\(error)"])
            }
        }
    }

    /// The JSON object of a hook's answer: the whole output, or its last line that is one.
    static func answerObject(_ output: String) -> JSONValue? {
        // Most answers name neither member: looked for in the bytes, before any copy is made.
        guard output.containsBytes(#""customer""#) || output.containsBytes(#""usage""#) else { return nil }
        let trimmed = output.trimmingCharacters(in: .whitespacesAndNewlines)
        if let whole = try? JSONValue.parse(Data(trimmed.utf8)), case .object = whole { return whole }
        for line in trimmed.split(separator: "\n").reversed() where line.hasPrefix("{") {
            if let json = try? JSONValue.parse(Data(line.utf8)), case .object = json { return json }
        }
        return nil
    }

    /// The `customer` member as a change of the order's own customer.
    static func customerChange(_ json: JSONValue, order: Order) throws(CustomerInput.Problem) -> CustomerChange {
        guard case let .object(members) = json else { throw CustomerInput.Problem("customer", "is not a JSON object") }
        let known: Set = ["user_id", "consented", "refund_preference"]
        if let unknown = members.first(where: { !known.contains($0.0) }) {
            throw CustomerInput.Problem(
                "customer.\(PrintableText.clip(unknown.0, 40))",
                "is not a customer field (consented, refund_preference)")
        }
        guard !order.userId.isEmpty else {
            throw CustomerInput.Problem("customer", "the order has no user to record it for")
        }
        if let named = json["user_id"], named != .string(order.userId) {
            throw CustomerInput.Problem(
                "customer.user_id", "names another user than the order's: a hook records only its order's customer")
        }
        var change = CustomerChange()
        if let value = json["consented"], value != .null {
            guard case let .bool(consented) = value else {
                throw CustomerInput.Problem("customer.consented", "is not true or false")
            }
            change.consented = consented
        }
        if let value = json["refund_preference"], value != .null {
            guard case let .string(text) = value else {
                throw CustomerInput.Problem("customer.refund_preference", "is not a string")
            }
            change.refundPreference = try CustomerInput.preference(text, field: "customer.refund_preference")
        }
        return change
    }
}
