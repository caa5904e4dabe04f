import Foundation
import SettleBase
import SettleModel
import SettleLedger

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

    /// Google voided its order `googleOrderId` of the purchase behind `token`: a one-time
    /// purchase, or one period of a subscription (every period shares the token), all of it or
    /// `quantity` of it (a quantity-based partial refund). The voiding is kept (`play_voided`),
    /// so an order verified later is never granted what was voided; only the order holding that
    /// order id's grant, or the order made for it (`play-<order id>`), changes now. One never
    /// delivered is `rejected` (`refunded`) and never will be; one delivered (or whose hook may
    /// have run) owes a revoke of the voided quantity, run by the revoke hook exactly as for
    /// Apple's REFUND, once per voiding. Google may void one order more than once (refunds of 1,
    /// then 2, of 5 gems): each voiding is told apart by its `voidedTimeMs` and revoked once, the
    /// first under the grant key, each later one under `<grant key>@<voidedTimeMillis>`; the real-
    /// time push and the voided purchases poll read the same entry of Google's list, so they agree.
    /// Other periods of the subscription and other orders of the token are left alone. Seeing the
    /// same voiding again changes nothing. Returns each changed order's outcome.
    @discardableResult
    package func applyPlayVoided(token: PurchaseToken, googleOrderId: String?, quantity: Int? = nil, voidedTimeMs: Int64? = nil,
                                reason: String?, source: String) throws(LedgerError) -> [String: String] {
        let now = time.unixSeconds
        let key = googleOrderId ?? PlayVoided.tokenKey(token)
        let partial = quantity.flatMap { $0 > 0 ? $0 : nil }
        return try writing { db in
            let earlier = try db.playVoidings(key)
            let seen = earlier.contains { row in
                if let at = row.timeMs, let voidedTimeMs { return at == voidedTimeMs }
                // A voiding recorded before times were kept (or one Google gives no time): the same
                // quantity is the same voiding; revoking it twice would take the goods twice.
                return row.quantity == partial.map(Int64.init)
            }
            // A voiding of everything already recorded leaves nothing to void again.
            let whole = earlier.contains { $0.quantity == nil }
            let rowKey = earlier.isEmpty ? key : "\(key)@\(voidedTimeMs ?? now * 1000)"
            let fresh = !seen && !whole
            let first = try fresh && !db.query("""
                INSERT INTO play_voided(google_order_id, quantity, voided_at, source, voided_time_ms) VALUES (?, ?, ?, ?, ?)
                ON CONFLICT (google_order_id) DO NOTHING RETURNING google_order_id
                """, [.text(rowKey), .from(partial.map(Int64.init)), .integer(now), .text(source), .from(voidedTimeMs)]).isEmpty
            let alreadyVoided = earlier.reduce(0) { $0 + Int($1.quantity ?? 0) }
            let orders = try db.query("""
                SELECT o.*, (SELECT g.grant_key FROM grants g WHERE g.order_id = o.order_id) AS held_key
                FROM orders o WHERE o.store = 'google_play' AND o.purchase_token = ?\(db.dialect.lockRows)
                """, [.text(token.value)]).map { (Order(row: $0), $0.string("held_key")) }
            var outcomes: [String: String] = [:]
            for (order, held) in orders {
                // The order holding this voided purchase, or the one made for it before it was verified.
                guard held == key || (held == nil && order.orderId == PlayOrderId.prefix + key) else { continue }
                guard first else { outcomes[order.orderId] = "already_recorded"; continue }
                let what = partial.map { "\($0) of " } ?? ""
                let why = "Google Play voided \(what)purchase \(key)" + (reason.map { " (voidedReason \($0))" } ?? "")
                let delivered = order.state == .delivering || order.state == .finished
                if partial == nil || delivered {
                    try db.query("""
                        UPDATE orders SET refunded_at = ?, refund_kind = ?, refund_reason = ?, updated_at = ? WHERE order_id = ?
                        """, [.integer(now), .text(PlayVoided.kind), .from(reason), .integer(now), .text(order.orderId)])
                    try db.cancelGrantRedeliveries(order.orderId, refund: why, now: now)
                }
                var outcome: String
                switch order.state {
                case .verifying:
                    // The verification in flight sees it when it records its result (recordVerified).
                    outcome = "refund_recorded"
                case .delivering, .finished:
                    // A later voiding of everything takes back what the earlier ones left.
                    let rest = earlier.isEmpty ? nil : (order.verified?.quantity ?? 1) - alreadyVoided
                    if partial == nil, let rest, rest <= 0 {
                        outcome = "refund_recorded"
                    } else {
                        outcome = try db.queuePlayRevocation(order, quantity: partial ?? rest, key: rowKey == key ? nil : rowKey, now: now)
                    }
                case .pending, .needsAttention, .rejected:
                    if held != nil {
                        // A partial voiding leaves the rest to deliver: the order's next verification grants only that.
                        if order.state != .rejected && partial == nil {
                            try db.finalize(order.orderId, state: .rejected, reason: RejectionReason.refunded.rawValue,
                                            error: "\(why); the delivery's outcome was not known, so a revoke is sent; it will never be delivered",
                                            environment: nil, now: now)
                        }
                        outcome = try db.queuePlayRevocation(order, quantity: partial, now: now)
                    } else if order.state == .rejected || partial != nil {
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

    /// The Google Play orders of `token` that hold a grant, newest grant first.
    package func playGrants(token: PurchaseToken) throws(LedgerError) -> [Order] {
        try reading { db in
            try db.query("""
                SELECT o.* FROM orders o JOIN grants g ON g.order_id = o.order_id
                WHERE o.store = 'google_play' AND o.purchase_token = ? ORDER BY g.granted_at DESC, o.updated_at DESC, o.order_id
                """, [.text(token.value)]).map { Order(row: $0) }
        }
    }

    /// Whether settle set the order aside as `needs_attention` for `reason` at a verification before.
    package func wasSetAside(orderId: String, reason: AttentionReason) throws(LedgerError) -> Bool {
        let prefix = reason.rawValue + ":"
        return try reading { db in
            try !db.query("""
                SELECT 1 AS seen FROM history WHERE order_id = ? AND kind = 'verification' AND outcome = 'needs_attention'
                AND substr(detail, 1, ?) = ? LIMIT 1
                """, [.text(orderId), .integer(Int64(prefix.count)), .text(prefix)]).isEmpty
        }
    }
}

extension LedgerTransaction {
    /// Owes a revoke of the order's purchase, keyed by its grant key (Google's order id), of
    /// `quantity` (nil: all that was delivered).
    fileprivate func queuePlayRevocation(_ order: Order, quantity: Int?, key voiding: String? = nil, now: Int64) throws -> String {
        let key = voiding ?? order.verified?.grantKey ?? order.orderId
        // Once per purchase, whichever host (or pass) sees the voided purchase first.
        let queued = try query("""
            INSERT INTO revocations(transaction_id, order_id, kind, next_attempt_at, created_at, updated_at, quantity)
            VALUES (?, ?, ?, ?, ?, ?, ?)
            ON CONFLICT (transaction_id) DO NOTHING RETURNING transaction_id
            """, [.text(key), .text(order.orderId), .text(PlayVoided.kind), .integer(now), .integer(now), .integer(now),
                  .from(quantity.map(Int64.init))])
        return queued.isEmpty ? "revoke_already_queued" : "revoke_queued"
    }

    /// `match` without what Google voided meanwhile (a voiding read on any host while the order
    /// was verified; the claim's row lock orders the two): a candidate voided whole is dropped,
    /// one voided in part keeps the rest. Empty candidates: everything was voided.
    package func removingPlayVoided(_ match: Match) throws -> Match {
        var kept = match
        kept.candidates = try match.candidates.compactMap { candidate in
            let voidings = try playVoidings(candidate.grantKey)
            guard !voidings.isEmpty else { return candidate }
            // No count, or one that is not positive (the schema refuses it; a row from an older or
            // altered schema may not), is voided whole: `quantity - Int64.min` would trap, and a
            // refund is never granted on a count settle cannot read.
            var voided: Int64 = 0
            for voiding in voidings {
                guard let quantity = voiding.quantity, quantity > 0 else { return nil }
                voided = voided.addingReportingOverflow(quantity).overflow ? Int64.max : voided + quantity
            }
            guard Int64(candidate.quantity) > voided else { return nil }
            var rest = candidate
            rest.quantity -= Int(voided)
            return rest
        }
        return kept
    }

    /// Every voiding recorded of Google's order `key`: the first under the key itself, later ones
    /// under `key@<voidedTimeMillis>`.
    func playVoidings(_ key: String) throws -> [(quantity: Int64?, timeMs: Int64?)] {
        try query("""
            SELECT quantity, voided_time_ms FROM play_voided WHERE google_order_id = ? OR substr(google_order_id, 1, ?) = ?
            """, [.text(key), .integer(Int64(key.count + 1)), .text(key + "@")])
            .map { ($0.int("quantity"), $0.int("voided_time_ms")) }
    }
}

/// The words Google Play's voided purchases leave in the ledger.
package enum PlayVoided {
    /// `refund_kind` of an order whose Play purchase Google voided (refund, chargeback, revocation).
    package static let kind = "VOIDED"

    /// The grant key of a purchase Google gives no order id (some test purchases), as the
    /// eligibility rules make it: the SHA-256 of its token, as unique and not a secret.
    package static func tokenKey(_ token: PurchaseToken) -> String { "token-sha256:" + SHA256.hex(Data(token.value.utf8)) }
}
