import SettleBase
import SettleModel
import SettleLedger

extension OverviewPage {
    /// "Recovered, last 30 days": what settle granted that the backend had not, and what it took
    /// back on refunds, per currency (never added across currencies), with the orders without a
    /// price counted apart. The report's JSON is `settle report --json`.
    static func revenue(_ report: RevenueReport) -> Markup {
        func rows(_ label: String, _ part: [RevenueReport.Row]) -> [[Markup]] {
            let totals = RevenueReport.totals(part).map { t -> [Markup] in
                let amount = Price.format(milliunits: t.milliunits, currency: t.currency)
                return ["\(label)", "\(t.currency)", "\(t.orders)", "\(amount)"]
            }
            let unpriced = RevenueReport.unpriced(part)
            return totals + (unpriced > 0 ? [["\(label)", "no price", "\(unpriced)", "-"]] : [])
        }
        let all = rows("recovered", report.recovered) + rows("clawed back", report.clawedBack)
        let none: Markup = "<p>nothing recovered or clawed back in the last 30 days</p>"
        let table = WebPage.table(["", "currency", "orders", "amount"], all, id: "revenue", numeric: [2, 3])
        let content = all.isEmpty ? none : table
        return WebPage.section("Recovered, last 30 days", id: "recovered", content)
    }
}
