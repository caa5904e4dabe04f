import Foundation
import SettleBase
import SettleModel
import SettleLedger

/// One stored IAP Kit key-event notification: stored once by its `notificationRequestId`
/// before Huawei is answered 200 (or read from Huawei's history), worked on by the next pass.
package struct HuaweiNotificationRecord: Sendable, Equatable {
    package var requestId: String
    package var type: String
    package var receivedAt: Int64
    /// `endpoint` (Huawei posted it) or `history` (the catch-up read it).
    package var source: String
    package var outcome: String
    package var detail: String?
    package var orderId: String?
    /// The verified payload: it holds the purchase token, so it is never shown.
    package var payload: String
    package var claim: Int64 = 0
}

extension HuaweiNotificationRecord: SideQueueJob {
    /// Every pending notification is due; `claimed_until` is only a claim's lease.
    package static let queue = SideQueue(
        table: "huawei_notifications", key: ["request_id"], expiry: "claimed_until",
        expiryIsDueTime: false, updatedAt: nil, order: ["received_at", "request_id"])
    package var queueKey: [LedgerValue] { [.text(requestId)] }

    package init(row: any LedgerRow) {
        self.init(
            requestId: row.string("request_id") ?? "", type: row.string("type") ?? "",
            receivedAt: row.int("received_at") ?? 0,
            source: row.string("source") ?? "", outcome: row.string("outcome") ?? "", detail: row.string("detail"),
            orderId: row.string("order_id"), payload: row.string("payload") ?? "", claim: row.int("claim") ?? 0)
    }
}

/// The module's tables: the notifications, and how far the history catch-up has read.
enum HuaweiMigrations {
    static let notifications = LedgerMigration(
        name: "huawei.notifications",
        sqlite: """
            CREATE TABLE huawei_notifications (
                request_id        TEXT PRIMARY KEY NOT NULL,
                type              TEXT NOT NULL,
                subtype           TEXT,
                purchase_order_id TEXT,
                order_id          TEXT,
                source            TEXT NOT NULL,
                received_at       INTEGER NOT NULL,
                outcome           TEXT NOT NULL,
                detail            TEXT,
                state             TEXT NOT NULL DEFAULT 'pending' CHECK (state IN ('pending','done')),
                payload           TEXT NOT NULL,
                claim             INTEGER NOT NULL DEFAULT 0,
                claimed_until     INTEGER,
                claim_host        TEXT,
                claim_pid         INTEGER,
                claim_start       TEXT,
                claim_expires_at  INTEGER
            );
            CREATE INDEX huawei_notifications_pending ON huawei_notifications(received_at) WHERE state = 'pending';
            CREATE TABLE huawei_cursor (id INTEGER PRIMARY KEY CHECK (id = 1), history_until_ms INTEGER NOT NULL);
            """,
        postgres: """
            CREATE TABLE huawei_notifications (
                request_id        TEXT PRIMARY KEY,
                type              TEXT NOT NULL,
                subtype           TEXT,
                purchase_order_id TEXT,
                order_id          TEXT,
                source            TEXT NOT NULL,
                received_at       BIGINT NOT NULL,
                outcome           TEXT NOT NULL,
                detail            TEXT,
                state             TEXT NOT NULL DEFAULT 'pending' CHECK (state IN ('pending','done')),
                payload           TEXT NOT NULL,
                claim             BIGINT NOT NULL DEFAULT 0,
                claimed_until     BIGINT,
                claim_host        TEXT,
                claim_pid         BIGINT,
                claim_start       TEXT,
                claim_expires_at  BIGINT
            );
            CREATE INDEX huawei_notifications_pending ON huawei_notifications(received_at) WHERE state = 'pending';
            CREATE TABLE huawei_cursor (id INTEGER PRIMARY KEY CHECK (id = 1), history_until_ms BIGINT NOT NULL);
            """,
        copied: [
            CopiedTable(
                "huawei_notifications",
                columns: [
                    "request_id", "type", "subtype", "purchase_order_id", "order_id", "source",
                    "received_at", "outcome", "detail", "state", "payload",
                ]),
            CopiedTable("huawei_cursor", columns: ["id", "history_until_ms"]),
        ])
}

