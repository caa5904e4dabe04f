
/// A row of either back end, read by column name: `Order` and the history decode from it
/// the same way whichever database it came from.
package protocol LedgerRow {
    func string(_ column: String) -> String?
    func int(_ column: String) -> Int64?
}

extension SQLiteRow: LedgerRow {}
