import SettleBase
import SettleModel
import SettleConfig
import SettleLedger

/// The refund history of a customer in `settle status --user U`, `/users/U` and `/api/users/U`
/// (issue 37): their refunds as buyer in the last 90 days, each order named, what the grant
/// hook is told (`refunds_90d`) and whether `refunds.hold_after` holds their next grant.
extension CustomerReport {
    /// "refunds in 90 days: 2 (app_store 1, google_play 1): o-7 (REFUND, 3 days ago), ...".
    func refundsText(now: Int64) -> String {
        guard let refunds else { return "" }
        let orders = refunds.entries.map { "\($0.orderId) (\($0.kind), \(Timestamp.relative($0.at, now: now)))" }
        let listed = orders.isEmpty ? "" : ": " + orders.joined(separator: ", ")
        return "  refunds in 90 days: \(refunds.text)\(listed)\n"
    }

    var refundsJSON: JSONValue {
        guard let refunds else { return .null }
        return .object([
            ("count", .number(refunds.count)),
            ("since", .string(Timestamp.rfc3339(unixSeconds: refunds.since))),
            ("orders", .array(refunds.entries.map { e in
                .object([("order_id", .string(e.orderId)), ("store", .string(e.store.rawValue)),
                         ("kind", .string(e.kind)),
                         ("refunded_at", .string(Timestamp.rfc3339(unixSeconds: e.at)))])
            })),
        ])
    }
}

extension FrequentRefunders {
    /// `settle status --json`'s `refunders`.
    package var json: JSONValue {
        .object([
            ("threshold", .number(threshold)),
            ("since", .string(Timestamp.rfc3339(unixSeconds: since))),
            ("customers_total", .number(total)),
            ("capped", .bool(capped)),
            ("customers", .array(customers.map { c in
                .object([("user_id", .string(c.userId)), ("refunds", .number(c.refunds))])
            })),
        ])
    }
}

extension TransactionalLedger {
    /// The customers at or over the configuration's `refunds.flag_after`.
    package func frequentRefunders(_ configuration: Configuration,
                                   now: Int64) throws(LedgerError) -> FrequentRefunders {
        try frequentRefunders(atLeast: configuration.refunds.flagAfter, now: now)
    }
}
