import SettleModel
import SettleLedger

/// The refund rate (issue 37), read from the ledger: every host sharing it writes the same
/// number, so a dashboard or alert takes the `max` over hosts, never the sum, and a host that
/// restarts loses nothing (a counter in one process would count only what that host heard).
extension Metrics {
    static func refundFamilies(_ summary: LedgerSummary, app: String) -> String {
        // No series where the ledger could not say (a ledger from before orders named their store):
        // an unknown rate is never written as 0.
        var out = family("settle_refunds_last_hour", "gauge",
                         "Customers' refunds, revocations and chargebacks recorded in the last hour, by store "
                             + "(from the ledger; Family Sharing revokes excluded).")
        for store in summary.customerRefundsLastHour.keys.sorted() {
            let count = summary.customerRefundsLastHour[store] ?? 0
            out += "settle_refunds_last_hour{\(app),store=\"\(labelValue(store.rawValue))\"} \(count)\n"
        }
        return out
    }
}
