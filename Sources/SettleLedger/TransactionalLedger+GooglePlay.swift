import Foundation
import SettleModel

/// Order ids settle makes for Google Play purchases nobody enqueued (found through RTDN):
/// `play-` and Google's order id. Backends may not use the prefix.
package enum PlayOrderId {
    package static let prefix = "play-"
}

/// Google Play's part of the order store, written once for both engines: "delivered, store
/// finish pending".
extension TransactionalLedger {
    /// The hook said delivered for a Google Play order, which Google has not been told yet: the
    /// order stays `delivering` under its claim with `delivered_at` set, durably, before settle
    /// calls Google. A crash from here on never runs the hook again: the rescued order is only
    /// acknowledged (or consumed). Called again after a failed acknowledgement, it keeps the first
    /// `delivered_at` and records the failure (`error`). False when the claim is gone.
    @discardableResult
    package func recordDelivered(orderId: String, owner: LeaseOwner, fence: Int64?, error: String?,
                                history: HistoryEntry) throws(LedgerError) -> Bool {
        let now = time.unixSeconds
        return try transition { db in
            guard try db.holds(orderId, state: .delivering, owner: owner, fence: fence) else { return false }
            try db.query("""
                UPDATE orders SET delivered_at = coalesce(delivered_at, ?), last_error = ?, updated_at = ? WHERE order_id = ?
                """, [.integer(now), .from(error), .integer(now), .text(orderId)])
            try db.appendHistory(orderId, history)
            return true
        }
    }
}

/// Where the voided purchases poll resumes.
package struct PlayVoidedCursor: Sendable, Equatable {
    /// `startTime` of the next window (Unix ms): the newest voided time seen so far.
    package var sinceMs: Int64?
    /// The next page of a window read part way (a crash, an error in the middle).
    package var pageToken: String?
    /// When the last poll finished (Unix seconds).
    package var polledAt: Int64?

    package init(sinceMs: Int64? = nil, pageToken: String? = nil, polledAt: Int64? = nil) {
        self.sinceMs = sinceMs
        self.pageToken = pageToken
        self.polledAt = polledAt
    }
}

/// Google Play's voided purchases (refunds, chargebacks, revocations), as Apple's REFUND.
extension TransactionalLedger {
    package func playVoidedCursor() throws(LedgerError) -> PlayVoidedCursor {
        try reading { db in
            guard let row = try db.query("SELECT * FROM play_cursor WHERE id = 1").first else { return PlayVoidedCursor() }
            return PlayVoidedCursor(sinceMs: row.int("voided_since_ms"), pageToken: row.string("page_token"), polledAt: row.int("polled_at"))
        }
    }

    package func savePlayVoidedCursor(_ cursor: PlayVoidedCursor) throws(LedgerError) {
        try writing { db in
                try db.query("""
                    INSERT INTO play_cursor(id, voided_since_ms, page_token, polled_at) VALUES (1, ?, ?, ?)
                    ON CONFLICT(id) DO UPDATE SET voided_since_ms = excluded.voided_since_ms, page_token = excluded.page_token,
                                                  polled_at = excluded.polled_at
                    """, [.from(cursor.sinceMs), .from(cursor.pageToken), .from(cursor.polledAt)])
        }
    }

    /// Google voided the purchase behind `token`: every order holding it is marked refunded. One
    /// never delivered is `rejected` (`refunded`) and never will be; one delivered (or whose hook
    /// may have run) owes a revoke, run by the revoke hook exactly as for Apple's REFUND, once per
    /// purchase (the revocations row is keyed by the grant key). Seeing the same voided purchase
    /// again changes nothing. Returns each order's outcome.
    @discardableResult
    package func applyPlayVoided(token: PlayPurchaseToken, googleOrderId: String?, reason: String?,
                                source: String) throws(LedgerError) -> [String: String] {
        let now = time.unixSeconds
        return try writing { db in
                let orders = try db.query("SELECT * FROM orders WHERE store = 'google_play' AND purchase_token = ?\(db.dialect.lockRows)",
                                                [.text(token.value)]).map { Order(row: $0) }
                var outcomes: [String: String] = [:]
                for order in orders {
                    if order.refund?.kind == PlayVoided.kind { outcomes[order.orderId] = "already_recorded"; continue }
                    try db.query("""
                        UPDATE orders SET refunded_at = ?, refund_kind = ?, refund_reason = ?, updated_at = ? WHERE order_id = ?
                        """, [.integer(now), .text(PlayVoided.kind), .from(reason), .integer(now), .text(order.orderId)])
                    let why = "Google Play voided purchase \(googleOrderId ?? token.fingerprint)" + (reason.map { " (voidedReason \($0))" } ?? "")
                    let held = try !db.query("SELECT 1 AS held FROM grants WHERE order_id = ?", [.text(order.orderId)]).isEmpty
                    var outcome: String
                    switch order.state {
                    case .verifying:
                        // The verification in flight sees it when it records its result (recordVerified).
                        outcome = "refund_recorded"
                    case .delivering, .finished:
                        outcome = try db.queuePlayRevocation(order, now: now)
                    case .pending, .needsAttention, .rejected:
                        if held {
                            if order.state != .rejected {
                                try db.finalize(order.orderId, state: .rejected, reason: RejectionReason.refunded.rawValue,
                                             error: "\(why); the delivery's outcome was not known, so a revoke is sent; it will never be delivered",
                                             environment: nil, now: now)
                            }
                            outcome = try db.queuePlayRevocation(order, now: now)
                        } else if order.state == .rejected {
                            outcome = "refund_recorded"
                        } else {
                            try db.finalize(order.orderId, state: .rejected, reason: RejectionReason.refunded.rawValue,
                                         error: "\(why) before it was delivered; it will never be delivered", environment: nil, now: now)
                            outcome = "never_delivered"
                        }
                    }
                    outcomes[order.orderId] = outcome
                    try db.appendHistory(order.orderId, HistoryEntry(at: now, kind: .notification, outcome: outcome,
                                                                  detail: "\(source): \(why)"))
                }
                return outcomes
        }
    }

}

extension LedgerTransaction {
    /// Owes a revoke of the order's purchase, keyed by its grant key (Google's order id).
    fileprivate func queuePlayRevocation(_ order: Order, now: Int64) throws -> String {
        let key = order.verified?.grantKey ?? order.orderId
        // Once per purchase, whichever host (or pass) sees the voided purchase first.
        let queued = try query("""
            INSERT INTO revocations(transaction_id, order_id, kind, next_attempt_at, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?)
            ON CONFLICT (transaction_id) DO NOTHING RETURNING transaction_id
            """, [.text(key), .text(order.orderId), .text(PlayVoided.kind), .integer(now), .integer(now), .integer(now)])
        return queued.isEmpty ? "revoke_already_queued" : "revoke_queued"
    }
}

/// The words Google Play's voided purchases leave in the ledger.
package enum PlayVoided {
    /// `refund_kind` of an order whose Play purchase Google voided (refund, chargeback, revocation).
    package static let kind = "VOIDED"
}
