import Foundation
import SettleBase
import SettleModel

/// Which orders `settle status` lists.
package struct OrderFilter: Sendable, Equatable {
    package var state: OrderState?
    package var userId: String?
    package var transactionId: String?
    /// Only orders Apple refunded or revoked (`status --refunded`).
    package var refunded = false
    /// Several transactions at once (those behind an Apple order id); used instead of `transactionId`.
    package var transactionIds: [String] = []
    /// Orders whose backend stored this StoreKit appAccountToken.
    package var appAccountToken: String?
    /// Orders with this purchase token (`status --purchase-token-file`).
    package var purchaseToken: PurchaseToken?
    /// An order id a store shows the buyer, looked up with the store, used instead of
    /// `transactionId`: the orders holding that purchase (verified as it), or holding its token
    /// and not yet verified.
    package var storeOrder: StoreOrderMatch?
    package var limit: Int

    package init(state: OrderState? = nil, userId: String? = nil, transactionId: String? = nil, appAccountToken: String? = nil,
                limit: Int = 50) {
        self.appAccountToken = appAccountToken
        self.state = state
        self.userId = userId
        self.transactionId = transactionId
        self.limit = limit
    }
}

/// An order id a store shows the buyer (in its receipt email), with the purchase token the
/// store says is behind it.
package struct StoreOrderMatch: Sendable, Equatable {
    package var orderId: String
    package var token: PurchaseToken

    package init(orderId: String, token: PurchaseToken) {
        self.orderId = orderId
        self.token = token
    }
}

/// A consistent picture of the ledger for support.
package struct LedgerSummary: Sendable, Equatable {
    package var counts: [OrderState: Int]
    /// Age of the oldest order that is paid and not delivered (pending, in flight or needing a person).
    package var oldestUndeliveredSeconds: Int64?
    package var orders: [Order]
    /// How many orders match the filter; `orders` holds at most `limit` of them.
    package var matching: Int = 0
    /// Whether counts and age are of a subset (a user, a transaction) rather than the ledger.
    package var filtered = false
    /// Counts by store and state of the orders counted (`counts` is their sum over the stores).
    package var storeCounts: [Store: [OrderState: Int]] = [:]
    /// Google Play orders not yet finished, closest to Google's refund deadline first.
    package var refundDeadlines: [RefundDeadline] = []
    /// Orders whose transfer or redelivery waits for a person (its hook refused, or its attempts
    /// ran out), of the whole ledger, first few by order id; and how many there are.
    package var supportActionsWaiting: [String] = []
    package var supportActionsWaitingCount = 0
    /// The customers' refunds recorded in the last hour by store, of the whole ledger (`RefundHistory`).
    package var customerRefundsLastHour: [Store: Int] = [:]
}

/// What support does to orders settle could not settle by itself, and what status reads,
/// written once for both engines. `retry` and `resolve` only ever start from
/// `needs_attention` or `rejected`, and both are all or nothing.
extension TransactionalLedger {
    /// Puts `needs_attention` or `rejected` orders back to `pending`, due now, attempts reset.
    /// With `proof`, the one named order gets it as its proof; the previous proof stays in the
    /// ledger (a receipt by its hash in `receipts`, a signed transaction in the history row).
    @discardableResult
    /// `by`: who asked (the history says "by alice via web: NOTE").
    package func retry(orderIds: [String], note: String?, proof: ReplacementProof?,
                      by person: Operator? = nil) throws(LedgerError) -> [RetriedOrder] {
        guard proof == nil || orderIds.count == 1 else {
            throw .invalid("a new proof belongs to one order; name exactly one order with --receipt-file or --signed-transaction-file")
        }
        let now = time.unixSeconds
        let audit = try auditor(person)
        return try writing { db in
            var retried: [RetriedOrder] = []
            for id in orderIds {
                let order = try db.closable(id, doing: "retried")
                try Resolution.checkRetryable(order)
                var detail = Operator.attributed(note ?? "from \(order.state.rawValue)", to: person)
                var unchanged = true
                switch proof {
                case let .receipt(receipt)?:
                    let hash = SHA256.hex(Data(receipt.utf8))
                    unchanged = hash == order.receiptSHA256
                    try db.storeReceipt(receipt, sha256: hash, now: now)
                    try db.query("UPDATE orders SET receipt_sha256 = ? WHERE order_id = ?", [.text(hash), .text(id)])
                    detail += "\nnew proof: receipt sha256 \(hash)"
                        + (order.receiptSHA256.map { "; previous receipt sha256 \($0) (kept in receipts)" } ?? "")
                case let .signedTransaction(jws)?:
                    unchanged = jws == order.signedTransaction
                    // The replaced proof is kept where receipts are, by hash: the history names
                    // it, and status never prints a proof whole.
                    let previous = order.signedTransaction.map { SHA256.hex(Data($0.utf8)) }
                    if let old = order.signedTransaction, let previous { try db.storeReceipt(old, sha256: previous, now: now) }
                    try db.query("UPDATE orders SET signed_transaction = ? WHERE order_id = ?", [.text(jws), .text(id)])
                    detail += "\nnew proof: signed transaction sha256 \(SHA256.hex(Data(jws.utf8)))"
                        + (previous.map { "; previous signed transaction sha256 \($0) (kept in receipts)" } ?? "")
                case nil:
                    break
                }
                try db.putBackToPending(id, detail: detail, now: now)
                if let audit, let person {
                    let said = (note ?? "from \(order.state.rawValue)") + (proof == nil ? "" : "; new proof")
                    try audit(db, AuditEntry(person, action: "retry", subject: id, at: now, detail: said))
                }
                retried.append(RetriedOrder(orderId: id, previousState: order.state, previousReason: order.reason,
                                            proofUnchanged: unchanged, transactionId: order.transactionId))
            }
            return retried
        }
    }

