import SettleBase
import SettleGooglePlay

/// How a Google order id lookup reads in `settle status --transaction GPA.…`: the order, whose
/// purchase it is, and whether an order of the ledger holds it. Never the purchase token.
extension GooglePlayOrderLookup.Result {
    package func text(held: Int) -> String {
        switch self {
        case let .found(order, accountId):
            var lines = ["Google Play order \(PrintableText.escape(order.orderId)) (\(PrintableText.escape(order.state ?? "state unknown"))), "
                         + "purchase \(order.purchaseToken.fingerprint)"
                         + (order.createTime.map { ", created \(PrintableText.escape($0))" } ?? "")]
            for item in order.lineItems {
                lines.append("  \(PrintableText.escape(item.productId))" + (item.quantity.map { " x\($0)" } ?? "")
                             + (item.purchaseOptionId.map { ", purchase option \(PrintableText.escape($0))" } ?? "")
                             + (item.isSubscription ? " (subscription)" : ""))
            }
            lines.append("  bought by " + (accountId.map { "obfuscatedExternalAccountId \(PrintableText.escape($0))" }
                                           ?? "an account the purchase does not name (no obfuscatedExternalAccountId)"))
            if held == 0 {
                lines.append("  no order in the ledger holds this purchase: if it is owed, enqueue it for its buyer "
                             + "(settle enqueue --store google_play --purchase-token-file ...)")
            }
            return lines.joined(separator: "\n") + "\n"
        case let .notFound(message):
            return "Google Play order lookup: not found (\(PrintableText.escape(message)))\n"
        case let .unavailable(message):
            return "Google Play order lookup failed: \(PrintableText.escape(message)); showing the ledger only\n"
        }
    }

    package func json(held: Int) -> JSONValue {
        switch self {
        case let .found(order, accountId):
            return .object([
                ("order_id", .string(order.orderId)), ("found", .bool(true)), ("state", .string(order.state)),
                ("create_time", .string(order.createTime)), ("purchase_token_fingerprint", .string(order.purchaseToken.fingerprint)),
                ("obfuscated_account_id", .string(accountId)),
                ("line_items", .array(order.lineItems.map { item in
                    .object([("product_id", .string(item.productId)), ("purchase_option_id", .string(item.purchaseOptionId)),
                             ("quantity", .number(item.quantity)), ("subscription", .bool(item.isSubscription))])
                })),
                ("held_by_orders", .number(held)),
            ])
        case let .notFound(message), let .unavailable(message):
            return .object([("found", .bool(false)), ("error", .string(message))])
        }
    }
}
