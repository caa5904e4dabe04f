import SettleBase
import SettleModel
import SettleLedger

/// Each store's pacer buckets as the hosts saved them (`pacer_buckets`), and the time its
/// backlog takes at the rate its binding bucket allows, for `settle status`.
extension StatusView {
    /// One bucket summed over the hosts that saved it within the live window.
    package struct PacedBucket: Sendable, Equatable {
        /// Requests a second across every host sharing the rate: a host that has not saved the
        /// bucket yet is taken to run at the average of those that did.
        package var storeRate: Double { hosts > 0 ? rate * Double(max(sharedBy, hosts)) / Double(hosts) : 0 }

        package var key: PacerKey
        /// Requests a second all hosts together are granted now, and their ceilings summed.
        package var rate: Double
        package var ceilingRate: Double
        package var configuredRate: Double
        /// Hosts that saved this bucket, and how many hosts share the store's rate (the most any saved).
        package var hosts: Int
        package var sharedBy: Int
        package var grantedLastPass: Int
        package var throttles: Int
        package var floorThrottles: Int
        package var waits: Int
    }

    /// The groups an order's verification uses: the bucket among them with the least rate binds
    /// how fast the store's backlog drains.
    static func verificationGroups(_ store: Store) -> Set<String> {
        StoreModules.all.first { $0.descriptor.store == store }?.verificationRateGroups ?? []
    }

    package static func pacedBuckets(_ records: [PacerBucketRecord]) -> [PacedBucket] {
        var byKey: [PacerKey: PacedBucket] = [:]
        var order: [PacerKey] = []
        for record in records {
            let s = record.snapshot
            if byKey[s.key] == nil { order.append(s.key) }
            var b = byKey[s.key] ?? PacedBucket(key: s.key, rate: 0, ceilingRate: 0, configuredRate: 0, hosts: 0, sharedBy: 1,
                                                grantedLastPass: 0, throttles: 0, floorThrottles: 0, waits: 0)
            b.sharedBy = max(b.sharedBy, record.hosts)
            b.rate += s.rate
            b.ceilingRate += s.ceilingRate
            b.configuredRate = max(b.configuredRate, s.configuredRate)
            b.hosts += 1
            b.grantedLastPass += record.grantedLastPass
            b.throttles += s.throttles
            b.floorThrottles += s.floorThrottles
            b.waits += s.waits
            byKey[s.key] = b
        }
        return order.compactMap { byKey[$0] }
    }


    /// The bucket that binds `store`'s backlog: the slowest production verification bucket, else
    /// the slowest of any environment; nil when no host saved one.
    package static func bindingBucket(_ store: Store, _ buckets: [PacedBucket]) -> PacedBucket? {
        let groups = verificationGroups(store)
        let mine = buckets.filter { $0.key.store == store.rawValue && groups.contains($0.key.group) }
        let production = mine.filter { $0.key.environment.lowercased() == "production" }
        return (production.isEmpty ? mine : production).min { $0.storeRate < $1.storeRate }
    }

    /// Whether the bucket's rate is learned from the store's 429s (verifyReceipt), not published.
    package static func isLearned(_ key: PacerKey) -> Bool { StoreRateLimits.learns(key) }

    /// "transaction_info (Production) 48/s of 50/s (2 hosts, 24/s each); 1204 requests last pass, 3 throttled (429), 0 at the floor rate, 12 waits";
    /// a learned rate: "verify_receipt (Production) 196/s learned (ceiling 1000/s); ...".
    package static func text(bucket b: PacedBucket) -> String {
        let configured = Pacer.formatRate(b.configuredRate)
        let of = isLearned(b.key) ? "learned (ceiling \(configured)/s)" : "of \(configured)/s"
        var line = "\(b.key.group) (\(b.key.environment)) \(Pacer.formatRate(b.storeRate))/s \(of)"
        if b.sharedBy > 1 {
            line += " (\(b.sharedBy) hosts, \(Pacer.formatRate(b.storeRate / Double(b.sharedBy)))/s each"
                + (b.hosts < b.sharedBy ? ", \(b.hosts) reporting" : "") + ")"
        }
        line += "; \(Plural.count(b.grantedLastPass, "request")) last pass"
        if b.throttles > 0 { line += ", \(b.throttles) throttled (429), \(b.floorThrottles) at the floor rate" }
        if b.waits > 0 { line += ", \(Plural.count(b.waits, "wait"))" }
        return line
    }

    /// The per-store pacer lines of the status text, indented under the store's line.
    package static func pacerText(_ store: Store, summary: LedgerSummary, buckets: [PacedBucket]) -> String {
        var out = ""
        for b in buckets where b.key.store == store.rawValue { out += "  pacer: " + text(bucket: b) + "\n" }
        let due = summary.storeCounts[store]?[.pending] ?? 0
        if due > 0, let binding = bindingBucket(store, buckets) {
            out += "  backlog: " + DrainTime.text(due: due, rate: binding.storeRate) + " (\(binding.key.group))\n"
        }
        return out
    }

    /// `pacer` in `settle status --json`: each store's buckets and its backlog's drain time.
    package static func json(pacer buckets: [PacedBucket], summary: LedgerSummary) -> JSONValue {
        .object(Store.allCases.map { store in
            let mine = buckets.filter { $0.key.store == store.rawValue }
            let due = summary.storeCounts[store]?[.pending] ?? 0
            var backlog: JSONValue = .null
            if let binding = bindingBucket(store, buckets) {
                let seconds = DrainTime.seconds(due: due, rate: binding.storeRate)
                backlog = .object([
                    ("due", .number(due)), ("group", .string(binding.key.group)), ("rate", .number(Pacer.formatRate(binding.storeRate))),
                    ("seconds", seconds.isFinite ? .number(String(Int(saturating: seconds.rounded()))) : .null),
                    ("text", .string(DrainTime.text(due: due, rate: binding.storeRate))),
                ])
            }
            return (store.rawValue, .object([
                ("buckets", .array(mine.map { b in
                    .object([
                        ("group", .string(b.key.group)), ("environment", .string(b.key.environment)),
                        ("rate", .number(Pacer.formatRate(b.storeRate))), ("configured_rate", .number(Pacer.formatRate(b.configuredRate))),
                        ("learned", .bool(isLearned(b.key))),
                        ("hosts", .number(b.sharedBy)), ("hosts_reporting", .number(b.hosts)),
                        ("requests_last_pass", .number(b.grantedLastPass)), ("throttled", .number(b.throttles)),
                        ("throttled_at_floor", .number(b.floorThrottles)), ("waits", .number(b.waits)),
                    ])
                })),
                ("backlog", backlog),
            ]))
        })
    }
}
