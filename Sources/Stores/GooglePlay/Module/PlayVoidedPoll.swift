import Foundation
import SettleBase
import SettleModel
import SettleGooglePlay
import SettleLedger
import SettleEngine

/// Reads Google Play's voided purchases (`purchases.voidedpurchases.list`: refunds, chargebacks,
/// revocations of the last 30 days) every `google_play.voided_poll_interval_seconds`, paged, with
/// where it is kept in the ledger (`play_cursor`), and applies each as Apple's REFUND is applied:
/// never delivered if not yet delivered, revoked through the revoke hook if it was.
///
/// Each window starts at the newest voided time seen before (inclusive, so nothing at that
/// millisecond is missed); what is seen twice changes nothing.
package struct PlayVoidedPoll: Sendable {
    package let ledger: any SettleLedger
    package let client: PlayDeveloperClient
    package let intervalSeconds: Double
    package let log: Log

    /// Google keeps voided purchases for 30 days.
    package static let lookBackMs: Int64 = 30 * 86_400_000
    /// Pages read in one poll at most; the rest follows at the next (the page token is kept).
    package static let maxPages = 50

    package init(ledger: any SettleLedger, client: PlayDeveloperClient, intervalSeconds: Double, log: Log) {
        self.ledger = ledger
        self.client = client
        self.intervalSeconds = intervalSeconds
        self.log = log
    }

    /// Polls when the interval has passed since the last poll, a page at a time while `work`
    /// lasts (the page token is kept: the next pass reads on). What Google said of itself is the
    /// outcome: a store-wide failure stops the poll and feeds Google's breaker.
    @discardableResult
    package func pollIfDue(_ work: SideWork) throws(LedgerError) -> SideWorkOutcome {
        let now = ledger.time.unixSeconds
        var cursor = try ledger.playVoidedCursor()
        if let polled = cursor.polledAt, Double(now.saturatingSubtracting(polled)) < intervalSeconds { return .idle }
        let oldest = now * 1000 - Self.lookBackMs
        // Never after now: a cursor row a backend wrote (or a voided time Google sent) in the future
        // would ask Google for nothing, for ever.
        let start = min(max(cursor.sinceMs ?? oldest, oldest), now * 1000)
        var newest = start
        var changed = 0
        var pages = 0
        repeat {
            if pages > 0 { work.progress() }
            guard !work.isSpent else {
                log.info("google_play.voided_poll_paused", ["pages": pages, "changed": changed, "why": "this pass's time for Google is spent"])
                return .answered
            }
            let page: VoidedPurchasePage
            do {
                page = try client.voidedPurchases(startTime: start, pageToken: cursor.pageToken)
            } catch {
                log.warning("google_play.voided_poll_failed", ["error": error.description, "kind": error.kind.rawValue])
                return error.sideWorkOutcome
            }
            pages += 1
            for voided in page.purchases {
                // A voided time after now (Int64.max) is not believed: the cursor never passes now.
                newest = max(newest, min(voided.voidedTimeMillis ?? newest, now * 1000))
                let outcomes = try ledger.applyPlayVoided(token: voided.purchaseToken, googleOrderId: voided.orderId,
                                                          quantity: voided.voidedQuantity, voidedTimeMs: voided.voidedTimeMillis,
                                                          reason: voided.rawVoidedReason.map(String.init),
                                                          source: "voided purchases")
                for (order, outcome) in outcomes where outcome != "already_recorded" {
                    changed += 1
                    log.warning("order.voided", ["order": order, "google_order": voided.orderId, "outcome": outcome])
                }
            }
            if page.unreadable > 0 { log.warning("google_play.voided_unreadable", ["entries": page.unreadable]) }
            cursor.pageToken = page.nextPageToken
            try ledger.savePlayVoidedCursor(cursor)
        } while cursor.pageToken != nil && pages < Self.maxPages
        if cursor.pageToken == nil {
            cursor.sinceMs = newest
            cursor.polledAt = now
            try ledger.savePlayVoidedCursor(cursor)
        }
        log.info("google_play.voided_polled", ["pages": pages, "changed": changed])
        work.progress()
        return .answered
    }

    /// What a search of the list found.
    package enum Search: Sendable {
        case found(VoidedPurchase)
        /// Google does not list it within `maxPages`.
        case notListed
        /// `work` was spent before the search ended: searched again at the next pass.
        case unfinished
    }

    /// Google's own entry for one voiding, read from the list since `since` (Unix ms): the entry
    /// naming `orderId` (with a matching token), or, for a purchase without an order id, the one
    /// of `token`. A page at a time while `work` lasts, kicking its progress after each.
    package static func find(orderId: String?, token: PurchaseToken, since: Int64, client: PlayDeveloperClient,
                             work: SideWork) throws(PlayAPIError) -> Search {
        var pageToken: String? = nil
        var pages = 0
        repeat {
            if pages > 0 {
                work.progress()
                if work.isSpent { return .unfinished }
            }
            let page = try client.voidedPurchases(startTime: since, pageToken: pageToken)
            pages += 1
            if let entry = page.purchases.first(where: { $0.purchaseToken == token && $0.orderId == orderId }) { return .found(entry) }
            pageToken = page.nextPageToken
        } while pageToken != nil && pages < maxPages
        return .notListed
    }
}
