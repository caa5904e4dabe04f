
/// A row of either back end, read by column name: `Order` and the history decode from it
/// the same way whichever database it came from.
package protocol LedgerRow {
    func string(_ column: String) -> String?
    func int(_ column: String) -> Int64?
}

extension SQLiteRow: LedgerRow {}

extension LedgerRow {
    /// A count settle keeps (attempts, rounds), clamped to 0...1,000,000: the ledger is open to
    /// a backend's SQL, and `attempts + 1` on a row that holds 9223372036854775807 trapped the
    /// pass (and one more than PostgreSQL's largest `integer` cannot be written back). Settle
    /// gives up long before (`schedule.max_attempts` is at most 1000).
    package func count(_ column: String, default value: Int64 = 0) -> Int {
        Int(Swift.min(Swift.max(int(column) ?? value, 0), 1_000_000))
    }
}
