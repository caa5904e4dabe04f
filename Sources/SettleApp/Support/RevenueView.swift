import SettleBase
import SettleModel
import SettleLedger

/// What settle recovered and clawed back (`RevenueReport`) as people and programs read it:
/// `settle report` (text and JSON), the one line of `settle status`, the console's overview card.
/// Amounts are shown per currency with the currency's minor digits, computed from integer
/// milliunits; two currencies are never added together.
enum RevenueView {
    /// The window `settle status`, the overview and the metrics show: the last 30 days.
    static let statusWindowSeconds: Int64 = 30 * 86400

    /// `recovered: 12 orders, 59.88 USD, 1200 JPY; 3 without a price`, and the same for clawed back.
    static func summary(_ label: String, _ rows: [RevenueReport.Row]) -> String {
        let count = RevenueReport.orders(rows)
        guard count > 0 else { return "\(label): none" }
        let amounts = RevenueReport.totals(rows).map { amount($0.milliunits, $0.currency) }
        let unpriced = RevenueReport.unpriced(rows)
        return "\(label): \(Plural.count(count, "order"))"
            + (amounts.isEmpty ? "" : ", " + amounts.joined(separator: ", "))
            + (unpriced > 0 ? "; \(unpriced) without a price" : "")
    }

    /// The one line of `settle status` (the last 30 days).
    static func statusLine(_ report: RevenueReport) -> String {
        summary("recovered (30 days)", report.recovered) + "; " + summary("clawed back", report.clawedBack)
    }

    /// `settle report`'s text: the window, the totals, then one line a day, store and currency.
    static func text(_ report: RevenueReport) -> String {
        let since = Timestamp.rfc3339(unixSeconds: report.since), until = Timestamp.rfc3339(unixSeconds: report.until)
        var lines = ["from \(since) to \(until) (UTC days)", summary("recovered", report.recovered),
                     summary("clawed back", report.clawedBack)]
        for (label, rows) in [("recovered", report.recovered), ("clawed back", report.clawedBack)] where !rows.isEmpty {
            lines.append("")
            lines.append(label + ":")
            lines.append(row(["day", "store", "orders", "amount"]))
            for r in rows {
                let price = r.currency.map { amount(r.milliunits, $0) } ?? "no price"
                lines.append(row([day(r.day), r.store, String(r.orders), price]))
            }
        }
        return lines.joined(separator: "\n")
    }

    /// `"59.88 USD"`.
    private static func amount(_ milliunits: Int64, _ currency: String) -> String {
        Price.format(milliunits: milliunits, currency: currency) + " " + currency
    }

    private static func row(_ cells: [String]) -> String {
        let padded = zip(cells, [10, 14, 7, 0]).map { cell, width in
            width == 0 ? cell : cell.padding(toLength: max(width, cell.count), withPad: " ", startingAt: 0)
        }
        return "  " + padded.joined(separator: "  ")
    }

    private static func day(_ unix: Int64) -> String { String(Timestamp.rfc3339(unixSeconds: unix).prefix(10)) }

    /// `settle report --json` and the `revenue` member of `settle status --json`: every amount as
    /// integer milliunits (`amount_milliunits`) and as the decimal text people read (`amount`).
    static func json(_ report: RevenueReport) -> JSONValue {
        func part(_ rows: [RevenueReport.Row]) -> JSONValue {
            .object([
                ("orders", .number(RevenueReport.orders(rows))),
                ("without_price", .number(RevenueReport.unpriced(rows))),
                ("by_currency", .array(RevenueReport.totals(rows).map { t in
                    .object([("currency", .string(t.currency)), ("orders", .number(t.orders)),
                             ("amount_milliunits", .number(t.milliunits)),
                             ("amount", .string(Price.format(milliunits: t.milliunits, currency: t.currency)))])
                })),
                ("by_day", .array(rows.map { r in
                    .object([("day", .string(day(r.day))), ("store", .string(r.store)),
                             ("currency", .string(r.currency)), ("orders", .number(r.orders)),
                             ("amount_milliunits", r.currency == nil ? .null : .number(r.milliunits)),
                             ("amount",
                              .string(r.currency.map { Price.format(milliunits: r.milliunits, currency: $0) }))])
                })),
            ])
        }
        return .object([("since", .string(Timestamp.rfc3339(unixSeconds: report.since))),
                        ("until", .string(Timestamp.rfc3339(unixSeconds: report.until))),
                        ("recovered", part(report.recovered)), ("clawed_back", part(report.clawedBack))])
    }
}
