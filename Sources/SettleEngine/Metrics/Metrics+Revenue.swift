import SettleModel
import SettleLedger

/// Recovered revenue as gauges (issue 37), over the last 30 days, read from the ledger each time
/// the file is written: a restart loses nothing, and several hosts on one ledger agree.
///
/// - `settle_recovered_amount{store,currency}` and `settle_clawed_back_amount{store,currency}`:
///   in the currency's main unit (`59.88` is 59.88 USD), written as a decimal from the integer
///   milliunits the ledger sums, never through a floating-point sum; one series per currency,
///   never added across currencies.
/// - `settle_recovered_orders{store,priced}` and `settle_clawed_back_orders{store,priced}`: the
///   orders, `priced="false"` for those without a price.
extension Metrics {
    /// The window the revenue gauges cover, as `settle status` shows it.
    package static let revenueWindowSeconds: Int64 = 30 * 86400

    static func revenueFamilies(_ report: RevenueReport, app: String) -> String {
        var out = ""
        let parts = [("recovered", report.recovered, "settle granted that the backend had not"),
                     ("clawed_back", report.clawedBack, "settle's revoke hook took back after a refund")]
        for (name, rows, what) in parts {
            out += header("settle_\(name)_amount", "gauge",
                          "The price of the orders \(what), last 30 days, in the currency's main unit.")
            for (store, currency, milliunits) in sums(rows) {
                let labels = "store=\"\(labelValue(store))\",currency=\"\(labelValue(currency))\""
                out += "settle_\(name)_amount{\(app),\(labels)} "
                    + Price.format(milliunits: milliunits, currency: currency) + "\n"
            }
            out += header("settle_\(name)_orders", "gauge",
                          "The orders \(what), last 30 days; priced=\"false\": without a price.")
            var orders: [String: Int] = [:]
            for row in rows { orders["\(row.store)|\(row.currency != nil)", default: 0] += row.orders }
            for key in orders.keys.sorted() {
                let labels = key.split(separator: "|")
                let store = labelValue(String(labels[0]))
                out += "settle_\(name)_orders{\(app),store=\"\(store)\",priced=\"\(labels[1])\"} \(orders[key]!)\n"
            }
        }
        return out
    }

    /// Milliunits by store and currency (the days summed), sorted.
    private static func sums(_ rows: [RevenueReport.Row]) -> [(String, String, Int64)] {
        var sums: [String: Int64] = [:]
        for row in rows {
            guard let currency = row.currency else { continue }
            sums["\(row.store)|\(currency)", default: 0] &+= row.milliunits
        }
        return sums.keys.sorted().map { key in
            let parts = key.split(separator: "|")
            return (String(parts[0]), String(parts[1]), sums[key]!)
        }
    }
}
