/// A table's indexes that back no constraint, dropped while `settle ledger copy` loads it and
/// built again after, in the same transaction. Each row COPY writes otherwise updates every
/// index (the orders have sixteen): index upkeep was most of PostgreSQL's time in a copy, and
/// one sorted build of each index afterwards is several times cheaper. The primary key and
/// the unique constraints stay (foreign keys need them); a unique index dropped here checks
/// its rows when it is built again, so a copy that breaks it still fails as a whole.
struct SecondaryIndexes {
    /// Each index's `CREATE INDEX` statement, as PostgreSQL itself writes it.
    let definitions: [String]

    static func drop(on table: String, _ db: PostgresConnection) throws -> SecondaryIndexes {
        let rows = try db.run("""
            SELECT i.indexrelid::regclass::text AS name, pg_get_indexdef(i.indexrelid) AS definition
            FROM pg_index i
            WHERE i.indrelid = to_regclass(?)
              AND NOT EXISTS (SELECT 1 FROM pg_constraint c WHERE c.conindid = i.indexrelid)
            ORDER BY 1
            """, [.text(table)])
        for row in rows {
            guard let name = row.string("name") else { continue }
            try db.execute("DROP INDEX \(name)")
        }
        return SecondaryIndexes(definitions: rows.compactMap { $0.string("definition") })
    }

    func create(_ db: PostgresConnection) throws {
        for definition in definitions { try db.execute(definition) }
    }
}
