import Foundation
import SettleBase
import SettleModel
import SettleHuawei
import SettleLedger
import SettleEngine

/// Reads HMS IAP's cancelled and refunded purchases (`v2/purchases/cancelledList`, subscriptions
/// included) every `huawei.hms.cancelled_poll_interval_seconds`, on the app's site and the
/// AppTouch one, and takes each back as a store's refund is taken back (`applyStoreRefund`): never
/// delivered if not yet delivered, revoked once through the revoke hook if it was. Each window
/// reads an hour again before the last one's end (Huawei's clock and this host's differ); what is
/// seen twice changes nothing. Reference: huawei-appgallery.md section 2.7.
package struct HMSCancelledPoll: Sendable {
    package let ledger: any SettleLedger
    package let client: HMSClient
    package let intervalSeconds: Double
    package let log: Log

    /// How far back the first poll reads (Huawei's retention is not documented; 30 days, as Google's).
    package static let lookBackMs: Int64 = 30 * 86_400_000
    package static let overlapMs: Int64 = 3_600_000
    package static let maxPages = 50

    package init(ledger: any SettleLedger, client: HMSClient, intervalSeconds: Double, log: Log) {
        (self.ledger, self.client, self.intervalSeconds, self.log) = (ledger, client, intervalSeconds, log)
    }

    @discardableResult
    package func pollIfDue(_ work: SideWork) throws(LedgerError) -> SideWorkOutcome {
        let now = ledger.time.unixSeconds
        let cursor = try ledger.hmsCancelledCursor()
        if let polled = cursor?.polledAt, Double(now.saturatingSubtracting(polled)) < intervalSeconds { return .idle }
        let nowMs = now.saturatingMultiplied(by: 1000)
        let start = min(
            max((cursor?.sinceMs ?? 0).saturatingSubtracting(Self.overlapMs), nowMs - Self.lookBackMs), nowMs)
        var changed = 0
        for root in Set([client.settings.orderURL, client.settings.appTouchOrderURL]).sorted() {
            var token: String?
            var pages = 0
            repeat {
                guard !work.isSpent else { return .answered }
                let page: (purchases: [HMSCancelledPurchase], next: String?)
                switch client.cancelled(root: root, startMs: start, endMs: nowMs, continuationToken: token) {
                case let .success(value): page = value
                case let .failure(failure):
                    log.warning("huawei.cancelled_poll_failed", ["error": failure.message])
                    return HuaweiNotificationInbox.sideWorkOutcome(failure)
                }
                for purchase in page.purchases {
                    let reason = purchase.reason.map { "cancelledReason \($0)" }
                    let why =
                        "HMS lists purchase \(purchase.orderId) as cancelled or refunded"
                        + (reason.map { " (\($0))" } ?? "")
                    let outcomes = try ledger.applyStoreRefund(
                        store: .huawei, grantKey: purchase.orderId, kind: "CANCELLED",
                        reason: reason, why: why, source: "HMS cancelled purchases")
                    changed += outcomes.values.filter { $0 == "revoke_queued" || $0 == "never_delivered" }.count
                }
                token = page.next
                pages += 1
                work.progress()
            } while token != nil && pages < Self.maxPages
        }
        try ledger.advanceHMSCancelledCursor(sinceMs: nowMs, polledAt: now)
        log.info("huawei.cancelled_polled", ["changed": changed])
        return .answered
    }
}

extension HuaweiMigrations {
    static let hmsCursor = LedgerMigration(
        name: "huawei.hms_cursor",
        sqlite:
            "CREATE TABLE huawei_hms_cursor (id INTEGER PRIMARY KEY CHECK (id = 1), since_ms INTEGER NOT NULL, polled_at INTEGER NOT NULL)",
        postgres:
            "CREATE TABLE huawei_hms_cursor (id INTEGER PRIMARY KEY CHECK (id = 1), since_ms BIGINT NOT NULL, polled_at BIGINT NOT NULL)",
        copied: [CopiedTable("huawei_hms_cursor", columns: ["id", "since_ms", "polled_at"])])
}

extension TransactionalLedger {
    /// Where the cancelled purchases poll reads from next, and when it last read; nil before its first poll.
    package func hmsCancelledCursor() throws(LedgerError) -> (sinceMs: Int64, polledAt: Int64)? {
        try reading { db in
            try db.query("SELECT since_ms, polled_at FROM huawei_hms_cursor WHERE id = 1").first.flatMap { row in
                guard let since = row.int("since_ms"), let polled = row.int("polled_at") else { return nil }
                return (since, polled)
            }
        }
    }

    package func advanceHMSCancelledCursor(sinceMs: Int64, polledAt: Int64) throws(LedgerError) {
        try writing { db in
            try db.query(
                """
                INSERT INTO huawei_hms_cursor(id, since_ms, polled_at) VALUES (1, ?, ?)
                ON CONFLICT (id) DO UPDATE SET since_ms = excluded.since_ms, polled_at = excluded.polled_at
                """, [.integer(sinceMs), .integer(polledAt)])
        }
    }
}
