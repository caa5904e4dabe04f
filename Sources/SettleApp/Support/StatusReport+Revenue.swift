import SettleLedger

extension StatusReport {
    /// The last 30 days of `settle report`, for the whole ledger's status (nil when the status is
    /// filtered to some orders, which the ledger-wide sums are not about).
    static func revenue(_ ledger: any SettleLedger, filtered: Bool, now: Int64) throws -> RevenueReport? {
        guard !filtered else { return nil }
        return try ledger.revenue(since: now - RevenueView.statusWindowSeconds, until: now + 1)
    }
}
