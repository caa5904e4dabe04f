import SettleBase
import SettleModel

/// The overview's "customers with ≥ N refunds in 90 days" card (issue 37), N being
/// `refunds.flag_after`: each customer linked to their page, most refunds first.
extension OverviewPage {
    static func refunders(_ report: StatusReport) -> Markup {
        guard let refunders = report.refunders else { return .empty }
        let heading = "Customers with ≥ \(refunders.threshold) refunds in 90 days"
        guard refunders.total > 0 else {
            return WebPage.section(heading, id: "refunders", "<p class=\"ok\" id=\"refunders-none\">none</p>")
        }
        let rows = refunders.customers.map { c -> [Markup] in [WebPage.userLink(c.userId), "\(c.refunds)"] }
        let total = "\(refunders.total)\(refunders.capped ? "+" : "")"
        var content: Markup = "<p id=\"refunders-total\"><strong>\(total)</strong> "
            + "\(refunders.total == 1 ? "customer" : "customers")</p>"
            + WebPage.table(["customer", "refunds"], rows, id: "refunders-table", numeric: [1])
        if refunders.total > refunders.customers.count {
            content = content + "<p class=\"muted\">the \(refunders.customers.count) with the most are shown</p>"
        }
        if refunders.capped {
            content = content + "<p class=\"muted\">counted over the newest \(FrequentRefunders.refundsCap) refunds</p>"
        }
        return WebPage.section(heading, id: "refunders", content)
    }
}
