import Foundation
import SettleBase
import SettleModel
import SettleLedger

/// One stored Google Play real-time developer notification.
package struct PlayNotificationRecord: Sendable, Equatable {
    package var messageId: String
    package var kind: String
    package var receivedAt: Int64
    package var outcome: String
    package var detail: String?
    package var orderId: String?
    /// The notification as Google sent it (Pub/Sub's `data`, decoded): it holds the purchase token.
    package var payload: String
    /// The claim it was handed out under (the row counts its claims): its outcome is recorded
    /// only under it, so a host whose claim lapsed changes nothing.
    package var claim: Int64 = 0
}

/// Google Play's real-time developer notifications: stored once by Pub/Sub message id before the
/// 2xx, worked on by the next pass (reading the purchase from Google), each ending with an outcome.
extension TransactionalLedger {
    /// Stores a push; false when this message id is stored already (Pub/Sub delivers at least once).
    package func storePlayNotification(messageId: String, kind: String, token: PurchaseToken?, payload: String) throws(LedgerError) -> Bool {
        let now = time.unixSeconds
        return try writing { db in
                try !db.query("""
                    INSERT INTO play_notifications(message_id, kind, token_sha256, received_at, outcome, payload)
                    VALUES (?, ?, ?, ?, 'received', ?) ON CONFLICT(message_id) DO NOTHING RETURNING message_id
                    """, [.text(messageId), .text(kind), .from(token.map { SHA256.hex(Data($0.value.utf8)) }), .integer(now),
                          .text(payload)]).isEmpty
        }
    }

    /// Stored notifications not yet worked on, oldest first.
    package func pendingPlayNotifications(limit: Int) throws(LedgerError) -> [PlayNotificationRecord] {
        try reading { db in
            try db.query("SELECT * FROM play_notifications WHERE state = 'pending' ORDER BY received_at, message_id LIMIT ?",
                               [.integer(Int64(limit))]).map { PlayNotificationRecord(row: $0) }
        }
    }

    /// Claims up to `limit` stored notifications not yet worked on, oldest first, that no other
    /// host holds (or whose claim lapsed), for `leaseSeconds`: with several hosts each push is
    /// worked by one (`FOR UPDATE SKIP LOCKED` on PostgreSQL, as orders are claimed).
    package func claimPlayNotifications(limit: Int, leaseSeconds: Int64, owner: LeaseOwner = .current) throws(LedgerError) -> [PlayNotificationRecord] {
        let now = time.unixSeconds
        return try writing { db in
            try db.claimDue(PlayNotificationRecord.self, limit: limit, leaseSeconds: leaseSeconds, owner: owner, now: now)
        }
    }

    /// Records what working on a claimed notification ended with; false (nothing changed) when
    /// its claim lapsed and another host claimed it since.
    @discardableResult
    package func finishPlayNotification(_ record: PlayNotificationRecord, outcome: String, detail: String?,
                                        orderId: String?) throws(LedgerError) -> Bool {
        try self.record(record, .set("state = 'done', outcome = ?, detail = ?, order_id = ?, claimed_until = NULL",
                                     [.text(outcome), .from(detail), .from(orderId)]))
    }

    /// Gives claimed notifications back untouched, for the next pass of any host.
    package func releasePlayNotifications(_ records: [PlayNotificationRecord]) throws(LedgerError) {
        try release(records)
    }

    package func playNotification(messageId: String) throws(LedgerError) -> PlayNotificationRecord? {
        try reading { db in
            try db.query("SELECT * FROM play_notifications WHERE message_id = ?", [.text(messageId)]).first
                .map { PlayNotificationRecord(row: $0) }
        }
    }

    /// The orders that hold this purchase token, oldest first.
    package func playOrders(token: PurchaseToken) throws(LedgerError) -> [Order] {
        try reading { db in
            try db.query("SELECT * FROM orders WHERE store = 'google_play' AND purchase_token = ? ORDER BY created_at, order_id",
                         [.text(token.value)]).map { Order(row: $0) }
        }
    }

    /// The buyer whose granted orders carry this obfuscated account id (`app_account_token`),
    /// when exactly one does (the buyer, never a transfer's holder; see `OrderBuyer`).
    package func playUser(accountId: String) throws(LedgerError) -> String? {
        try reading { db in
            let users = try db.query("""
                SELECT DISTINCT \(OrderBuyer.column) AS buyer FROM orders o
                WHERE o.store = 'google_play' AND o.app_account_token = ? AND o.user_id <> '' AND \(OrderBuyer.verified) LIMIT 2
                """, [.text(accountId)]).compactMap { $0.string("buyer") }
            return users.count == 1 ? users[0] : nil
        }
    }

    /// An order for a purchase Google reported that nobody enqueued: `play-<Google order id>`, due
    /// now, for `userId` (empty: nobody known; the pass sets it aside as `unclaimed_purchase` for
    /// `settle assign`). Nothing when the order exists already.
    @discardableResult
    package func createPlayOrder(orderId: String, userId: String, productId: String, token: PurchaseToken, accountId: String?,
                                detail: String) throws(LedgerError) -> Bool {
        let now = time.unixSeconds
        return try writing { db in
                let created = try !db.query("""
                    INSERT INTO orders(order_id, user_id, product_id, store, purchase_token, app_account_token, origin,
                                       next_attempt_at, created_at, updated_at)
                    VALUES (?, ?, ?, 'google_play', ?, ?, 'google_play_notification', ?, ?, ?)
                    ON CONFLICT(order_id) DO NOTHING RETURNING order_id
                    """, [.text(orderId), .text(userId), .text(productId), .text(token.value), .from(accountId), .integer(now),
                          .integer(now), .integer(now)]).isEmpty
                if created {
                    // PostgreSQL makes every inserted row a backend's (its trigger sets origin 'backend'):
                    // settle's own row says where it came from here, in the same transaction.
                    try db.query("UPDATE orders SET origin = 'google_play_notification' WHERE order_id = ?", [.text(orderId)])
                    try db.appendHistory(orderId, HistoryEntry(at: now, kind: .notification, outcome: "created", detail: detail))
                }
                return created
        }
    }
}

extension PlayNotificationRecord: SideQueueJob {
    /// Every pending push is due; `claimed_until` is only a claim's lease.
    package static let queue = SideQueue(table: "play_notifications", key: ["message_id"], expiry: "claimed_until",
                                         expiryIsDueTime: false, updatedAt: nil, order: ["received_at", "message_id"])
    package var queueKey: [LedgerValue] { [.text(messageId)] }

    package init(row: any LedgerRow) {
        self.init(messageId: row.string("message_id") ?? "", kind: row.string("kind") ?? "", receivedAt: row.int("received_at") ?? 0,
                  outcome: row.string("outcome") ?? "", detail: row.string("detail"), orderId: row.string("order_id"),
                  payload: row.string("payload") ?? "", claim: row.int("claim") ?? 0)
    }
}
