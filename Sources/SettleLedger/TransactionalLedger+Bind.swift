import SettleBase
import SettleModel

/// What `settle bind` did: the fingerprints of the token stored and of the one it replaced.
package struct BoundOrder: Sendable, Equatable {
    package var orderId: String
    package var fingerprint: String
    package var replacedFingerprint: String?
}

/// `settle bind` and the console's Bind form (issue 36), once for both engines: the account token
/// of an order's user, stored with the order, and the order due now so the next pass verifies the
/// purchase against it. Nothing is granted here: the pass grants only when the purchase's token
/// equals the bound one, so a wrong token ends `user_mismatch`, never a grant to the wrong person.
extension TransactionalLedger {
    /// Binds `accountToken` to `orderId` (see `AccountTokenBinding` for which orders may be bound):
    /// refused, with nothing written, for a malformed token, a configuration that never reads a
    /// stored token (`binding`), an order in another state or reason, a different token already
    /// stored (unless `replace`), or a token another user's order carries (it would bind this
    /// purchase to that person). Token, history row, audit row and the order made due (pending,
    /// attempts reset) are one transaction. History and audit name the token by its fingerprint.
    @discardableResult
    package func bind(orderId: String, accountToken: String, note: String, replace: Bool = false, binding: UserBinding,
                      by person: Operator? = nil) throws(LedgerError) -> BoundOrder {
        if let refusal = AccountTokenBinding.configurationRefusal(binding) { throw .invalid(refusal.message) }
        let now = time.unixSeconds
        let audit = try auditor(person)
        return try writing { db in
            let order = try db.lockedOrder(orderId)
            if let refusal = AccountTokenBinding.orderRefusal(order) { throw LedgerError.invalid(refusal) }
            let token: String
            switch AccountTokenBinding.normalized(accountToken, store: order.store) {
            case let .success(normalized): token = normalized
            case let .failure(refusal): throw LedgerError.invalid("order \(orderId) not bound: \(refusal.message)")
            }
            let fingerprint = AccountTokenBinding.fingerprint(token)
            let previous = order.appAccountToken.flatMap { $0.isEmpty ? nil : $0 }
            let replaced = previous.flatMap { UserBinding.normalizedAccountId($0) == token ? nil : $0 }
            let label = order.store.descriptor.accountIdLabel
            if let replaced, !replace {
                throw LedgerError.invalid("order \(orderId) already carries another \(label) "
                                          + "(\(AccountTokenBinding.fingerprint(replaced))); give --replace to bind "
                                          + "\(fingerprint) instead")
            }
            // Two binds of one token to two users' orders, on two hosts at once, run one after the
            // other (PostgreSQL; SQLite's writers already do), so the second sees the first's token.
            if let lock = db.dialect.keyLock { try db.query(lock, [.text("bind:" + token)]) }
            if let other = try db.otherUsersOrder(carrying: token, besides: order) {
                throw LedgerError.invalid("order \(orderId) not bound: the \(label) \(fingerprint) is already bound to "
                                          + "order \(other), another user's; binding it here would give that person's "
                                          + "purchases to user \(order.userId)")
            }
            try db.query("""
                UPDATE orders SET app_account_token = ?, state = 'pending', attempts = 0, next_attempt_at = ?,
                       reason = NULL, last_error = NULL, finished_at = NULL, updated_at = ? WHERE order_id = ?
                """, [.text(token), .integer(now), .integer(now), .text(orderId)])
            let what = "bound \(label) \(fingerprint)"
                + (replaced.map { " (replacing \(AccountTokenBinding.fingerprint($0)))" } ?? "")
            let from = "from \(order.state.rawValue)" + (order.reason.map { " (\($0))" } ?? "")
            let detail = Operator.attributed("\(what), \(from): \(note)", to: person) + "; pending, due now"
            try db.appendHistory(orderId, HistoryEntry(at: now, kind: .retry, outcome: "account_token_bound",
                                                       detail: detail))
            if let audit, let person {
                try audit(db, AuditEntry(person, action: "bind", subject: orderId, at: now, detail: "\(what): \(note)"))
            }
            return BoundOrder(orderId: orderId, fingerprint: fingerprint,
                              replacedFingerprint: replaced.map(AccountTokenBinding.fingerprint))
        }
    }
}

extension LedgerTransaction {
    /// An order of the same store, of another user (as its holder or its buyer), whose backend
    /// stored `token` or that settle owes Apple with it (`account_token_updates`): the token stands
    /// for that user. A UUID compares in any case; the first such order's id, nil when none.
    func otherUsersOrder(carrying token: String, besides order: Order) throws -> String? {
        let user = LedgerValue.text(order.userId)
        if let row = try query(AccountTokenSQL.otherUsersOrder,
                               [.text(token), .text(order.store.rawValue), .text(order.orderId), user, user]).first {
            return row.string("order_id")
        }
        return try query("""
            SELECT o.order_id FROM account_token_updates u JOIN orders o ON o.order_id = u.order_id
            WHERE lower(u.app_account_token) = lower(?) AND o.order_id <> ? AND o.user_id <> ?
            ORDER BY o.order_id LIMIT 1
            """, [.text(token), .text(order.orderId), user]).first?.string("order_id")
    }
}
