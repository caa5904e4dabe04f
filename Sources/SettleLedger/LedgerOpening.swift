import SettleBase
import SettleConfig

/// Opens the ledger a configuration names: the SQLite file, or the PostgreSQL database.
extension Configuration {
    /// `access` as for `PostgresLedger.Access`: only the commands that own the ledger's life
    /// (`migrate`, `run`, `reconcile`) migrate it. A PostgreSQL pool has a connection for each
    /// of a pass's workers, one for lease renewals and one for status.
    package func openLedger(_ access: PostgresLedger.Access, time: any TimeSource) throws(LedgerError) -> any SettleLedger {
        if let postgres = postgresLedger {
            let password: Secret?
            do {
                password = try postgres.passwordFile?.read()
            } catch {
                throw .invalid(error.message)
            }
            return try PostgresLedger(url: postgres.url.value, password: password, access: access, time: time,
                                      connections: schedule.concurrency + 2)
        }
        switch access {
        case .migrating: return try SQLiteLedger(path: ledgerPath, time: time)
        case .existing: return try SQLiteLedger(existingPath: ledgerPath, time: time)
        case .current: return try SQLiteLedger(currentPath: ledgerPath, time: time)
        case .readOnly: return try SQLiteLedger(readOnlyPath: ledgerPath, time: time)
        }
    }
}

extension PostgresLedger {
    /// The schema version of the database a configuration names, without migrating or
    /// refusing an empty database (`settle migrate --dry-run`).
    package static func inspectSchemaVersion(_ configuration: Configuration) throws(LedgerError) -> Int {
        guard let postgres = configuration.postgresLedger else { return 0 }
        let password: Secret?
        do {
            password = try postgres.passwordFile?.read()
        } catch {
            throw .invalid(error.message)
        }
        let pool = PostgresPool(url: postgres.url.value, password: password, capacity: 1)
        defer { pool.close() }
        do {
            return try pool.with { db in
                guard try db.query("SELECT to_regclass('settle_schema') IS NOT NULL AS present").first?.bool("present") == true else { return 0 }
                return Int(try db.query("SELECT coalesce(max(version), 0) AS version FROM settle_schema").first?.int("version") ?? 0)
            }
        } catch let error as PostgresError {
            throw .postgres(error)
        } catch {
            throw .invalid("\(error)")
        }
    }
}
