import Foundation

/// Takes goods back after Apple refunded or revoked a delivered purchase: the operator's
/// `delivery.revoke_command`, or the delivery webhook with `event: "revoke"`. The idempotency
/// key is `revoke:<transactionId>`, so a retried or repeated revoke is recognisable. Answers
/// read as for deliveries: 0 / 2xx done, 75 / 408, 429, 5xx retry, 65 / other 4xx refused.
public enum RevokeHook: Sendable {
    case command(CommandHook)
    case webhook(WebhookHook)

    public static func idempotencyKey(transactionId: String) -> String { "revoke:\(transactionId)" }

    /// The document the hook receives: the delivery's fields plus what Apple said.
    public static func payload(order: Order, transactionId: String, product: Configuration.Product?) -> JSONValue {
        let purchase = order.verified
        return .object([
            ("event", .string("revoke")),
            ("order_id", .string(order.orderId)),
            ("user_id", .string(order.userId)),
            ("product_id", .string(purchase?.productId ?? order.productId)),
            ("product_type", .string(product?.kind.rawValue)),
            ("quantity", .number(purchase?.quantity ?? 1)),
            ("grant", product?.grant ?? .null),
            ("transaction_id", .string(transactionId)),
            ("original_transaction_id", .string(purchase?.originalTransactionId)),
            ("grant_key", .string(purchase?.grantKey)),
            ("environment", .string(purchase?.environment ?? order.environment)),
            ("refund_kind", .string(order.refund?.kind)),
            ("refund_reason", .string(order.refund?.reason)),
            ("refunded_at", .string(order.refund.map { Timestamp.rfc3339(unixSeconds: $0.at) })),
            ("idempotency_key", .string(idempotencyKey(transactionId: transactionId))),
        ])
    }

    public func revoke(order: Order, transactionId: String) -> DeliveryReport {
        let key = Self.idempotencyKey(transactionId: transactionId)
        switch self {
        case let .command(hook):
            return hook.run(Self.payload(order: order, transactionId: transactionId, product: hook.products[order.productId]),
                            orderId: order.orderId, idempotencyKey: key)
        case let .webhook(hook):
            return hook.post(Self.payload(order: order, transactionId: transactionId, product: hook.products[order.productId]).data,
                             idempotencyKey: key)
        }
    }
}
