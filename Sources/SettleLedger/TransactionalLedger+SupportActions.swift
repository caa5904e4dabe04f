import SettleBase
import SettleModel

/// Support's transfers and redeliveries (`support_actions`), written once for both engines: the
/// command or the web console records the request with a history row in one transaction; a pass
/// claims it (as revokes are claimed: the claim counts, the outcome is recorded only under the
/// claim it was taken with), runs its next step through the hook and records the step as done.
/// A crash between a hook call and its record resumes at the same step, under the same key.
extension TransactionalLedger {
    /// Records a transfer of `orderId`'s purchase to `toUser`, to be carried out by the next pass:
    /// revoke from the current holder, then grant to `toUser`, each under its own key. Refused
    /// (`LedgerError.invalid`, exit 65) unless the order is finished and holds the grant settle
    /// made for it, is not refunded or revoked, belongs to another user, and has no other
    /// transfer or redelivery open. The same transfer asked again while it waits for a person
    /// (its hook refused, or its attempts ran out) is due again now, under the same keys.
    @discardableResult
    package func requestTransfer(orderId: String, toUser: String, note: String, by person: Operator) throws(LedgerError) -> TransferRequest {
        let target = toUser
        guard !target.trimmingCharacters(in: .whitespaces).isEmpty else { throw .invalid("a transfer needs the user to move the purchase to (--to-user)") }
        let entry = AuditEntry(person, action: "transfer", subject: orderId, detail: "to user \(target): \(note)")
        return try supportRequest("transfer", orderId: orderId, note: note, audit: entry) { db, order, open, now in
            if let open {
                guard open.kind == .transfer, open.state == .waiting, open.toUser == target else {
                    throw LedgerError.invalid(SupportActionRules.busy(open))
                }
                try db.resume(open, now: now, by: person, note: note)
                return TransferRequest(orderId: orderId, number: open.number, fromUser: open.fromUser ?? order.userId, toUser: target,
                                       resumed: true)
            }
            try db.checkGranted(order, doing: "transfer")
            let owed = try db.hasOwedRevocation(orderId)
            if order.refund != nil || owed {
                throw LedgerError.invalid("order \(orderId)'s purchase was refunded or revoked" + (order.refund.map { " (\($0.kind))" } ?? "")
                                          + "; a purchase taken back cannot be transferred")
            }
            guard order.userId != target else {
                throw LedgerError.invalid("order \(orderId) already belongs to user \(target); nothing to transfer")
            }
            let number = try db.nextSupportNumber(orderId, kind: .transfer)
            try db.query("""
                INSERT INTO support_actions(order_id, kind, number, state, step, from_user, to_user, note, requested_by, requested_at,
                                            next_attempt_at, updated_at)
                VALUES (?, 'transfer', ?, 'pending', 'revoke', ?, ?, ?, ?, ?, ?, ?)
                """, [.text(orderId), .integer(Int64(number)), .text(order.userId), .text(target), .text(note), .text(person.label),
                      .integer(now), .integer(now), .integer(now)])
            try db.appendHistory(orderId, HistoryEntry(
                at: now, kind: .retry, outcome: "transfer_requested",
                detail: "transfer \(number) to \(target) (from \(order.userId)) requested by \(person.label): \(note)"))
            return TransferRequest(orderId: orderId, number: number, fromUser: order.userId, toUser: target, resumed: false)
        }
    }

