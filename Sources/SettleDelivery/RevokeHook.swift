import Foundation
import SettleBase
import SettleModel
import SettleConfig

/// Takes goods back after Apple refunded or revoked a delivered purchase: the operator's
/// `delivery.revoke_command`, or a POST with `event: "revoke"` to `delivery.webhook.revoke_url`
/// (never to the grant URL). The idempotency key is `revoke:<transactionId>` (with `:<round>`
/// for a refund after a reversed one), so a retried or repeated revoke is recognisable. Answers
/// read as for deliveries: 0 / a confirmed 2xx done (the receiver names the revoke's key, as for
/// a grant), 75 / 408, 429, 5xx and an unconfirmed 2xx retry, 65 / other 4xx refused.
package enum RevokeHook: Sendable {
    case command(CommandHook)
    case webhook(WebhookHook)

    /// The `event` of a revoke.
    package static let event = "revoke"

    /// `revoke:<txn>` for the first refund; a refund after a reversed one whose revoke may have
    /// reached the receiver gets `revoke:<txn>:<round>`, so a receiver that deduplicates by key acts on it.
    package static func idempotencyKey(transactionId: String, round: Int = 1) -> String {
        SupportAction.revokeKey(transactionId: transactionId, round: round)
    }

    /// What Apple said of a refund: `revocationType` and `revocationPercentage` (milliunits).
    package typealias Revocation = (type: String?, percentage: Int64?)

    /// The document the hook receives: the delivery's fields plus what the store said, how
    /// many to take back (`revoke_quantity`: `quantity` for a quantity-based partial refund,
    /// else all that was delivered), and how much of each (`revocation_type`: Apple's, else
    /// `REFUND_FULL`; `revocation_percentage`: Apple's milliunits for a prorated refund, else null).
    package static func payload(order: Order, transactionId: String, round: Int = 1, quantity: Int? = nil,
                                revocation: Revocation = (nil, nil), product: Configuration.Product?) -> JSONValue {
        let purchase = order.verified
        return .object([
            ("event", .string(event)),
            ("store", .string(order.store.rawValue)),
            ("order_id", .string(order.orderId)),
            ("user_id", .string(order.userId)),
            ("product_id", .string(purchase?.productId ?? order.productId)),
            ("product_type", .string(product?.kind.rawValue)),
            ("quantity", .number(purchase?.quantity ?? 1)),
            ("revoke_quantity", .number(quantity ?? purchase?.quantity ?? 1)),
            ("revocation_type", .string(revocation.type ?? "REFUND_FULL")),
            ("revocation_percentage", revocation.percentage.map { .number($0) } ?? .null),
            ("grant", product?.grant ?? .null),
            ("transaction_id", .string(transactionId)),
            ("original_transaction_id", .string(purchase?.originalTransactionId)),
            ("grant_key", .string(purchase?.grantKey)),
            ("environment", .string(purchase?.environment ?? order.environment)),
            ("refund_kind", .string(order.refund?.kind)),
            ("refund_reason", .string(order.refund?.reason)),
            ("refunded_at", .string(order.refund.map { Timestamp.rfc3339(unixSeconds: $0.at) })),
            ("idempotency_key", .string(idempotencyKey(transactionId: transactionId, round: round))),
        ])
    }

    /// The products' configuration, for the documents of this route.
    package var products: [String: Configuration.Product] {
        switch self {
        case let .command(hook): hook.products
        case let .webhook(hook): hook.products
        }
    }

    /// Sends one document of the revoke route under `idempotencyKey` (a transfer's revoke, or a
    /// revoke re-sent), read as a revoke's answer.
    package func send(_ document: JSONValue, orderId: String, idempotencyKey: String) -> DeliveryReport {
        switch self {
        case let .command(hook): hook.run(document, orderId: orderId, idempotencyKey: idempotencyKey)
        case let .webhook(hook): hook.post(document.data, idempotencyKey: idempotencyKey, event: Self.event)
        }
    }

    package func revoke(order: Order, transactionId: String, round: Int = 1, quantity: Int? = nil,
                        revocation: Revocation = (nil, nil)) -> DeliveryReport {
        let key = Self.idempotencyKey(transactionId: transactionId, round: round)
        switch self {
        case let .command(hook):
            return hook.run(Self.payload(order: order, transactionId: transactionId, round: round, quantity: quantity,
                                         revocation: revocation, product: hook.products[order.productId]),
                            orderId: order.orderId, idempotencyKey: key)
        case let .webhook(hook):
            return hook.post(Self.payload(order: order, transactionId: transactionId, round: round, quantity: quantity,
                                          revocation: revocation, product: hook.products[order.productId]).data,
                             idempotencyKey: key, event: Self.event)
        }
    }
}
