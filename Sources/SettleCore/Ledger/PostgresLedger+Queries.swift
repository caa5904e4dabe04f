import Foundation

/// Status, support and housekeeping on the PostgreSQL ledger, as in the SQLite ledger's
/// `+Queries`, `+Support`, `+Retention` and `+Daemon`.
extension PostgresLedger {
    public func summary(_ filter: OrderFilter) throws(LedgerError) -> LedgerSummary {
        let now = time.unixSeconds
        var conditions: [String] = []
        var arguments: [PostgresValue] = []
        if let user = filter.userId { conditions.append("user_id = ?"); arguments.append(.text(user)) }
        let transactions = filter.transactionIds.isEmpty ? filter.transactionId.map { [$0] } ?? [] : filter.transactionIds
        if !transactions.isEmpty {
            let marks = Array(repeating: "?", count: transactions.count).joined(separator: ",")
            conditions.append("(transaction_id IN (\(marks)) OR verified_transaction_id IN (\(marks)) OR original_transaction_id IN (\(marks)))")
            for _ in 0..<3 { arguments += transactions.map(PostgresValue.text) }
        }
        if let token = filter.appAccountToken {
            conditions.append("lower(app_account_token) = lower(?)")
            arguments.append(.text(token))
        }
        if let token = filter.purchaseToken {
            conditions.append("purchase_token = ?")
            arguments.append(.text(token.value))
        }
        let subject = conditions.isEmpty ? "TRUE" : conditions.joined(separator: " AND ")
        return try read { db in
            var counts = Dictionary(uniqueKeysWithValues: OrderState.allCases.map { ($0, 0) })
            for row in try db.run("SELECT state, count(*) AS n FROM orders WHERE \(subject) GROUP BY state", arguments) {
                if let state = OrderState(rawValue: row.string("state") ?? "") { counts[state] = Int(row.int("n") ?? 0) }
            }
            let oldest = try db.run("""
                SELECT min(created_at) AS oldest FROM orders
                WHERE state IN ('pending','verifying','delivering','needs_attention') AND \(subject)
                """, arguments).first?.int("oldest")
            var listed = subject
            var listArguments = arguments
            if let state = filter.state { listed += " AND state = ?"; listArguments.append(.text(state.rawValue)) }
            // Refunds come from App Store Server Notifications, which a PostgreSQL ledger does not keep yet.
            if filter.refunded { listed += " AND FALSE" }
            let matching = filter.refunded ? 0 : filter.state.map { counts[$0] ?? 0 } ?? counts.values.reduce(0, +)
            let rows = try db.run("SELECT * FROM orders WHERE \(listed) ORDER BY updated_at DESC, order_id LIMIT ?",
                                  listArguments + [.integer(Int64(max(0, filter.limit)))])
            var summary = LedgerSummary(counts: counts, oldestUndeliveredSeconds: oldest.map { max(0, now - $0) },
                                        orders: rows.map(Order.init(row:)), matching: matching, filtered: !conditions.isEmpty)
            for row in try db.run("SELECT state, count(*) AS n FROM orders WHERE store = 'google_play' AND \(subject) GROUP BY state",
                                  arguments) {
                if let state = OrderState(rawValue: row.string("state") ?? "") { summary.googlePlayCounts[state] = Int(row.int("n") ?? 0) }
            }
            summary.playDeadlines = try db.run(PlayDeadline.query, [.integer(20)]).compactMap(PlayDeadline.init(row:))
            return summary
        }
    }

    public func orderRecord(_ orderId: String) throws(LedgerError) -> (order: Order, history: [HistoryEntry])? {
        try read { db in
            guard let row = try db.run("SELECT * FROM orders WHERE order_id = ?", [.text(orderId)]).first else { return nil }
            let history = try db.run("SELECT * FROM history WHERE order_id = ? ORDER BY id", [.text(orderId)]).map { row in
                HistoryEntry(at: row.int("at") ?? 0, kind: HistoryEntry.Kind(rawValue: row.string("kind") ?? "") ?? .verification,
                             outcome: row.string("outcome") ?? "", appleStatus: row.int("apple_status").map { Int($0) },
                             hookExit: row.int("hook_exit").map { Int($0) }, environment: row.string("environment"),
                             durationMs: row.int("duration_ms").map { Int($0) }, detail: row.string("detail"))
            }
            return (Order(row: row), history)
        }
    }