    /// Records a redelivery of `orderId`: the next pass re-sends to the hook what settle last
    /// finished for it (its grant; a transfer's grant, or its revoke when the transfer ended
    /// there; a refund's revoke) under that step's original key. Refused (exit 65) for an order
    /// the hook never granted, or with a transfer or redelivery open; a redelivery waiting for
    /// a person is due again now.
    @discardableResult
    package func requestRedelivery(orderId: String, note: String, by person: Operator) throws(LedgerError) -> RedeliveryRequest {
        let entry = AuditEntry(person, action: "redeliver", subject: orderId, detail: note)
        return try supportRequest("redelivery", orderId: orderId, note: note, audit: entry) { db, order, open, now in
            if let open {
                guard open.kind == .redeliver, open.state == .waiting, let target = open.target, let key = open.targetKey else {
                    throw LedgerError.invalid(SupportActionRules.busy(open))
                }
                if let refund = order.refund, !target.isRevoke {
                    throw LedgerError.invalid(SupportActionRules.refunded(order, refund))
                }
                try db.resume(open, now: now, by: person, note: note)
                return RedeliveryRequest(orderId: orderId, number: open.number, target: target, idempotencyKey: key,
                                         userId: open.toUser ?? order.userId, resumed: true)
            }
            guard try db.wasDelivered(orderId), let purchase = order.verified else {
                throw LedgerError.invalid("order \(orderId) was never granted through the hook (\(order.state.rawValue)"
                                          + (order.reason.map { ", \($0)" } ?? "") + "); nothing to re-send")
            }
            guard order.state == .finished || order.refund != nil else {
                throw LedgerError.invalid("order \(orderId) is \(order.state.rawValue); settle is still working on it, nothing to re-send yet")
            }
            if let owed = try db.query("""
                SELECT state FROM revocations WHERE order_id = ? AND state IN ('pending','needs_attention') LIMIT 1
                """, [.text(orderId)]).first?.string("state") {
                // Re-sending the grant now would hand back what the owed revoke is about to take.
                let refund = order.refund.map { " (refunded: \($0.kind) at \(Timestamp.rfc3339(unixSeconds: $0.at)))" } ?? ""
                throw LedgerError.invalid("order \(orderId)'s purchase was taken back\(refund) and its revoke is still owed (\(owed)); "
                                          + "settle sends it, nothing to re-send yet")
            }
            let last = try db.lastFinishedStep(order, purchase: purchase)
            if let refund = order.refund, !last.target.isRevoke {
                // The grant was taken back (a refund whose revoke was cancelled, or a partial one):
                // re-sending it would hand back what the store refunded.
                throw LedgerError.invalid(SupportActionRules.refunded(order, refund))
            }
            let number = try db.nextSupportNumber(orderId, kind: .redeliver)
            try db.query("""
                INSERT INTO support_actions(order_id, kind, number, state, step, to_user, note, requested_by, target, target_key,
                                            target_number, requested_at, next_attempt_at, updated_at)
                VALUES (?, 'redeliver', ?, 'pending', 'resend', ?, ?, ?, ?, ?, ?, ?, ?, ?)
                """, [.text(orderId), .integer(Int64(number)), .text(last.userId), .text(note), .text(person.label),
                      .text(last.target.rawValue), .text(last.key), .from(last.transfer.map { Int64($0) }),
                      .integer(now), .integer(now), .integer(now)])
            let request = RedeliveryRequest(orderId: orderId, number: number, target: last.target, idempotencyKey: last.key,
                                            userId: last.userId, resumed: false)
            try db.appendHistory(orderId, HistoryEntry(
                at: now, kind: .retry, outcome: "redeliver_requested",
                detail: "redeliver \(number) of \(request.what) (key \(last.key)) requested by \(person.label): \(note)"))
            return request
        }
    }

    /// What every support request does first: it is refused without a note, or on a ledger older
    /// than the table; then `body` runs in one transaction, with the order locked, its open
    /// action (nil when none is open) and the time.
    /// `audit`: the request's audit entry, written in the same transaction once `body` succeeded.
    private func supportRequest<T>(_ noun: String, orderId: String, note: String, audit entry: AuditEntry,
                                   _ body: (any LedgerTransaction, Order, SupportAction?, Int64) throws -> T) throws(LedgerError) -> T {
        guard !note.trimmingCharacters(in: .whitespaces).isEmpty else { throw .invalid("a \(noun) needs a note: say why (a ticket number)") }
        guard try knowsSupportActions() else { throw .olderSchema(found: try schemaVersion(), needed: supportActionsSchema) }
        let now = time.unixSeconds
        let audited = try knowsAuditLog()
        return try writing { db in
            let result = try body(db, try db.lockedOrder(orderId), try db.openSupportAction(orderId), now)
            if audited {
                var stamped = entry
                stamped.at = now
                try db.audit(stamped)
            }
            return result
        }
    }

    /// Every transfer and redelivery of an order, oldest first (for `settle status`); none on a
    /// ledger older than the table.
    package func supportActions(orderId: String) throws(LedgerError) -> [SupportAction] {
        guard try knowsSupportActions() else { return [] }
        return try reading { db in
            try db.query("SELECT * FROM support_actions WHERE order_id = ? ORDER BY requested_at, kind, number", [.text(orderId)])
                .compactMap(SupportAction.init(row:))
        }
    }

    /// Due transfers and redeliveries (of `orderIds` only, when named), each claimed for
    /// `leaseSeconds` with the order as it is now.
    package func claimDueSupportActions(limit: Int, leaseSeconds: Int64, orderIds: [String] = [],
                                        owner: LeaseOwner = .current) throws(LedgerError) -> [(SupportAction, Order)] {
        guard try knowsSupportActions() else { return [] }
        let now = time.unixSeconds
        let named = orderIds.isEmpty ? "" : " AND q.order_id IN (\(orderIds.map { _ in "?" }.joined(separator: ",")))"
        let values = orderIds.map(LedgerValue.text)
        // Nearly every pass has none: one read (the partial index), and no write transaction.
        guard try reading({ db in try db.hasDue(SupportAction.self, now: now, where: named, values) }) else { return [] }
        return try writing { db in
            try db.claimDue(SupportAction.self, limit: limit, leaseSeconds: leaseSeconds, owner: owner, now: now,
                            where: named, values)
                .compactMap { action in try db.order(action.orderId).map { (action, $0) } }
        }
    }