    /// Closes `needs_attention` or `rejected` orders by hand, with the person's note. An order
    /// that holds Apple's grant and was granted by hand is `finished` (its grant stays, so the
    /// purchase is never granted again); any other granted by hand has its purchase recorded as
    /// granted outside settle (its transaction, or `transaction` when it names none), so the
    /// same purchase uploaded again is never delivered, and is `rejected`. The reason is the
    /// resolution, the note its last error, and the history says who decided: a person (`by`,
    /// when named: "by alice via cli: from needs_attention (...): NOTE").
    @discardableResult
    package func resolve(orderIds: [String], as resolution: Resolution, note: String,
                        transaction: String?, by person: Operator? = nil) throws(LedgerError) -> [(String, OrderState)] {
        let now = time.unixSeconds
        try Resolution.checkHandTransaction(transaction, orders: orderIds.count, resolution: resolution)
        let audit = try auditor(person)
        return try writing { db in
            var resolved: [(String, OrderState)] = []
            for id in orderIds {
                let order = try db.closable(id, doing: "resolved")
                let holdsGrant = try !db.query("SELECT 1 AS held FROM grants WHERE order_id = ?", [.text(id)]).isEmpty
                let state: OrderState = resolution == .grantedByHand && holdsGrant && order.verified != nil ? .finished : .rejected
                var recorded = ""
                if resolution == .grantedByHand && !holdsGrant {
                    let purchase = try Resolution.handGrant(order, transaction: transaction)
                    var holder = try db.holderOf(purchase)
                    if holder == nil {
                        // As recordOutsideGrant: a concurrent writer of the same key makes the insert a no-op.
                        let inserted = try db.query("""
                            INSERT INTO grants(grant_key, transaction_id, order_id, source, granted_at, note) VALUES (?, ?, NULL, 'outside', ?, ?)
                            ON CONFLICT DO NOTHING RETURNING grant_key
                            """, [.text(purchase.grantKey), .text(purchase.transactionId), .integer(now),
                                  .text(Resolution.handGrantNote(id, note: note))])
                        if inserted.isEmpty { holder = try db.holderOf(purchase) }
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
                // The history's kinds are fixed by the schema: a person's decision is recorded
                // as `retry`, the kind of every support action, with its own outcome.
                if let audit, let person {
                    let said = "\(resolution.rawValue): \(note)" + (transaction.map { " (transaction \($0))" } ?? "")
                    try audit(db, AuditEntry(person, action: "resolve", subject: id, at: now, detail: said))
                }
                let decided = Operator.attributed("from \(order.state.rawValue)" + (order.reason.map { " (\($0))" } ?? "") + ": \(note)" + recorded,
                                                  to: person)
                if resolution == .grantedByHand && order.store.mustBeToldOfDelivery {
                    // Granted, and the store must still hear it (Google refunds a purchase left
                    // unacknowledged): delivered, store finish pending, under a lease that has
                    // already run out, so the next pass tells the store and finishes it.
                    if order.verified == nil { try db.setVerified(id, try Resolution.handGrant(order, transaction: transaction)) }
                    let lease = db.newLease(LeaseOwner.current, now: now, seconds: 0)
                    try db.query("""
                        UPDATE orders SET state = 'delivering', reason = ?, last_error = ?, delivered_at = ?, finished_at = NULL,
                               next_attempt_at = ?, \(lease.sql), updated_at = ?
                        WHERE order_id = ?
                        """, [.text(resolution.rawValue), .text(note), .integer(now), .integer(now)] + lease.values + [.integer(now), .text(id)])
                    try db.appendHistory(id, HistoryEntry(at: now, kind: .retry, outcome: "resolved_\(resolution.rawValue)",
                                                          detail: decided + "; \(order.store.owner) is told at the next pass"))
                    resolved.append((id, .delivering))
                    continue
                }
                try db.finalize(id, state: state, reason: resolution.rawValue, error: note, environment: nil, now: now)
                try db.appendHistory(id, HistoryEntry(at: now, kind: .retry, outcome: "resolved_\(resolution.rawValue)", detail: decided))
                resolved.append((id, state))
            }
            return resolved
        }
    }

    // MARK: - Reads

    /// Counts by state, the oldest undelivered order's age and the matching orders, newest
    /// activity first, read in one snapshot.
    /// The orders closest to their store's refund deadline (stores whose descriptor has a refund
    /// window), soonest first: one indexed read a store, without the rest of the summary.
    package func refundDeadlines(limit: Int) throws(LedgerError) -> [RefundDeadline] {
        guard try namesOrderStores() else { return [] }
        let now = time.unixSeconds
        return try reading { db in try Self.refundDeadlines(db, now: now, limit: limit) }
    }

    private static func refundDeadlines(_ db: any LedgerTransaction, now: Int64, limit: Int, subject: String = "TRUE",
                                        _ subjectArguments: [LedgerValue] = []) throws -> [RefundDeadline] {
        var deadlines: [RefundDeadline] = []
        for store in Store.allCases {
            guard let window = store.refundWindowSeconds else { continue }
            deadlines += try db.query(RefundDeadline.query(store, window: window, subject: subject),
                                      [.integer(now)] + subjectArguments + [.integer(Int64(limit))])
                .compactMap { RefundDeadline(row: $0, store: store) }
        }
        return Array(deadlines.sorted { ($0.refundAt, $0.orderId) < ($1.refundAt, $1.orderId) }.prefix(limit))
    }

    /// The orders a question is about (a user, a transaction, a token) as SQL conditions and
    /// their arguments; none for the whole ledger. Counts and the oldest age follow this subject,
    /// not the state filter, so `--user u-42 --state rejected` still shows u-42's other orders.
    private static func subject(of filter: OrderFilter, givenAway: [String]) -> (conditions: [String], arguments: [LedgerValue]) {
        var conditions: [String] = []
        var arguments: [LedgerValue] = []
        if let user = filter.userId {
            // A customer's orders survive a transfer: the ones they bought and gave away are still
            // theirs to ask about (each one's history says who holds it now). Named by id, so each
            // side of the OR is an index probe, never a scan of the ledger.
            if givenAway.isEmpty {
                conditions.append("user_id = ?")
            } else {
                conditions.append("(user_id = ? OR order_id IN (\(Array(repeating: "?", count: givenAway.count).joined(separator: ","))))")
            }
            arguments += [.text(user)] + givenAway.map(LedgerValue.text)
        }
        // An Apple order id (from the customer's receipt email) is looked up with Apple first and
        // arrives here as the transactions behind it.
        let transactions = filter.transactionIds.isEmpty ? filter.transactionId.map { [$0] } ?? [] : filter.transactionIds
        if let match = filter.storeOrder {
            // A token names every period of a subscription: an order verified as another period is not this one's.
            conditions.append("(transaction_id = ? OR verified_transaction_id = ? OR original_transaction_id = ?"
                              + " OR (purchase_token = ? AND verified_transaction_id IS NULL))")
            arguments += [.text(match.orderId), .text(match.orderId), .text(match.orderId), .text(match.token.value)]
        } else if !transactions.isEmpty {
            let marks = Array(repeating: "?", count: transactions.count).joined(separator: ",")
            conditions.append("(transaction_id IN (\(marks)) OR verified_transaction_id IN (\(marks)) OR original_transaction_id IN (\(marks)))")
            for _ in 0..<3 { arguments += transactions.map(LedgerValue.text) }
        }
        if let token = filter.appAccountToken {
            conditions.append("lower(app_account_token) = lower(?)")
            arguments.append(.text(token))
        }
        if let token = filter.purchaseToken {
            conditions.append("purchase_token = ?")
            arguments.append(.text(token.value))
        }
        return (conditions, arguments)
    }

    /// The orders `user` bought and support transferred to someone else (at most 1,000).
    private func transferredAway(by user: String) throws(LedgerError) -> [String] {
        try reading { db in
            try db.query("""
                SELECT DISTINCT order_id FROM support_actions WHERE kind = 'transfer' AND from_user = ? ORDER BY order_id LIMIT 1000
                """, [.text(user)]).compactMap { $0.string("order_id") }
        }
    }

    package func summary(_ filter: OrderFilter) throws(LedgerError) -> LedgerSummary {
        let now = time.unixSeconds
        let supportActions = try knowsSupportActions()
        let givenAway = try filter.userId.map { user throws(LedgerError) in
            supportActions ? try transferredAway(by: user) : []
        } ?? []
        let (conditions, arguments) = Self.subject(of: filter, givenAway: givenAway)
        let subject = conditions.isEmpty ? "TRUE" : conditions.joined(separator: " AND ")
        let countsKept = conditions.isEmpty ? try keepsOrderCounts() : false
        let storeColumn = try namesOrderStores()
        return try reading { db in
            var counts = Dictionary(uniqueKeysWithValues: OrderState.allCases.map { ($0, 0) })
            var storeCounts = Dictionary(uniqueKeysWithValues: Store.allCases.map { store in
                (store, Dictionary(uniqueKeysWithValues: OrderState.allCases.map { ($0, 0) }))
            })
            // One read for every store and state. Kept by triggers where the schema has them
            // (SQLite's schema 9, PostgreSQL's 18, summing its slots): a GROUP BY over a million
            // rows is what made status slow.
            let store = storeColumn ? "store" : "'\(Store.ofUnnamedOrders.rawValue)' AS store"
            let counted = countsKept ? try db.query("SELECT store, state, n FROM order_counts")
                : try db.query("SELECT \(store), state, count(*) AS n FROM orders WHERE \(subject) GROUP BY 1, 2", arguments)
            for row in counted {
                guard let state = OrderState(rawValue: row.string("state") ?? ""), let name = row.string("store") else { continue }
                let store = Store(rawValue: name)
                let n = Int(row.int("n") ?? 0)
                counts[state, default: 0] += n
                storeCounts[store, default: [:]][state, default: 0] += n
            }
            // The whole ledger: one index probe per state (orders_state_created) rather than a scan
            // of the backlog. A subject (a user, a transaction) has few orders: read them through
            // the subject's own index, never the state's (`state || ''` keeps the planner off it,
            // which would walk every pending order of the ledger to find one user's).
            let oldest = conditions.isEmpty
                ? try db.query("""
                    SELECT min(m) AS oldest FROM (
                        SELECT min(created_at) AS m FROM orders WHERE state = 'pending' UNION ALL
                        SELECT min(created_at) FROM orders WHERE state = 'verifying' UNION ALL
                        SELECT min(created_at) FROM orders WHERE state = 'delivering' UNION ALL
                        SELECT min(created_at) FROM orders WHERE state = 'needs_attention') AS undelivered
                    """).first?.int("oldest")
                : try db.query("""
                    SELECT min(created_at) AS oldest FROM orders
                    WHERE state || '' IN ('pending', 'verifying', 'delivering', 'needs_attention') AND \(subject)
                    """, arguments).first?.int("oldest")
            var listed = subject
            var listArguments = arguments
            if let state = filter.state { listed += " AND state = ?"; listArguments.append(.text(state.rawValue)) }
            if filter.refunded { listed += " AND refunded_at IS NOT NULL" }
            // The counts are of the subject already: only refunds need counting apart.
            let matching = filter.refunded
                ? Int(try db.query("SELECT count(*) AS n FROM orders WHERE \(listed)", listArguments).first?.int("n") ?? 0)
                : filter.state.map { counts[$0] ?? 0 } ?? counts.values.reduce(0, +)
            let rows = try db.query("SELECT * FROM orders WHERE \(listed) ORDER BY updated_at DESC, order_id LIMIT ?",
                                    listArguments + [.integer(Int64(max(0, filter.limit)))])
            var summary = LedgerSummary(counts: counts, oldestUndeliveredSeconds: oldest.map { max(0, now.saturatingSubtracting($0)) },
                                        orders: rows.map { Order(row: $0) }, matching: matching, filtered: !conditions.isEmpty)
            summary.storeCounts = storeCounts
            if storeColumn {
                // Only the subject's clocks: `--user u-42` shows no other customer's.
                summary.refundDeadlines = try Self.refundDeadlines(db, now: now, limit: 20, subject: subject, arguments)
                if conditions.isEmpty {
                    summary.customerRefundsLastHour = try db.customerRefundsByStore(since: now - 3600)
                }
            }
            if supportActions {
                let waiting = try db.query("SELECT order_id FROM support_actions WHERE state = 'waiting' ORDER BY order_id")
                summary.supportActionsWaitingCount = waiting.count
                summary.supportActionsWaiting = waiting.prefix(10).compactMap { $0.string("order_id") }
            }
            return summary
        }
    }

    /// One order and its history, oldest first; nil when there is no such order.
    package func orderRecord(_ orderId: String) throws(LedgerError) -> (order: Order, history: [HistoryEntry])? {
        try reading { db in
            guard let row = try db.query("SELECT * FROM orders WHERE order_id = ?", [.text(orderId)]).first else { return nil }
            let history = try db.query("SELECT * FROM history WHERE order_id = ? ORDER BY id", [.text(orderId)]).map { row in
                HistoryEntry(at: row.int("at") ?? 0, kind: HistoryEntry.Kind(rawValue: row.string("kind") ?? "") ?? .verification,
                             outcome: row.string("outcome") ?? "", appleStatus: row.int("apple_status").map { Int($0) },
                             hookExit: row.int("hook_exit").map { Int($0) }, environment: row.string("environment"),
                             durationMs: row.int("duration_ms").map { Int($0) }, detail: row.string("detail"))
            }
            return (Order(row: row), history)
        }
    }

    /// Orders due for verification now, oldest due first (for `reconcile --dry-run`).
    package func dueOrders(limit: Int) throws(LedgerError) -> [Order] {
        let now = time.unixSeconds
        return try reading { db in
            try db.query("""
                SELECT * FROM orders WHERE state = 'pending' AND next_attempt_at <= ?
                ORDER BY next_attempt_at, order_id LIMIT ?
                """, [.integer(now), .integer(Int64(limit))]).map { Order(row: $0) }
        }
    }

    // MARK: - Retention

    /// Deletes history rows older than `days` of orders that ended (finished or rejected)
    /// before then (`retention.history_days`). Orders, grants and receipts stay: a grant is the
    /// proof that a purchase was delivered and is never pruned, and an order's row says what it
    /// became. Returns how many rows went.
    @discardableResult
    package func pruneHistory(olderThanDays days: Int) throws(LedgerError) -> Int {
        let cutoff = time.unixSeconds - Int64(days) * 86400
        return try writing { db in
            try db.changedRows("""
                DELETE FROM history WHERE at < ? AND order_id IN
                    (SELECT order_id FROM orders WHERE state IN ('finished','rejected') AND updated_at < ?)
                """, [.integer(cutoff), .integer(cutoff)])
        }
    }
}

extension LedgerTransaction {
    /// The order, if a person may retry or resolve it (locked for the transaction where rows
    /// are locked); otherwise the whole request is refused.
    /// An order handed back to the machine: pending, due now, attempts reset, its history naming why.
    package func putBackToPending(_ id: String, detail: String, now: Int64) throws {
        try query("""
            UPDATE orders SET state = 'pending', attempts = 0, next_attempt_at = ?, reason = NULL,
                   last_error = NULL, finished_at = NULL, updated_at = ? WHERE order_id = ?
            """, [.integer(now), .integer(now), .text(id)])
        try appendHistory(id, HistoryEntry(at: now, kind: .retry, outcome: "retried", detail: detail))
    }

    package func closable(_ id: String, doing verb: String) throws -> Order {
        guard let row = try query("SELECT * FROM orders WHERE order_id = ?\(dialect.lockRows)", [.text(id)]).first else {
            throw LedgerError.invalid("no order \(id) in the ledger")
        }
        let order = Order(row: row)
        guard order.state == .needsAttention || order.state == .rejected else {
            throw LedgerError.invalid("order \(id) is \(order.state.rawValue); only needs_attention or rejected orders can be \(verb)")
        }
        return order
    }
}
