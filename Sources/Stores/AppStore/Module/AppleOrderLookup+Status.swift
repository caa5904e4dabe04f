import SettleBase
import SettleAppStore

/// How an Apple order id lookup reads in `settle status --transaction ORDER_ID`.
extension AppleOrderLookup.Result {
    package var text: String {
        switch self {
        case let .found(orderId, environment, purchases):
            var lines = ["Apple order \(PrintableText.escape(orderId)) (\(environment)): \(purchases.count) purchase(s)"]
            for p in purchases {
                let when = p.purchaseDateMs.map { " purchased " + Timestamp.rfc3339(milliseconds: $0) } ?? ""
                lines.append("  transaction \(p.transactionId) (original \(p.originalTransactionId)) \(PrintableText.escape(p.productId))\(when)"
                             + (p.refunded ? " REFUNDED" : ""))
            }
            return lines.joined(separator: "\n") + "\n"
        case let .notFound(message):
            return "Apple order lookup: not found (\(PrintableText.escape(message)))\n"
        case let .unavailable(message):
            return "Apple order lookup failed: \(PrintableText.escape(message)); showing the ledger only\n"
        }
    }

    package var json: JSONValue {
        switch self {
        case let .found(orderId, environment, purchases):
            return .object([
                ("order_id", .string(orderId)), ("found", .bool(true)), ("environment", .string(environment.rawValue)),
                ("purchases", .array(purchases.map { p in
                    .object([("transaction_id", .string(p.transactionId)), ("original_transaction_id", .string(p.originalTransactionId)),
                             ("product_id", .string(p.productId)),
                             ("purchase_date", .string(p.purchaseDateMs.map { Timestamp.rfc3339(milliseconds: $0) })),
                             ("refunded", .bool(p.refunded))])
                })),
            ])
        case let .notFound(message):
            return .object([("found", .bool(false)), ("error", .string(message))])
        case let .unavailable(message):
            return .object([("found", .bool(false)), ("error", .string(message))])
        }
    }
}
