import SettleBase
import SettleModel

/// One host's pacer bucket as its daemon last saved it (`pacer_buckets`), for `settle status`
/// and the metrics. The ledger keeps rates in thousandths of a request a second.
package struct PacerBucketRecord: Sendable, Equatable {
    package var host: String
    package var snapshot: PacerSnapshot
    /// The hosts sharing the store's rate when it was saved (this one included).
    package var hosts: Int
    /// Requests granted between the host's last two saves, and the seconds between them.
    package var grantedLastPass: Int
    package var passSeconds: Int64
    package var updatedAt: Int64

    /// Requests a second over the host's last pass, when it knows (nil at the first save).
    package var recentRate: Double? { passSeconds > 0 ? Double(grantedLastPass) / Double(passSeconds) : nil }

    init?(row: some LedgerRow) {
        guard let host = row.string("host"), let store = row.string("store"), let group = row.string("endpoint_group"),
              let environment = row.string("environment") else { return nil }
        func rate(_ column: String) -> Double { Double(row.int(column) ?? 0) / 1000 }
        let hosts = Int(row.int("hosts") ?? 1)
        self.host = host
        self.hosts = max(1, hosts)
        snapshot = PacerSnapshot(key: PacerKey(store: store, group: group, environment: environment), rate: rate("rate_milli"),
                                 ceilingRate: rate("ceiling_milli"), configuredRate: rate("configured_milli"),
                                 share: 1 / Double(max(1, hosts)), granted: Int(row.int("granted") ?? 0),
                                 throttles: Int(row.int("throttled") ?? 0), floorThrottles: Int(row.int("floor_throttled") ?? 0),
                                 waits: Int(row.int("waits") ?? 0))
        grantedLastPass = Int(row.int("granted_last_pass") ?? 0)
        passSeconds = row.int("pass_seconds") ?? 0
        updatedAt = row.int("updated_at") ?? 0
    }
}

/// Each host's pacer buckets, written once for both engines: one upsert per bucket, at most
/// once a pass, so showing them costs the stores nothing and the ledger little.
extension TransactionalLedger {
    package func savePacerBuckets(host: String, hosts: Int, _ snapshots: [PacerSnapshot]) throws(LedgerError) {
        guard !snapshots.isEmpty, try knowsPacerBuckets() else { return }
        let now = time.unixSeconds
        func milli(_ rate: Double) -> LedgerValue { .integer(Int64((rate * 1000).rounded())) }
        try writing { db in
            for s in snapshots {
                // The counters are the process's: one lower than the row's is a restarted daemon,
                // whose whole count is its last pass.
                try db.query("""
                    INSERT INTO pacer_buckets(host, store, endpoint_group, environment, rate_milli, ceiling_milli, configured_milli,
                                              hosts, granted, throttled, floor_throttled, waits, updated_at)
                    VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                    ON CONFLICT (host, store, endpoint_group, environment) DO UPDATE SET
                        granted_last_pass = CASE WHEN excluded.granted >= pacer_buckets.granted
                                                 THEN excluded.granted - pacer_buckets.granted ELSE excluded.granted END,
                        pass_seconds = excluded.updated_at - pacer_buckets.updated_at,
                        rate_milli = excluded.rate_milli, ceiling_milli = excluded.ceiling_milli,
                        configured_milli = excluded.configured_milli, hosts = excluded.hosts, granted = excluded.granted,
                        throttled = excluded.throttled, floor_throttled = excluded.floor_throttled, waits = excluded.waits,
                        updated_at = excluded.updated_at
                    """, [.text(host), .text(s.key.store), .text(s.key.group), .text(s.key.environment), milli(s.rate),
                          milli(s.ceilingRate), milli(s.configuredRate), .integer(Int64(max(1, hosts))), .integer(Int64(s.granted)),
                          .integer(Int64(s.throttles)), .integer(Int64(s.floorThrottles)), .integer(Int64(s.waits)), .integer(now)])
            }
        }
    }

    /// The buckets saved since `since` (unix seconds), by store, group, environment and host.
    package func pacerBuckets(since: Int64) throws(LedgerError) -> [PacerBucketRecord] {
        guard try knowsPacerBuckets() else { return [] }
        return try reading { db in
            try db.query("""
                SELECT * FROM pacer_buckets WHERE updated_at >= ? ORDER BY store, endpoint_group, environment, host
                """, [.integer(since)]).compactMap { PacerBucketRecord(row: $0) }
        }
    }
}
