import SettleBase
import SettleModel
import SettleConfig
import SettleLedger

/// One customer as support asks about them (`settle status --user U`, `/users/U`): every order
/// they bought, hold, gave away or received by transfer; for each, what the hook was told to
/// grant, a subscription's state and expiry, its refund or revoke, and the support actions on it.
package struct CustomerReport: Sendable {
    package struct Entry: Sendable {
        package var order: Order
        /// How the order is the customer's: "holds", "bought, then transferred to u-2", "received from u-1 by transfer".
        package var relation: String
        /// What the hook was told to grant: "com.example.coins100 × 1 (grant {"coins":100} per the configuration)".
        package var goods: String
        /// A subscription's state: "active until …", "expired …"; nil for anything else.
        package var subscription: String?
        package var refund: String?
        package var supportActions: [SupportAction]
    }

    package var userId: String
    package var entries: [Entry]
    /// Every order of the customer's, when more than `entries` were read.
    package var total: Int
    /// The customer's refunds as buyer in the last 90 days (`CustomerReport+Refunds.swift`).
    package var refunds: RefundHistory? = nil

    package static let limit = 200

    package static func read(_ ledger: any SettleLedger, userId: String, configuration: Configuration,
                             now: Int64) throws(LedgerError) -> CustomerReport {
        let summary = try ledger.summary(OrderFilter(userId: userId, limit: limit))
        var entries: [Entry] = []
        for order in summary.orders {
            let actions = try ledger.supportActions(orderId: order.orderId)
            entries.append(Entry(order: order, relation: relation(order, of: userId, actions: actions),
                                 goods: goods(order, configuration: configuration),
                                 subscription: try subscription(order, configuration: configuration, now: now, ledger: ledger),
                                 refund: order.refund.map(StatusView.refundText), supportActions: actions))
        }
        return CustomerReport(userId: userId, entries: entries, total: summary.matching,
                              refunds: try ledger.refundHistory(of: userId, now: now))
    }

    /// How `order` is `user`'s, from its holder and its transfers.
    static func relation(_ order: Order, of user: String, actions: [SupportAction]) -> String {
        let transfers = actions.filter { $0.kind == .transfer && $0.state == .done }
        let gave = transfers.filter { $0.fromUser == user }.compactMap(\.toUser)
        let got = transfers.filter { $0.toUser == user }.compactMap(\.fromUser)
        var parts: [String] = []
        if let first = transfers.first?.fromUser, first == user || got.isEmpty && order.userId == user {
            parts.append(first == user ? "bought it" : "holds it")
        } else if transfers.isEmpty {
            parts.append(order.userId == user ? "bought it" : "named by the order")
        }
        if !got.isEmpty { parts.append("received it from \(got.joined(separator: ", ")) by transfer") }
        if !gave.isEmpty { parts.append("transferred it to \(gave.joined(separator: ", "))") }
        parts.append(order.userId == user ? "holds it now" : "holder now: \(order.userId.isEmpty ? "nobody" : order.userId)")
        return parts.joined(separator: "; ")
    }

    /// The product, the quantity the store confirmed and the configured grant the hook is sent.
    static func goods(_ order: Order, configuration: Configuration) -> String {
        let quantity = order.verified.map { " × \($0.quantity)" } ?? ""
        let grant = configuration.products[order.productId]?.grant.map { " (grant \($0.serialized()) per the configuration)" } ?? ""
        return order.productId + quantity + grant
    }

    /// A subscription's period as the store confirmed it; nil for other products.
    static func subscription(_ order: Order, configuration: Configuration, now: Int64) -> String? {
        guard [.autoRenewable, .nonRenewing].contains(configuration.products[order.productId]?.kind) || order.verified?.expiresDateMs != nil else { return nil }
        guard let expires = order.verified?.expiresDateMs.map({ $0 / 1000 }) else { return "not confirmed yet" }
        if order.refund != nil { return "ended by its refund (the period ran to \(Timestamp.rfc3339(unixSeconds: expires)))" }
        return expires > now ? "active until \(Timestamp.relative(expires, now: now))" : "expired \(Timestamp.relative(expires, now: now))"
    }

    /// `settle status --user U`'s customer section.
    package func text(now: Int64) -> String {
        var out = "customer \(userId): \(Plural.count(total, "order"))"
            + (entries.count < total ? " (the \(entries.count) most recently changed shown)" : "") + "\n"
        for e in entries {
            out += "  \(e.order.orderId)  \(e.order.state.rawValue)" + (e.order.reason.map { " (\($0))" } ?? "")
                + "  \(e.order.store.rawValue)\n"
            out += "    \(e.relation)\n    goods: \(e.goods)\n"
            if let s = e.subscription { out += "    subscription: \(s)\n" }
            if let r = e.refund { out += "    refund: \(r)\n" }
            for a in e.supportActions { out += "    support: \(Verdict.supportLine(a, now: now))\n" }
        }
        return out + refundsText(now: now)
    }

    package var json: JSONValue {
        .object([
            ("user_id", .string(userId)),
            ("orders_total", .number(total)),
            ("refunds_90d", refundsJSON),
            ("orders", .array(entries.map { e in
                .object([
                    ("order_id", .string(e.order.orderId)), ("state", .string(e.order.state.rawValue)),
                    ("reason", .string(e.order.reason)), ("store", .string(e.order.store.rawValue)),
                    ("holder", .string(e.order.userId)), ("relation", .string(e.relation)), ("goods", .string(e.goods)),
                    ("subscription", .string(e.subscription)), ("refund", .string(e.refund)),
                    ("support_actions", .array(e.supportActions.map(StatusView.json))),
                ])
            })),
        ])
    }
}
