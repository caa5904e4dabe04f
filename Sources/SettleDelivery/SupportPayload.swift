import SettleBase
import SettleModel
import SettleConfig

/// The documents of a transfer's steps (`settle transfer`): the revoke route's and the grant
/// route's own documents, with the transfer's key in place of the store's and, added, what the
/// step is (`"reason": "transfer"`, and `"transfer": {"number", "from_user", "to_user"}`). Built
/// only from facts in the ledger, so a step re-sent after a crash is the same document.
package enum SupportPayload {
    /// The revoke from the previous holder: everything delivered is taken back
    /// (`revocation_type` `REFUND_FULL`, `revoke_quantity` all of it), from `from`.
    package static func transferRevoke(order: Order, number: Int, from: String, to: String,
                                       product: Configuration.Product?) -> JSONValue {
        var holder = order
        holder.userId = from
        holder.refund = nil
        guard let transactionId = order.verified?.transactionId ?? order.transactionId else { return .null }
        let document = RevokeHook.payload(order: holder, transactionId: transactionId, product: product)
        return transfer(document, key: SupportAction.transferKey(orderId: order.orderId, number: number, step: .revoke),
                        number: number, from: from, to: to)
    }

    /// The grant to the new holder: the order's grant document, for `to`.
    package static func transferGrant(order: Order, purchase: VerifiedPurchase, number: Int, from: String, to: String,
                                      product: Configuration.Product?) -> JSONValue {
        var holder = order
        holder.userId = to
        let document = HookPayload.make(order: holder, purchase: purchase, product: product)
        return transfer(document, key: SupportAction.transferKey(orderId: order.orderId, number: number, step: .grant),
                        number: number, from: from, to: to)
    }

    private static func transfer(_ document: JSONValue, key: String, number: Int, from: String, to: String) -> JSONValue {
        guard case var .object(members) = document else { return document }
        members = members.map { $0.0 == "idempotency_key" ? ($0.0, .string(key)) : $0 }
        members.append(("reason", .string("transfer")))
        members.append(("transfer", .object([("number", .number(number)), ("from_user", .string(from)), ("to_user", .string(to))])))
        return .object(members)
    }
}
