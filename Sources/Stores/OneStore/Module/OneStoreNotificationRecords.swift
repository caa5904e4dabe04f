import Foundation
import SettleBase
import SettleModel
import SettleLedger

/// One stored PNS message: stored once by purchase and state before ONE store is answered 200.
package struct OneStoreNotificationRecord: Sendable, Equatable {
    package var requestId: String
    package var purchaseState: String
    package var receivedAt: Int64
    package var outcome: String
    package var orderId: String?
    /// The message as ONE store sent it: it holds the purchase token, so it is never shown.
    package var payload: String
    package var claim: Int64 = 0
}

extension OneStoreNotificationRecord: SideQueueJob {
    package static let queue = SideQueue(
        table: "one_store_notifications", key: ["request_id"], expiry: "claimed_until",
        expiryIsDueTime: false, updatedAt: nil, order: ["received_at", "request_id"])
    package var queueKey: [LedgerValue] { [.text(requestId)] }

    package init(row: any LedgerRow) {
        self.init(
            requestId: row.string("request_id") ?? "", purchaseState: row.string("purchase_state") ?? "",
            receivedAt: row.int("received_at") ?? 0, outcome: row.string("outcome") ?? "",
            orderId: row.string("order_id"),
            payload: row.string("payload") ?? "", claim: row.int("claim") ?? 0)
    }
}

enum OneStoreMigrations {
    static let notifications = LedgerMigration(
        name: "one_store.notifications",
        sqlite: """
            CREATE TABLE one_store_notifications (
                request_id TEXT PRIMARY KEY NOT NULL, purchase_state TEXT NOT NULL, purchase_id TEXT, order_id TEXT,
                received_at INTEGER NOT NULL, outcome TEXT NOT NULL, detail TEXT,
                state TEXT NOT NULL DEFAULT 'pending' CHECK (state IN ('pending','done')), payload TEXT NOT NULL,
                claim INTEGER NOT NULL DEFAULT 0, claimed_until INTEGER, claim_host TEXT, claim_pid INTEGER, claim_start TEXT,
                claim_expires_at INTEGER
            );
            CREATE INDEX one_store_notifications_pending ON one_store_notifications(received_at) WHERE state = 'pending';
            CREATE TABLE one_store_cursor (id INTEGER PRIMARY KEY CHECK (id = 1), reread_at INTEGER NOT NULL);
            """,
        postgres: """
            CREATE TABLE one_store_notifications (
                request_id TEXT PRIMARY KEY, purchase_state TEXT NOT NULL, purchase_id TEXT, order_id TEXT,
                received_at BIGINT NOT NULL, outcome TEXT NOT NULL, detail TEXT,
                state TEXT NOT NULL DEFAULT 'pending' CHECK (state IN ('pending','done')), payload TEXT NOT NULL,
                claim BIGINT NOT NULL DEFAULT 0, claimed_until BIGINT, claim_host TEXT, claim_pid BIGINT, claim_start TEXT,
                claim_expires_at BIGINT
            );
            CREATE INDEX one_store_notifications_pending ON one_store_notifications(received_at) WHERE state = 'pending';
            CREATE TABLE one_store_cursor (id INTEGER PRIMARY KEY CHECK (id = 1), reread_at BIGINT NOT NULL);
            """,
        copied: [
            CopiedTable(
                "one_store_notifications",
                columns: [
                    "request_id", "purchase_state", "purchase_id", "order_id", "received_at",
                    "outcome", "detail", "state", "payload",
                ]),
            CopiedTable("one_store_cursor", columns: ["id", "reread_at"]),
        ])
}

extension TransactionalLedger {
    package func storeOneStoreNotification(
        requestId: String, purchaseState: String, purchaseId: String?, payload: String
    ) throws(LedgerError) -> Bool {
        let now = time.unixSeconds
        return try writing { db in
            try !db.query(
                """
                INSERT INTO one_store_notifications(request_id, purchase_state, purchase_id, received_at, outcome, payload)
                VALUES (?, ?, ?, ?, 'received', ?) ON CONFLICT(request_id) DO NOTHING RETURNING request_id
                """, [.text(requestId), .text(purchaseState), .from(purchaseId), .integer(now), .text(payload)]
            ).isEmpty
        }
    }

    package func claimOneStoreNotifications(
        limit: Int, leaseSeconds: Int64, owner: LeaseOwner = .current
    ) throws(LedgerError)
        -> [OneStoreNotificationRecord]
    {
        let now = time.unixSeconds
        return try writing { db in
            try db.claimDue(
                OneStoreNotificationRecord.self, limit: limit, leaseSeconds: leaseSeconds, owner: owner, now: now)
        }
    }

    @discardableResult
    package func finishOneStoreNotification(
        _ record: OneStoreNotificationRecord, outcome: String, detail: String?,
        orderId: String?
    ) throws(LedgerError) -> Bool {
        try self.record(
            record,
            .set(
                "state = 'done', outcome = ?, detail = ?, order_id = ?, claimed_until = NULL",
                [.text(outcome), .from(detail), .from(orderId)]))
    }

    package func releaseOneStoreNotifications(_ records: [OneStoreNotificationRecord]) throws(LedgerError) {
        try release(records)
    }

    /// When the recent purchases were last re-read; nil before the first time.
    package func oneStoreRereadAt() throws(LedgerError) -> Int64? {
        try reading { db in try db.query("SELECT reread_at FROM one_store_cursor WHERE id = 1").first?.int("reread_at")
        }
    }

    package func markOneStoreReread(at now: Int64) throws(LedgerError) {
        try writing { db in
            try db.query(
                """
                INSERT INTO one_store_cursor(id, reread_at) VALUES (1, ?) ON CONFLICT (id) DO UPDATE SET reread_at = excluded.reread_at
                """, [.integer(now)])
        }
    }

    /// Orders of ONE store holding a grant, not refunded, verified within `seconds` (by the
    /// purchase's time, else the order's): the purchases ONE store may still cancel on its own.
    package func recentOneStoreGrants(withinSeconds seconds: Int64, limit: Int) throws(LedgerError) -> [Order] {
        let since = time.unixSeconds - seconds
        return try reading { db in
            try db.query(
                """
                SELECT o.* FROM orders o JOIN grants g ON g.order_id = o.order_id
                WHERE o.store = 'one_store' AND o.refunded_at IS NULL AND o.state IN ('delivering', 'finished') AND o.created_at >= ?
                ORDER BY o.created_at DESC LIMIT ?
                """, [.integer(since), .integer(Int64(limit))]
            ).map { Order(row: $0) }
        }
    }

}
