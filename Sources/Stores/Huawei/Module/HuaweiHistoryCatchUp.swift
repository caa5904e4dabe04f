import Foundation
import SettleBase
import SettleHuawei
import SettleLedger
import SettleEngine

/// Catches up on notifications Huawei sent while settle did not take them (the daemon was down,
/// the listener unreachable): reads IAP Kit's notification history (section 1.8: the last 30
/// days, one call a second, paced by the `notification_history` bucket) from where the last run
/// stopped, and stores each verified notification as the endpoint would (a duplicate is
/// recognised by its request id). Its first run reads nothing from before it: it only marks
/// where the next run starts, as the App Store's history catch-up does.
package struct HuaweiHistoryCatchUp: Sendable {
    package let ledger: any SettleLedger
    package let client: IAPKitClient
    package let inbox: HuaweiNotificationInbox
    package let log: Log

    /// Huawei keeps 30 days; a run starts a little inside that.
    package static let retentionMs: Int64 = 29 * 86_400_000
    /// Pages read in one run at most; the rest is read by the next run.
    package static let maxPages = 200
    package static let intervalSeconds: Double = 900
    /// Each run reads again this much before where the last one stopped: Huawei's clock and
    /// this host's differ, and a notification read twice is recognised by its request id.
    package static let overlapMs: Int64 = 300_000
    /// A run reads up to this long before now: Huawei refuses an `endTime` in its future.
    package static let lagMs: Int64 = 5_000

    package var task: StoreTask {
        StoreTask(
            event: "huawei.history_caught_up", failedEvent: "huawei.history_failed",
            intervalSeconds: Self.intervalSeconds
        ) { progress in
            let (stored, read) = try run(progress: progress)
            return StoreTaskReport(fields: [("read", read), ("stored", stored)], needsPass: stored > 0)
        }
    }

    /// One catch-up: how many notifications it stored that were new, and how many it read.
    package func run(progress: @escaping @Sendable () -> Void = {}) throws -> (stored: Int, read: Int) {
        let nowMs = ledger.time.unixSeconds * 1000 - Self.lagMs
        guard let cursor = try ledger.huaweiHistoryCursor() else {
            try ledger.advanceHuaweiHistoryCursor(to: nowMs)
            return (0, 0)
        }
        let start = max(cursor - Self.overlapMs, nowMs - Self.retentionMs)
        guard nowMs > start else { return (0, 0) }
        var token: String?
        var (stored, read, pages) = (0, 0, 0)
        repeat {
            let page: (notifications: [String], next: String?)
            switch client.notificationHistory(startMs: start, endMs: nowMs, continuationToken: token) {
            case let .success(value): page = value
            case let .failure(failure):
                // The cursor stays: the next run reads the same window again.
                throw failure
            }
            for jws in page.notifications {
                read += 1
                if case .stored(fresh: true) = inbox.admit(jws, source: "history") { stored += 1 }
            }
            token = page.next
            pages += 1
            progress()
        } while token != nil && pages < Self.maxPages
        if token == nil { try ledger.advanceHuaweiHistoryCursor(to: nowMs) }
        if stored > 0 { log.warning("huawei.history_found_missed", ["stored": stored, "read": read]) }
        return (stored, read)
    }
}
