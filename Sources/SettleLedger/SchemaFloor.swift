import Synchronization

/// The highest schema version a ledger was seen at. Migrations only ever raise a ledger's
/// version (an older settle refuses a newer ledger), so once a version is reached it stays
/// reached: "does the schema know X" is answered from here without a query (a `PRAGMA
/// user_version`, or two queries on PostgreSQL) at every grant.
package final class SchemaFloor: Sendable {
    private let highest = Atomic<Int>(0)

    package init() {}

    /// Whether `version` is known to be reached; false means "ask the ledger", not "not reached".
    package func reached(_ version: Int) -> Bool { highest.load(ordering: .acquiring) >= version }

    /// Records a version read from the ledger.
    package func saw(_ version: Int) {
        var current = highest.load(ordering: .relaxed)
        while current < version {
            let (exchanged, original) = highest.compareExchange(expected: current, desired: version, ordering: .acquiringAndReleasing)
            if exchanged { return }
            current = original
        }
    }
}

extension TransactionalLedger {
    /// Whether the ledger's schema reached `version`: from the floor once it is known, else read.
    package func schemaReached(_ version: Int) throws(LedgerError) -> Bool {
        if schemaFloor.reached(version) { return true }
        let found = try schemaVersion()
        schemaFloor.saw(found)
        return found >= version
    }
}
