import SettleBase
import SettleModel

// The rules and reads behind `requestTransfer` and `requestRedelivery`, inside their transaction.

/// The messages of support actions' refusals.
package enum SupportActionRules {
    static func busy(_ open: SupportAction) -> String {
        let what = open.kind == .transfer ? "transfer \(open.number) to \(open.toUser ?? "?")" : "redelivery \(open.number)"
        let state = open.state == .waiting ? "waits for a person (\(open.lastError ?? "no reason recorded"))" : "is in progress (step \(open.step.rawValue))"
        let again = open.state == .waiting && open.kind == .transfer
            ? "; ask for the same transfer again to resume it once the hook is fixed" : ""
        return "order \(open.orderId) has \(what), requested by \(open.requestedBy), that \(state); one transfer or redelivery at a time\(again)"
    }

    /// A redelivery of a grant the store took back.
    static func refunded(_ order: Order, _ refund: Refund) -> String {
        "order \(order.orderId)'s purchase was refunded (\(refund.kind)" + (refund.reason.map { ", reason \($0)" } ?? "")
            + ") at \(Timestamp.rfc3339(unixSeconds: refund.at)); its grant is not re-sent: that would hand back what the store took back"
    }
}

extension SupportAction: SideQueueJob {
    package static let queue = SideQueue(table: "support_actions", key: ["order_id", "kind", "number"],
                                         order: ["next_attempt_at", "order_id"])
    package var queueKey: [LedgerValue] { [.text(orderId), .text(kind.rawValue), .integer(Int64(number))] }

    /// The action stored in a `support_actions` row.
    package init?(row: any LedgerRow) {
        guard let orderId = row.string("order_id"), let kind = Kind(rawValue: row.string("kind") ?? ""),
              let state = State(rawValue: row.string("state") ?? ""), let step = Step(rawValue: row.string("step") ?? "") else { return nil }
        self.init(orderId: orderId, kind: kind, number: Int(row.int("number") ?? 0), state: state, step: step,
                  fromUser: row.string("from_user"), toUser: row.string("to_user"), note: row.string("note") ?? "",
                  requestedBy: row.string("requested_by") ?? "", target: row.string("target").flatMap(Target.init(rawValue:)),
                  targetKey: row.string("target_key"), targetNumber: row.int("target_number").map { Int($0) },
                  requestedAt: row.int("requested_at") ?? 0, revokedAt: row.int("revoked_at"), grantedAt: row.int("granted_at"),
                  doneAt: row.int("done_at"), attempts: row.count("attempts"), nextAttemptAt: row.int("next_attempt_at") ?? 0,
                  lastError: row.string("last_error"), claim: row.int("claim") ?? 0)
    }
}

extension LedgerTransaction {
    /// The order, locked for the transaction where rows are locked.
    func lockedOrder(_ id: String) throws -> Order {
        guard let row = try query("SELECT * FROM orders WHERE order_id = ?\(dialect.lockRows)", [.text(id)]).first else {
            throw LedgerError.invalid("no order \(id) in the ledger")
        }
        return Order(row: row)
    }

    func openSupportAction(_ orderId: String) throws -> SupportAction? {
        try query("SELECT * FROM support_actions WHERE order_id = ? AND state IN ('pending','waiting')", [.text(orderId)])
            .first.flatMap(SupportAction.init(row:))
    }

    func nextSupportNumber(_ orderId: String, kind: SupportAction.Kind) throws -> Int {
        Int(try query("SELECT coalesce(max(number), 0) + 1 AS n FROM support_actions WHERE order_id = ? AND kind = ?",
                      [.text(orderId), .text(kind.rawValue)]).first?.int("n") ?? 1)
    }

    /// A waiting action asked for again: due now, its attempts counted afresh, same keys.
    func resume(_ action: SupportAction, now: Int64, by person: Operator, note: String) throws {
        try query("""
            UPDATE support_actions SET state = 'pending', attempts = 0, next_attempt_at = ?, updated_at = ?
            WHERE order_id = ? AND kind = ? AND number = ?
            """, [.integer(now), .integer(now)] + action.queueKey)
        try appendHistory(action.orderId, HistoryEntry(
            at: now, kind: .retry, outcome: "\(action.kind.rawValue)_resumed",
            detail: "\(action.name) resumed at step \(action.step.rawValue) by \(person.label): \(note)"
                + (action.lastError.map { "; it waited: \($0)" } ?? "")))
    }

