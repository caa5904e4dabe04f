import Foundation
import SettleModel

/// What reserving one of Apple's confirmed purchases for an order did.
package enum VerifiedResult: Sendable, Equatable {
    /// The order holds the grant row of this purchase now and is `delivering`.
    case delivering(Order)
    /// Every candidate is granted to other orders: `rejected` (`already_granted`).
    case alreadyGranted(String)
    /// The order's purchase was granted outside settle: `finished` without a hook call
    /// (reason `already_delivered`).
    case alreadyDelivered(String)
    /// The order's purchase was granted outside settle, and its store must still be told
    /// (`Store.mustBeToldOfDelivery`): `delivering`, delivered, store finish pending; no hook call.
    case deliveredOutside(Order, String)
    /// Apple's answer rules out the purchase this order already holds: `rejected` with that reason.
    case rejected(RejectionReason, String)
    /// The order already holds a purchase that Apple no longer lists; it now needs a person.
    case grantConflict(String)
    /// Our claim was taken back meanwhile (lease expired and rescued); nothing written.
    case leaseLost
}

/// What the hook's "already granted" answer led to.
package enum GrantedOutsideResult: Sendable, Equatable {
    /// The order named that purchase: `finished`, reason `already_delivered`.
    case finished
    /// The order was matched by product: it is back in `verifying` (still ours) to be matched
    /// again, the purchase now recorded as granted outside settle.
    case rematch(Order)
    /// The order was matched by product, and its purchase may have reached the hook before
    /// (see `GrantChoice.earlierHandOff`): `needs_attention` (`already_granted_unclear`), the
    /// purchase still held by the order, never matched to another one.
    case unclear(String)
    case leaseLost
}

/// Who holds a grant key.
package enum GrantHolder: Sendable, Equatable {
    case order(String)
    /// Granted outside settle (the backend's own flow), as the hook or `grant-recorded` said.
    case outside(note: String?)

    package var description: String {
        switch self {
        case let .order(id): return "order \(id)"
        case .outside: return "outside settle"
        }
    }
}

/// What `settle grant-recorded` did.
package enum OutsideGrantResult: Sendable, Equatable {
    case recorded
    /// Already recorded as granted outside settle: nothing changed.
    case alreadyRecorded
    /// settle granted it to this order: the customer may have received it twice.
    case grantedBySettle(orderId: String)
}

/// Grants: the one table that makes "an Apple purchase is granted at most once" true, on one
/// host and across hosts (the primary key on `grant_key`; a reservation that loses a race to
/// another host moves on to the next candidate). Written once for both engines.
extension TransactionalLedger {
    /// Reserves the first of Apple's candidates that nobody holds for this order and moves it
    /// to `delivering`, all in one transition: the choice and the reservation are one step, so
    /// concurrent orders (in this process or on another host) can never pick the same purchase.
    /// A candidate this order already holds (an earlier attempt reserved it) comes first.
    package func recordVerified(orderId: String, owner: LeaseOwner, fence: Int64?, match: Match, deliveryLeaseSeconds: Int64,
                               history: HistoryEntry) throws(LedgerError) -> VerifiedResult {
        try transition(verifying(VerifiedAnswer(orderId: orderId, fence: fence, match: match, history: history),
                                 owner: owner, deliveryLeaseSeconds: deliveryLeaseSeconds,
                                 transfers: try knowsSupportActions()))
    }

    package func recordVerified(_ answer: VerifiedAnswer, owner: LeaseOwner, deliveryLeaseSeconds: Int64,
                                then done: @escaping (Result<VerifiedResult, LedgerError>) -> Void) {
        let transfers: Bool
        do {
            transfers = try knowsSupportActions()
        } catch {
            return done(.failure(error))
        }
        transition(verifying(answer, owner: owner, deliveryLeaseSeconds: deliveryLeaseSeconds, transfers: transfers),
                   then: done)
    }