    public func dueOrders(limit: Int) throws(LedgerError) -> [Order] {
        let now = time.unixSeconds
        return try read { db in
            try db.run("SELECT * FROM orders WHERE state = 'pending' AND next_attempt_at <= ? ORDER BY next_attempt_at, order_id LIMIT ?",
                       [.integer(now), .integer(Int64(limit))]).map(Order.init(row:))
        }
    }

    // MARK: - Support

    public func retry(orderIds: [String], note: String?, proof: ReplacementProof?) throws(LedgerError) -> [RetriedOrder] {
        guard proof == nil || orderIds.count == 1 else {
            throw .invalid("a new proof belongs to one order; name exactly one order with --receipt-file or --signed-transaction-file")
        }
        let now = time.unixSeconds
        return try write { db in
            var retried: [RetriedOrder] = []
            for id in orderIds {
                let order = try closable(db, id, doing: "retried")
                try Resolution.checkRetryable(order)
                var detail = note ?? "from \(order.state.rawValue)"
                var unchanged = true
                switch proof {
                case let .receipt(receipt)?:
                    let hash = SHA256.hex(Data(receipt.utf8))
                    unchanged = hash == order.receiptSHA256
                    try db.run("INSERT INTO receipts(sha256, data, created_at) VALUES (?, ?, ?) ON CONFLICT DO NOTHING",
                               [.text(hash), .text(receipt), .integer(now)])
                    try db.run("UPDATE orders SET receipt_sha256 = ? WHERE order_id = ?", [.text(hash), .text(id)])
                    detail += "\nnew proof: receipt sha256 \(hash)"
                        + (order.receiptSHA256.map { "; previous receipt sha256 \($0) (kept in receipts)" } ?? "")
                case let .signedTransaction(jws)?:
                    unchanged = jws == order.signedTransaction
                    // The replaced proof is kept where receipts are, by hash (see Ledger.retry).
                    let previous = order.signedTransaction.map { SHA256.hex(Data($0.utf8)) }
                    if let old = order.signedTransaction, let previous {
                        try db.run("INSERT INTO receipts(sha256, data, created_at) VALUES (?, ?, ?) ON CONFLICT DO NOTHING",
                                   [.text(previous), .text(old), .integer(now)])
                    }
                    try db.run("UPDATE orders SET signed_transaction = ? WHERE order_id = ?", [.text(jws), .text(id)])
                    detail += "\nnew proof: signed transaction sha256 \(SHA256.hex(Data(jws.utf8)))"
                        + (previous.map { "; previous signed transaction sha256 \($0) (kept in receipts)" } ?? "")
                case nil:
                    break
                }
                try db.run("""
                    UPDATE orders SET state = 'pending', attempts = 0, next_attempt_at = ?, reason = NULL,
                           last_error = NULL, finished_at = NULL, updated_at = ? WHERE order_id = ?
                    """, [.integer(now), .integer(now), .text(id)])
                try appendHistory(db, id, HistoryEntry(at: now, kind: .retry, outcome: "retried", detail: detail))
                retried.append(RetriedOrder(orderId: id, previousState: order.state, previousReason: order.reason,
                                            proofUnchanged: unchanged, transactionId: order.transactionId))
            }
            return retried
        }
    }

    public func resolve(orderIds: [String], as resolution: Resolution, note: String,
                        transaction: String?) throws(LedgerError) -> [(String, OrderState)] {
        let now = time.unixSeconds
        try Resolution.checkHandTransaction(transaction, orders: orderIds.count, resolution: resolution)
        return try write { db in
            var resolved: [(String, OrderState)] = []
            for id in orderIds {
                let order = try closable(db, id, doing: "resolved")
                let holdsGrant = try !db.run("SELECT 1 AS held FROM grants WHERE order_id = ?", [.text(id)]).isEmpty
                let state: OrderState = resolution == .grantedByHand && holdsGrant && order.verified != nil ? .finished : .rejected
                var recorded = ""
                if resolution == .grantedByHand && !holdsGrant {
                    let purchase = try Resolution.handGrant(order, transaction: transaction)
                    var holder = try holderOf(db, purchase)
                    if holder == nil {
                        // As recordOutsideGrant: a concurrent writer of the same key makes the insert a no-op.
                        let inserted = try db.run("""
                            INSERT INTO grants(grant_key, transaction_id, order_id, source, granted_at, note) VALUES (?, ?, NULL, 'outside', ?, ?)
                            ON CONFLICT DO NOTHING RETURNING grant_key
                            """, [.text(purchase.grantKey), .text(purchase.transactionId), .integer(now),
                                  .text(Resolution.handGrantNote(id, note: note))])
                        if inserted.isEmpty { holder = try holderOf(db, purchase) }
                    }
                    switch holder {
                    case let .order(other)?:
                        throw LedgerError.invalid(Resolution.heldByOrder(purchase, holder: other, resolving: id))
                    case .outside?:
                        recorded = "; transaction \(purchase.transactionId) was already recorded as granted outside settle"
                    case nil:
                        recorded = "; transaction \(purchase.transactionId) recorded as granted outside settle"
                    }
                }
                try finalize(db, id, state: state, reason: resolution.rawValue, error: note, environment: nil, now: now)
                try appendHistory(db, id, HistoryEntry(at: now, kind: .retry, outcome: "resolved_\(resolution.rawValue)",
                                                       detail: "from \(order.state.rawValue)" + (order.reason.map { " (\($0))" } ?? "") + ": \(note)" + recorded))
                resolved.append((id, state))
            }
            return resolved
        }
    }

