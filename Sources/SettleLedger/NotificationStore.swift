import SettleModel

/// The ledger as App Store Server Notifications use it: storing each notification once with its
/// effect on orders, the revokes and refund-request answers they leave, the history cursor, and
/// what support reads about them. Both ledgers are one (`SQLiteLedger` on SQLite, `PostgresLedger` on
/// PostgreSQL): everything here is written once, over `TransactionalLedger`.
package protocol NotificationStore: LedgerStore {
    func claimDueRevocations(limit: Int, leaseSeconds: Int64, owner: LeaseOwner) throws(LedgerError) -> [(RevocationJob, Order)]
    func holds(_ job: RevocationJob) throws(LedgerError) -> Bool
    func recordRevocationWaiting(_ job: RevocationJob, reason: String, history: HistoryEntry) throws(LedgerError)
    func releaseRevocation(_ job: RevocationJob) throws(LedgerError)
    @discardableResult
    func recordRevocation(_ job: RevocationJob, state: String, error: String?, nextAttemptAt: Int64,
                          history: HistoryEntry) throws(LedgerError) -> Bool
    func claimDueConsumptionAnswers(limit: Int, leaseSeconds: Int64, owner: LeaseOwner) throws(LedgerError) -> [(ConsumptionJob, Order?)]
    func holds(_ job: ConsumptionJob) throws(LedgerError) -> Bool
    func deliveryEvidence(transactionId: String) throws(LedgerError) -> DeliveryEvidence
    func postponeConsumptionAnswer(_ job: ConsumptionJob, until: Int64, why: String) throws(LedgerError)
    @discardableResult
    func recordConsumptionAnswer(_ job: ConsumptionJob, state: String, body: String, appleStatus: Int?, error: String?,
                                 nextAttemptAt: Int64, history: HistoryEntry) throws(LedgerError) -> Bool

    func notification(uuid: String) throws(LedgerError) -> NotificationRecord?
    func notifications(orderId: String) throws(LedgerError) -> [NotificationRecord]
    func revocation(orderId: String) throws(LedgerError) -> (state: String, job: RevocationJob)?
    func newestNotificationAt() throws(LedgerError) -> Int64?
}

/// Every ledger settle opens: orders and grants, Apple's notifications, and transactions over
/// either engine.
package typealias SettleLedger = TransactionalLedger & NotificationStore

extension SQLiteLedger: NotificationStore {}
extension PostgresLedger: NotificationStore {}

extension TransactionalLedger {
    /// `settle assign`: an order without a user (`unclaimed_purchase`) gets its buyer and is due now.
    /// `accountToken`: the buyer's appAccountToken, owed to Apple (Set App Account Token) once the
    /// pass verified the purchase as theirs, so its renewals bind by themselves. `by`: who
    /// assigned it (the history says "by alice via cli: to user U: NOTE").
    package func assign(orderId: String, userId: String, note: String?, accountToken: String?,
                       by person: Operator? = nil) throws(LedgerError) {
        let now = time.unixSeconds
        let audit = try auditor(person)
        try writing { db in
            guard let row = try db.query("SELECT state, reason FROM orders WHERE order_id = ?\(db.dialect.lockRows)", [.text(orderId)]).first else {
                throw LedgerError.invalid("no order \(orderId) in the ledger")
            }
            guard row.string("state") == OrderState.needsAttention.rawValue,
                  row.string("reason") == AttentionReason.unclaimedPurchase.rawValue else {
                throw LedgerError.invalid("order \(orderId) is \(row.string("state") ?? "?") (\(row.string("reason") ?? "no reason")); "
                                          + "only needs_attention orders with reason unclaimed_purchase can be assigned")
            }
            try db.query("""
                UPDATE orders SET user_id = ?, state = 'pending', attempts = 0, next_attempt_at = ?, reason = NULL, last_error = NULL,
                       updated_at = ? WHERE order_id = ?
                """, [.text(userId), .integer(now), .integer(now), .text(orderId)])
            try db.appendHistory(orderId, HistoryEntry(at: now, kind: .assign, outcome: "assigned",
                                                       detail: Operator.attributed("to user \(userId)" + (note.map { ": \($0)" } ?? ""),
                                                                                   to: person)))
            if let accountToken { try db.queueAccountToken(orderId, token: accountToken, now: now) }
            if let audit, let person {
                try audit(db, AuditEntry(person, action: "assign", subject: orderId, at: now,
                                         detail: "to user \(userId)" + (note.map { ": \($0)" } ?? "")))
            }
        }
    }

    // MARK: - Reading

    package func notification(uuid: String) throws(LedgerError) -> NotificationRecord? {
        guard try hasNotificationTables() else { return nil }
        return try reading { db in
            try db.query("SELECT * FROM notifications WHERE uuid = ?", [.text(uuid)]).first.map(NotificationRecord.init(row:))
        }
    }

    /// The notifications about one order, oldest first.
    package func notifications(orderId: String) throws(LedgerError) -> [NotificationRecord] {
        guard try hasNotificationTables() else { return [] }
        return try reading { db in
            try db.query("SELECT * FROM notifications WHERE order_id = ? ORDER BY received_at, uuid", [.text(orderId)])
                .map(NotificationRecord.init(row:))
        }
    }

    /// When the newest notification arrived (Unix seconds), nil when none ever did.
    package func newestNotificationAt() throws(LedgerError) -> Int64? {
        guard try hasNotificationTables() else { return nil }
        return try reading { db in try db.query("SELECT max(received_at) AS newest FROM notifications").first?.int("newest") }
    }
}

extension NotificationStore {
    /// Claims for this process (`LeaseOwner.current`): the owner rescue checks (`SideQueue`).
    package func claimDueRevocations(limit: Int, leaseSeconds: Int64) throws(LedgerError) -> [(RevocationJob, Order)] {
        try claimDueRevocations(limit: limit, leaseSeconds: leaseSeconds, owner: .current)
    }

    package func claimDueConsumptionAnswers(limit: Int, leaseSeconds: Int64) throws(LedgerError) -> [(ConsumptionJob, Order?)] {
        try claimDueConsumptionAnswers(limit: limit, leaseSeconds: leaseSeconds, owner: .current)
    }
}