    /// Refuses an order whose purchase settle did not grant through the hook and still holds.
    func checkGranted(_ order: Order, doing verb: String) throws {
        let holds = try !query("SELECT 1 AS held FROM grants WHERE order_id = ? AND source = 'settle'", [.text(order.orderId)]).isEmpty
        guard holds, try wasDelivered(order.orderId) else {
            throw LedgerError.invalid("order \(order.orderId) was never granted (\(order.state.rawValue)"
                                      + (order.reason.map { ", \($0)" } ?? "") + "); nothing to \(verb)")
        }
        guard order.state == .finished else {
            throw LedgerError.invalid("order \(order.orderId) is \(order.state.rawValue); only a finished order can be \(verb)red "
                                      + "(wait until its store was told of the delivery)")
        }
    }

    /// Whether the hook ever confirmed delivering the order's grant.
    func wasDelivered(_ orderId: String) throws -> Bool {
        try !query("""
            SELECT 1 AS delivered FROM history WHERE order_id = ? AND kind = 'delivery' AND outcome = 'delivered' LIMIT 1
            """, [.text(orderId)]).isEmpty
    }

    /// A refund took the order's purchase back: a redelivery of its grant (or of a transfer's
    /// grant) that has not run would hand it back after the refund's revoke, so it is cancelled,
    /// pending or waiting for a person, with a history row naming the refund. Called in the
    /// transaction that records the refund, on every store.
    package func cancelGrantRedeliveries(_ orderId: String, refund why: String, now: Int64) throws {
        let cancelled = try query("""
            UPDATE support_actions SET state = 'cancelled', last_error = ?, updated_at = ?
            WHERE order_id = ? AND kind = 'redeliver' AND state IN ('pending','waiting') AND target IN ('grant','transfer_grant')
            RETURNING number
            """, [.text("cancelled by the refund: \(why)"), .integer(now), .text(orderId)])
        for row in cancelled {
            try appendHistory(orderId, HistoryEntry(
                at: now, kind: .retry, outcome: "redeliver_cancelled",
                detail: "redeliver \(row.int("number") ?? 0): cancelled, the grant it would re-send was taken back: \(why)"))
        }
    }

    func hasOwedRevocation(_ orderId: String) throws -> Bool {
        try !query("SELECT 1 AS owed FROM revocations WHERE order_id = ? AND state <> 'cancelled' LIMIT 1", [.text(orderId)]).isEmpty
    }

    /// What settle last finished for a delivered order, in the order things happen to it: its
    /// grant, then each transfer's revoke and grant, then a refund's revoke (a transfer is
    /// refused once refunded, and a refund's revoke waits for an open transfer).
    func lastFinishedStep(_ order: Order, purchase: VerifiedPurchase) throws
        -> (target: SupportAction.Target, key: String, userId: String, transfer: Int?) {
        if let row = try query("""
            SELECT transaction_id, round FROM revocations WHERE order_id = ? AND state = 'revoked' ORDER BY updated_at DESC LIMIT 1
            """, [.text(order.orderId)]).first, let txn = row.string("transaction_id") {
            return (.revoke, SupportAction.revokeKey(transactionId: txn, round: row.count("round", default: 1)), order.userId, nil)
        }
        if let row = try query("""
            SELECT * FROM support_actions WHERE order_id = ? AND kind = 'transfer' AND revoked_at IS NOT NULL
            ORDER BY number DESC LIMIT 1
            """, [.text(order.orderId)]).first, let transfer = SupportAction(row: row) {
            if transfer.grantedAt != nil {
                return (.transferGrant, SupportAction.transferKey(orderId: order.orderId, number: transfer.number, step: .grant),
                        transfer.toUser ?? order.userId, transfer.number)
            }
            return (.transferRevoke, SupportAction.transferKey(orderId: order.orderId, number: transfer.number, step: .revoke),
                    transfer.fromUser ?? order.userId, transfer.number)
        }
        return (.grant, purchase.grantKey, order.userId, nil)
    }
}