    /// As `Ledger.assign`: an order without a user (`unclaimed_purchase`) gets its buyer and is due now.
    public func assign(orderId: String, userId: String, note: String?) throws(LedgerError) {
        let now = time.unixSeconds
        try write { db in
            guard let row = try db.run("SELECT state, reason FROM orders WHERE order_id = ? FOR UPDATE", [.text(orderId)]).first else {
                throw LedgerError.invalid("no order \(orderId) in the ledger")
            }
            guard row.string("state") == OrderState.needsAttention.rawValue,
                  row.string("reason") == AttentionReason.unclaimedPurchase.rawValue else {
                throw LedgerError.invalid("order \(orderId) is \(row.string("state") ?? "?") (\(row.string("reason") ?? "no reason")); "
                                          + "only needs_attention orders with reason unclaimed_purchase can be assigned")
            }
            try db.run("""
                UPDATE orders SET user_id = ?, state = 'pending', attempts = 0, next_attempt_at = ?, reason = NULL, last_error = NULL,
                       updated_at = ? WHERE order_id = ?
                """, [.text(userId), .integer(now), .integer(now), .text(orderId)])
            try appendHistory(db, orderId, HistoryEntry(at: now, kind: .assign, outcome: "assigned",
                                                        detail: "to user \(userId)" + (note.map { ": \($0)" } ?? "")))
        }
    }

    private func closable(_ db: PostgresConnection, _ id: String, doing verb: String) throws -> Order {
        guard let row = try db.run("SELECT * FROM orders WHERE order_id = ? FOR UPDATE", [.text(id)]).first else {
            throw LedgerError.invalid("no order \(id) in the ledger")
        }
        let order = Order(row: row)
        guard order.state == .needsAttention || order.state == .rejected else {
            throw LedgerError.invalid("order \(id) is \(order.state.rawValue); only needs_attention or rejected orders can be \(verb)")
        }
        return order
    }

    public func pruneHistory(olderThanDays days: Int) throws(LedgerError) -> Int {
        let cutoff = time.unixSeconds - Int64(days) * 86400
        return try write { db in
            Int(try db.run("""
                WITH gone AS (DELETE FROM history WHERE at < ? AND order_id IN
                    (SELECT order_id FROM orders WHERE state IN ('finished','rejected') AND updated_at < ?) RETURNING 1)
                SELECT count(*) AS n FROM gone
                """, [.integer(cutoff), .integer(cutoff)]).first?.int("n") ?? 0)
        }
    }

    // MARK: - Once for all daemons

    public func appleBreaker() throws(LedgerError) -> AppleBreaker {
        try read { db in try PostgresLedger.breaker(db) }
    }

    /// The Apple breaker, shared by every daemon. When it is due for a probe, the first daemon
    /// to start a pass takes the probe by pushing `retry_at` one cooldown further in the same
    /// statement; the others read the pushed time and wait, so one host probes, not all.
    public func appleBreakerForPass() throws(LedgerError) -> AppleBreaker {
        let now = time.unixSeconds
        return try write { db in
            let probe = try db.run("""
                UPDATE apple_breaker SET retry_at = ? + greatest(cooldown_seconds, 1)
                WHERE id = 1 AND state = 'open' AND retry_at <= ?
                RETURNING 1 AS taken
                """, [.integer(now), .integer(now)]).isEmpty == false
            var breaker = try PostgresLedger.breaker(db)
            // Ours to probe: the caller sees it due now, as on a ledger of its own.
            if probe { breaker.retryAt = now }
            return breaker
        }
    }