    /// The transition `recordVerified` runs.
    private func verifying(_ answer: VerifiedAnswer, owner: LeaseOwner, deliveryLeaseSeconds: Int64,
                           transfers: Bool) -> (any LedgerTransaction) throws -> VerifiedResult {
        let (orderId, fence, match, history) = (answer.orderId, answer.fence, answer.match, answer.history)
        let now = time.unixSeconds
        return { db in
            // The claim, a refund heard of meanwhile and the grant this order already holds, in one read.
            let claim = db.claimedBy(owner, fence: fence)
            guard let claimed = try db.query("""
                SELECT refunded_at, refund_kind, store, (SELECT grant_key FROM grants WHERE grants.order_id = orders.order_id) AS own_grant
                FROM orders WHERE order_id = ? AND state = 'verifying' AND \(claim.sql)\(db.dialect.lockRows)
                """, [.text(orderId)] + claim.values).first else { return .leaseLost }
            let environment = match.candidates.first?.environment
            func end(_ state: OrderState, _ reason: String, _ message: String) throws {
                try db.finalize(orderId, state: state, reason: reason, error: message, environment: environment, now: now)
                var entry = history
                entry.outcome = state == .finished ? reason : state.rawValue
                entry.detail = "\(reason): \(message)"
                try db.appendHistory(orderId, entry)
            }
            // Apple refunded it while we verified: never delivered (a REFUND notification, stored
            // on any host; the claim's row lock above orders the two).
            if claimed.int("refunded_at") != nil {
                let message = "\(StoreOwner.of(claimed.string("store"))) reported a \(claimed.string("refund_kind") ?? "REFUND") "
                    + "of this purchase before delivery"
                try end(.rejected, RejectionReason.refunded.rawValue, message)
                return .rejected(.refunded, message)
            }
            // The store voided the purchase while we verified (a poll or a confirmed push, on any host).
            let voided = VoidedPurchaseFilter.of(claimed.string("store"))
            let offered = try voided.map { try $0.removingVoided(db, match) } ?? match
            if let voided, offered.candidates.isEmpty && !match.candidates.isEmpty {
                let message = voided.rejection
                try end(.rejected, RejectionReason.refunded.rawValue, message)
                return .rejected(.refunded, message)
            }
            let own = claimed.string("own_grant")
            var chosen: VerifiedPurchase?
            if let own {
                switch GrantChoice.own(own, in: offered, owner: StoreOwner.of(claimed.string("store"))) {
                case let .keep(mine):
                    chosen = mine
                case let .reject(why):
                    try end(.rejected, why.reason.rawValue, why.detail)
                    return .rejected(why.reason, why.detail)
                case let .conflict(message):
                    try end(.needsAttention, AttentionReason.grantConflict.rawValue, message)
                    return .grantConflict(message)
                }
            }
            var held: [(VerifiedPurchase, GrantHolder)] = []
            if chosen == nil {
                for candidate in offered.candidates {
                    if let holder = try db.holderOf(candidate) {
                        held.append((candidate, holder))
                        continue
                    }
                    // Another host may reserve the same purchase between our look and our insert:
                    // ON CONFLICT waits for its transaction and then inserts nothing, and the
                    // holder it committed is read again. (One writer at a time on SQLite: never.)
                    let inserted = try db.changedRows("""
                        INSERT INTO grants(grant_key, transaction_id, order_id, source, granted_at) VALUES (?, ?, ?, 'settle', ?)
                        ON CONFLICT DO NOTHING
                        """, [.text(candidate.grantKey), .text(candidate.transactionId), .text(orderId), .integer(now)])
                    if inserted == 0 {
                        held.append((candidate, try db.holderOf(candidate) ?? .order("another order")))
                        continue
                    }
                    chosen = candidate
                    break
                }
            }
            guard let purchase = chosen else {
                switch GrantChoice.allHeld(held, named: offered.named) {
                case let .alreadyDelivered(outside, message):
                    try db.setVerified(orderId, outside)
                    let store = claimed.string("store").flatMap(Store.init(rawValue:)) ?? .ofUnnamedOrders
                    guard store.mustBeToldOfDelivery else {
                        try end(.finished, "already_delivered", message)
                        return .alreadyDelivered(message)
                    }
                    // Granted outside settle, and the store must still hear it (Google refunds an
                    // unacknowledged purchase): delivered, store finish pending, never delivered again.
                    let expiry = db.dialect.leaseExpiry(now, deliveryLeaseSeconds)
                    let row = try db.query("""
                        UPDATE orders SET state = 'delivering', environment = coalesce(?, environment), delivered_at = ?,
                               reason = 'already_delivered', last_error = ?, lease_expires_at = \(expiry.sql), updated_at = ?
                        WHERE order_id = ? RETURNING *
                        """, [.from(environment), .integer(now), .text(message)] + expiry.values + [.integer(now), .text(orderId)])
                    var entry = history
                    entry.outcome = "already_delivered"
                    entry.detail = "\(message); store finish pending"
                    try db.appendHistory(orderId, entry)
                    return .deliveredOutside(Order(row: row[0]), message)
                case let .alreadyGranted(message):
                    try end(.rejected, RejectionReason.alreadyGranted.rawValue, message)
                    return .alreadyGranted(message)
                }
            }
            let expiry = db.dialect.leaseExpiry(now, deliveryLeaseSeconds)
            let row = try db.query("""
                UPDATE orders SET state = 'delivering', environment = ?, verified_transaction_id = ?,
                       original_transaction_id = ?, verified_product_id = ?, quantity = ?, purchase_date_ms = ?,
                       expires_date_ms = ?, grant_key = ?, replaces = ?, reason = NULL, last_error = NULL,
                       price_milliunits = ?, price_currency = ?, price_source = ?,
                       lease_expires_at = \(expiry.sql), updated_at = ?
                WHERE order_id = ? RETURNING *
                """, [.text(purchase.environment), .text(purchase.transactionId), .text(purchase.originalTransactionId),
                      .text(purchase.productId), .integer(Int64(purchase.quantity)), .from(purchase.purchaseDateMs),
                      .from(purchase.expiresDateMs), .text(purchase.grantKey), .from(purchase.replaces)]
                    + Price.columns(purchase.price) + expiry.values + [.integer(now), .text(orderId)])
            var entry = history
            entry.detail = GrantChoice.reserved(purchase)
            try db.appendHistory(orderId, entry)
            var delivering = Order(row: row[0])
            // Its buyer's refunds in 90 days (the hook's `refunds_90d`), counted as its grant is
            // reserved, in the same transaction: no read of its own before the hook.
            if !delivering.userId.isBlank {
                delivering.refunds90d = try db.refundHistory(of: delivering.userId, since: now - RefundHistory.windowSeconds,
                                                             transfers: transfers).count
            }
            return .delivering(delivering)
        }
    }