    /// Whether this claim of the action is still current and unexpired: checked just before the
    /// hook runs. A grant's step is no longer held once the order was refunded (a refund recorded
    /// after the claim read the order: the next claim cancels it).
    package func holds(_ action: SupportAction) throws(LedgerError) -> Bool {
        let now = time.unixSeconds
        let grantStep = action.kind == .transfer ? action.step == .grant : !(action.target?.isRevoke ?? false)
        let unrefunded = " AND NOT EXISTS (SELECT 1 FROM orders WHERE order_id = ? AND refunded_at IS NOT NULL)"
        return try reading { db in
            try db.holds(action, now: now, and: grantStep ? unrefunded : "", grantStep ? [.text(action.orderId)] : [])
        }
    }

    /// Records what a step of a claimed action concluded, with its history row, under the claim
    /// it was taken with (false, and nothing changes, once the action was claimed again since).
    @discardableResult
    package func recordSupportStep(_ action: SupportAction, _ outcome: SupportStepOutcome, history: HistoryEntry) throws(LedgerError) -> Bool {
        let now = time.unixSeconds
        let done = "state = 'done', step = 'done', done_at = ?, last_error = NULL"
        let change: SideQueue.Change
        var effect: (any LedgerTransaction) throws -> Void = { _ in }
        switch outcome {
        case .revoked:
            change = .set("step = 'grant', revoked_at = ?, attempts = 0, last_error = NULL", [.integer(now)])
        case .granted:
            change = .set(done + ", granted_at = ?", [.integer(now), .integer(now)])
            if let to = action.toUser {
                effect = { db in
                    // The purchase is the new holder's: a later refund revokes it from them.
                    try db.query("UPDATE orders SET user_id = ?, updated_at = ? WHERE order_id = ?",
                                 [.text(to), .integer(now), .text(action.orderId)])
                    try db.query("UPDATE grants SET note = ? WHERE order_id = ?",
                                 [.text("held by \(to) since transfer \(action.number) from \(action.fromUser ?? "?")"),
                                  .text(action.orderId)])
                }
            }
        case .resent:
            change = .set(done, [.integer(now)])
        case let .failed(error, waiting, nextAttemptAt):
            change = .outcome(state: waiting ? "waiting" : "pending", nextAttemptAt: nextAttemptAt, error: error)
        case let .waitingForRoute(why):
            change = .hold(why: why)
        case let .cancelled(why, revokeAlreadyDone):
            change = .set("state = 'cancelled', last_error = ?", [.text(why)])
            if let revokeAlreadyDone {
                effect = { db in
                    // The transfer took the goods back already: the refund's revoke would take them twice.
                    try db.query("""
                        UPDATE revocations SET state = 'cancelled', last_error = ?, updated_at = ?
                        WHERE order_id = ? AND state = 'pending'
                        """, [.text(revokeAlreadyDone), .integer(now), .text(action.orderId)])
                }
            }
        }
        return try record(action, change, at: now, history: history, effect: effect)
    }

    /// Gives a claimed action back untouched: due again at once.
    package func releaseSupportAction(_ action: SupportAction) throws(LedgerError) { try release([action]) }

    /// The refund's revoke settle finished for an order (for a redelivery that re-sends it).
    package func finishedRevocation(orderId: String) throws(LedgerError) -> RevocationJob? {
        try reading { db in
            try db.query("SELECT * FROM revocations WHERE order_id = ? AND state = 'revoked' ORDER BY updated_at DESC LIMIT 1",
                         [.text(orderId)]).first.map(RevocationJob.init(row:))
        }
    }

    /// One transfer of an order, by number (for a redelivery of its step).
    package func transfer(orderId: String, number: Int) throws(LedgerError) -> SupportAction? {
        guard try knowsSupportActions() else { return nil }
        return try reading { db in
            try db.query("SELECT * FROM support_actions WHERE order_id = ? AND kind = 'transfer' AND number = ?",
                         [.text(orderId), .integer(Int64(number))]).first.flatMap(SupportAction.init(row:))
        }
    }

    private var supportActionsSchema: Int { isShared ? PostgresLedgerSchema.supportActionsVersion : LedgerSchema.supportActionsVersion }
}

/// What one step of a support action concluded.
package enum SupportStepOutcome: Sendable, Equatable {
    /// A transfer's revoke is done: its grant is next, under the same claim (due when the claim
    /// ends, should this host stop before it).
    case revoked
    /// A transfer's grant is done: the order's user is the new holder.
    case granted
    /// A redelivery was re-sent and answered.
    case resent
    /// The hook did not do it: again at `nextAttemptAt`, or `waiting` for a person.
    case failed(String, waiting: Bool, nextAttemptAt: Int64)
    /// No route for it is configured: it stays due, without using an attempt.
    case waitingForRoute(String)
    /// The purchase was taken back before the action could end. `revokeAlreadyDone`: the
    /// transfer revoked it already, so the refund's own revoke is cancelled with this reason.
    case cancelled(String, revokeAlreadyDone: String?)
}