    private static func breaker(_ db: PostgresConnection) throws -> AppleBreaker {
        guard let row = try db.run("SELECT * FROM apple_breaker WHERE id = 1").first else { return AppleBreaker() }
        return AppleBreaker(state: AppleBreaker.State(rawValue: row.string("state") ?? "") ?? .closed,
                            consecutiveFailures: Int(row.int("consecutive_failures") ?? 0),
                            cooldownSeconds: row.int("cooldown_seconds") ?? 0, retryAt: row.int("retry_at"),
                            lastError: AppleBreaker.storedError(row.string("last_error")).message,
                            lastErrorAt: AppleBreaker.storedError(row.string("last_error")).at)
    }

    public func saveAppleBreaker(_ breaker: AppleBreaker) throws(LedgerError) {
        let now = time.unixSeconds
        try write { db in
            try db.run("""
                UPDATE apple_breaker SET state = ?, consecutive_failures = ?, cooldown_seconds = ?, retry_at = ?,
                       last_error = ?, updated_at = ?
                WHERE id = 1
                """, [.text(breaker.state.rawValue), .integer(Int64(breaker.consecutiveFailures)), .integer(breaker.cooldownSeconds),
                      .from(breaker.retryAt), .from(breaker.storedLastError), .integer(now)])
        }
    }

    public func recordDaemonStarted(_ owner: LeaseOwner) throws(LedgerError) {
        let now = time.unixSeconds
        try write { db in
            try db.run("""
                INSERT INTO daemons(host, pid, process_start, started_at, heartbeat_at) VALUES (?, ?, ?, ?, \(PostgresLedger.databaseNow))
                ON CONFLICT (host, pid, process_start) DO UPDATE SET started_at = excluded.started_at,
                    heartbeat_at = excluded.heartbeat_at, stopped_at = NULL
                """, [.text(owner.host), .integer(Int64(owner.pid)), .text(owner.leaseStart), .integer(now)])
        }
    }

    public func recordDaemonPass(_ owner: LeaseOwner, summary: String) throws(LedgerError) {
        let now = time.unixSeconds
        try write { db in
            try db.run("""
                UPDATE daemons SET last_pass_at = ?, last_pass_summary = ?, heartbeat_at = \(PostgresLedger.databaseNow)
                WHERE host = ? AND pid = ? AND process_start = ?
                """, [.integer(now), .text(summary), .text(owner.host), .integer(Int64(owner.pid)), .text(owner.leaseStart)])
        }
    }

    public func recordDaemonStopped(_ owner: LeaseOwner) throws(LedgerError) {
        let now = time.unixSeconds
        try write { db in
            try db.run("UPDATE daemons SET stopped_at = ? WHERE host = ? AND pid = ? AND process_start = ?",
                       [.integer(now), .text(owner.host), .integer(Int64(owner.pid)), .text(owner.leaseStart)])
        }
    }

    public func daemonRecord() throws(LedgerError) -> DaemonRecord? {
        try read { db in
            try db.run("SELECT * FROM daemons ORDER BY started_at DESC, heartbeat_at DESC LIMIT 1").first.map(PostgresLedger.daemon)
        }
    }

    /// How long after its last heartbeat a daemon still counts as live in `settle status`.
    static let liveWindowSeconds: Int64 = 600

    public func liveDaemons() throws(LedgerError) -> [DaemonRecord] {
        try read { db in
            try db.run("""
                SELECT * FROM daemons WHERE stopped_at IS NULL AND heartbeat_at > \(PostgresLedger.databaseNow) - ?::bigint
                ORDER BY heartbeat_at DESC, host, pid
                """, [.integer(PostgresLedger.liveWindowSeconds)]).map(PostgresLedger.daemon)
        }
    }

    private static func daemon(_ row: PostgresRow) -> DaemonRecord {
        var record = DaemonRecord(owner: LeaseOwner(host: row.string("host") ?? "", pid: Int32(truncatingIfNeeded: row.int("pid") ?? 0),
                                                    leaseStart: row.string("process_start") ?? ""),
                                  startedAt: row.int("started_at") ?? 0, lastPassAt: row.int("last_pass_at"),
                                  lastPassSummary: row.string("last_pass_summary"), stoppedAt: row.int("stopped_at"))
        record.heartbeatAt = row.int("heartbeat_at")
        return record
    }
}