    /// The hook answered that this order's purchase was granted before (outside settle): the
    /// grant is recorded as made outside settle, and the order either finishes (it named that
    /// purchase) or goes back to matching for its next candidate, without using an attempt.
    package func recordGrantedOutside(orderId: String, owner: LeaseOwner, fence: Int64?, history: HistoryEntry) throws(LedgerError) -> GrantedOutsideResult {
        let now = time.unixSeconds
        return try transition { db in
            guard let order = try db.holding(orderId, state: .delivering, owner: owner, fence: fence) else { return .leaseLost }
            if !order.namesTransaction, try !db.query(GrantChoice.earlierHandOff, [.text(orderId), .text(orderId)]).isEmpty {
                let message = GrantChoice.unclearAlreadyGranted(order)
                var entry = history
                entry.outcome = OrderState.needsAttention.rawValue
                entry.detail = "\(AttentionReason.alreadyGrantedUnclear.rawValue): \(message)" + (history.detail.map { "\n" + $0 } ?? "")
                try db.appendHistory(orderId, entry)
                try db.finalize(orderId, state: .needsAttention, reason: AttentionReason.alreadyGrantedUnclear.rawValue, error: message,
                                environment: nil, now: now)
                return .unclear(message)
            }
            try db.query("UPDATE grants SET order_id = NULL, source = 'outside', note = ? WHERE order_id = ?",
                         [.text("the hook answered \"already granted\" delivering order \(orderId)"), .text(orderId)])
            try db.appendHistory(orderId, history)
            if order.namesTransaction {
                try db.finalize(orderId, state: .finished, reason: "already_delivered",
                                error: "the hook answered that transaction \(order.verified?.transactionId ?? "?") was granted before",
                                environment: nil, now: now)
                return .finished
            }
            let row = try db.query("""
                UPDATE orders SET state = 'verifying', verified_transaction_id = NULL, original_transaction_id = NULL,
                       verified_product_id = NULL, quantity = NULL, purchase_date_ms = NULL, expires_date_ms = NULL,
                       grant_key = NULL, updated_at = ?
                WHERE order_id = ? RETURNING *
                """, [.integer(now), .text(orderId)])
            return .rematch(Order(row: row[0]))
        }
    }