extension TransactionalLedger {
    /// Stores a verified notification; false when its request id is stored already (Huawei may
    /// send one more than once, and the history repeats what the endpoint took).
    package func storeHuaweiNotification(
        _ notification: HuaweiNotificationParts, source: String
    ) throws(LedgerError) -> Bool {
        let now = time.unixSeconds
        return try writing { db in
            try !db.query(
                """
                INSERT INTO huawei_notifications(request_id, type, subtype, purchase_order_id, source, received_at, outcome, payload)
                VALUES (?, ?, ?, ?, ?, ?, 'received', ?) ON CONFLICT(request_id) DO NOTHING RETURNING request_id
                """,
                [
                    .text(notification.requestId), .text(notification.type), .from(notification.subtype),
                    .from(notification.purchaseOrderId), .text(source), .integer(now), .text(notification.payload),
                ]
            ).isEmpty
        }
    }

    /// Claims up to `limit` stored notifications no other host holds, oldest first: IAP Kit's, or
    /// HMS IAP's (their types start `HMS_`), each worked by its own inbox.
    package func claimHuaweiNotifications(
        limit: Int, leaseSeconds: Int64, owner: LeaseOwner = .current,
        hms: Bool = false
    ) throws(LedgerError) -> [HuaweiNotificationRecord] {
        let now = time.unixSeconds
        return try writing { db in
            try db.claimDue(
                HuaweiNotificationRecord.self, limit: limit, leaseSeconds: leaseSeconds, owner: owner, now: now,
                where: hms ? " AND substr(q.type, 1, 4) = 'HMS_'" : " AND substr(q.type, 1, 4) <> 'HMS_'")
        }
    }

    /// Makes the cancelled purchases poll due at the next pass (an HMS refund notification, unsigned, asks for it).
    package func makeHMSCancelledPollDue() throws(LedgerError) {
        try writing { db in try db.query("UPDATE huawei_hms_cursor SET polled_at = 0") }
    }

    /// Records what working on a claimed notification ended with; false when its claim lapsed.
    @discardableResult
    package func finishHuaweiNotification(
        _ record: HuaweiNotificationRecord, outcome: String, detail: String?,
        orderId: String?
    ) throws(LedgerError) -> Bool {
        try self.record(
            record,
            .set(
                "state = 'done', outcome = ?, detail = ?, order_id = ?, claimed_until = NULL",
                [.text(outcome), .from(detail), .from(orderId)]))
    }

    package func releaseHuaweiNotifications(_ records: [HuaweiNotificationRecord]) throws(LedgerError) {
        try release(records)
    }

    package func huaweiNotification(requestId: String) throws(LedgerError) -> HuaweiNotificationRecord? {
        try reading { db in
            try db.query("SELECT * FROM huawei_notifications WHERE request_id = ?", [.text(requestId)]).first
                .map { HuaweiNotificationRecord(row: $0) }
        }
    }

    /// Up to when (ms) the history catch-up has read Huawei's notifications; nil before its first run.
    package func huaweiHistoryCursor() throws(LedgerError) -> Int64? {
        try reading { db in
            try db.query("SELECT history_until_ms FROM huawei_cursor WHERE id = 1").first?.int("history_until_ms")
        }
    }

    /// Moves the cursor forward (never back: another host may have read further).
    package func advanceHuaweiHistoryCursor(to ms: Int64) throws(LedgerError) {
        try writing { db in
            try db.query(
                """
                INSERT INTO huawei_cursor(id, history_until_ms) VALUES (1, ?)
                ON CONFLICT (id) DO UPDATE SET history_until_ms = excluded.history_until_ms
                WHERE huawei_cursor.history_until_ms < excluded.history_until_ms
                """, [.integer(ms)])
        }
    }

}

/// What is stored of a notification: its keys and its verified payload.
package struct HuaweiNotificationParts: Sendable {
    package var requestId: String
    package var type: String
    package var subtype: String?
    package var purchaseOrderId: String?
    package var payload: String
}
