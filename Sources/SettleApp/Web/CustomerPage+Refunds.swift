import SettleBase
import SettleModel
import SettleConfig

/// The customer's refund history on `/users/U` (issue 37): how many refunds they asked for as
/// buyer in the last 90 days, each order linked, and whether `refunds.hold_after` holds their
/// next grant for a person. Every value goes through `Markup`, so a user id holding HTML is text.
extension CustomerPage {
    static func refundHistory(_ report: CustomerReport, configuration: Configuration, now: Int64) -> Markup {
        guard let refunds = report.refunds else { return .empty }
        let settings = configuration.refunds
        var verdict = "the grant hook is told refunds_90d \(refunds.count)"
        if let hold = settings.holdAfter {
            verdict += refunds.count >= hold ? "; at refunds.hold_after (\(hold)): their next grant waits for a person"
                : "; refunds.hold_after is \(hold)"
        }
        let flagged = refunds.count >= settings.flagAfter
        let rows = refunds.entries.map { e -> [Markup] in
            [WebPage.orderLink(e.orderId), "\(e.store.logName)", "\(e.kind)", "\(Timestamp.relative(e.at, now: now))"]
        }
        let table = rows.isEmpty ? Markup.empty
            : WebPage.table(["order", "store", "kind", "recorded"], rows, id: "refund-orders")
        return WebPage.section("Refunds in the last 90 days", id: "refunds", """
            <p id="refunds-90d"><strong class="\(flagged ? "bad" : "ok")">\(refunds.count)</strong> \
            (flagged from \(settings.flagAfter)); \(verdict)</p>\(table)
            """)
    }
}