    /// Records that the backend granted a purchase itself, so settle never delivers it again
    /// and matching moves past it.
    package func recordOutsideGrant(transactionId: String, grantKey: String, note: String?) throws(LedgerError) -> OutsideGrantResult {
        let now = time.unixSeconds
        let candidate = VerifiedPurchase(transactionId: transactionId, originalTransactionId: grantKey, productId: "",
                                         environment: "", quantity: 1, purchaseDateMs: nil, expiresDateMs: nil, grantKey: grantKey)
        return try writing { db in
            if let holder = try db.holderOf(candidate) { return OutsideGrantResult(holder) }
            // A concurrent writer of the same key (another host) makes the insert a no-op.
            let inserted = try db.query("""
                INSERT INTO grants(grant_key, transaction_id, order_id, source, granted_at, note) VALUES (?, ?, NULL, 'outside', ?, ?)
                ON CONFLICT DO NOTHING RETURNING grant_key
                """, [.text(grantKey), .text(transactionId), .integer(now), .from(note)])
            if inserted.isEmpty, let holder = try db.holderOf(candidate) { return OutsideGrantResult(holder) }
            return .recorded
        }
    }

    /// Who holds this purchase, for `reconcile --dry-run`.
    package func grantHolder(of purchase: VerifiedPurchase) throws(LedgerError) -> GrantHolder? {
        try reading { db in try db.holderOf(purchase) }
    }

    /// The order currently holding a grant for this Apple transaction, if any.
    package func grantHolder(transactionId: String) throws(LedgerError) -> String? {
        try reading { db in
            try db.query("SELECT order_id FROM grants WHERE transaction_id = ?", [.text(transactionId)]).first?.string("order_id")
        }
    }
}

extension OutsideGrantResult {
    package init(_ holder: GrantHolder) {
        switch holder {
        case let .order(id): self = .grantedBySettle(orderId: id)
        case .outside: self = .alreadyRecorded
        }
    }
}

extension LedgerTransaction {
    /// Records the facts of the purchase an order is about (a `finished` row must name one).
    package func setVerified(_ orderId: String, _ purchase: VerifiedPurchase) throws {
        try query("""
            UPDATE orders SET verified_transaction_id = ?, original_transaction_id = ?, verified_product_id = ?, quantity = ?,
                   purchase_date_ms = ?, expires_date_ms = ?, grant_key = ?, replaces = ?
            WHERE order_id = ?
            """, [.text(purchase.transactionId), .text(purchase.originalTransactionId), .text(purchase.productId),
                  .integer(Int64(purchase.quantity)), .from(purchase.purchaseDateMs), .from(purchase.expiresDateMs),
                  .text(purchase.grantKey), .from(purchase.replaces), .text(orderId)])
    }
}
