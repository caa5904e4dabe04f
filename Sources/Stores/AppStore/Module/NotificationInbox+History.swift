import Foundation
import SettleBase
import SettleModel
import SettleAppStore
import SettleLedger
import SettleEngine

/// What one Get Notification History catch-up did.
package struct HistorySyncReport: Sendable, Equatable {
    /// Notifications stored now that the endpoint had missed.
    package var stored = 0
    package var pages = 0
    /// Some stored notification left work for a pass.
    package var needsPass = false
    /// Why it stopped early (Apple unavailable, the breaker open, a notification our verifier
    /// refused or the ledger could not store), nil when it read everything.
    package var stoppedBecause: String?
}

/// Get Notification History from the last point seen, so a notification sent while settle was
/// down (or lost on the way) is found within one interval.
extension NotificationInbox {
    /// Apple keeps 180 days of production notifications and 30 of sandbox ones.
    package static func retentionMs(_ environment: AppleEnvironment) -> Int64 { (environment == .production ? 180 : 30) * 86_400_000 }
    /// Each window starts this far before the last one ended: a notification Apple records a
    /// little late is still seen; the UUID makes the overlap harmless.
    package static let overlapMs: Int64 = 10 * 60_000
    /// Pages read per environment per catch-up; the cursor keeps the place for the next one.
    package static let maxPagesPerSync = 50
    /// How long one host's hold on an environment's catch-up lasts without a page saved: several
    /// Apple round trips. A host that dies mid-page hands over this much later, at its last page.
    package static let historyLeaseSeconds: Int64 = 180

    /// Who reads history here, for the catch-up's lease: this process on this host.
    package static var historyOwner: String {
        let me = LeaseOwner.current
        return "\(me.host) \(me.pid) \(me.leaseStart)"
    }

    /// Reads what Apple sent since the last point seen. `progress` is called after each page
    /// (the daemon kicks its watchdog there: a long catch-up is work, not a hang).
    /// Its calls take the pacer's last place (`.historyCatchUp`): due work goes first.
    package func syncHistory(progress: () -> Void = {}) throws(LedgerError) -> HistorySyncReport {
        let read = PacerPriority.$work.withValue(.historyCatchUp) { () -> Result<HistorySyncReport, LedgerError> in
            do throws(LedgerError) { return .success(try readHistory(progress: progress)) } catch { return .failure(error) }
        }
        return try read.get()
    }

    /// Where a catch-up goes after one environment: on to the next, or it stops.
    private enum AfterEnvironment { case next, stop }

    private func readHistory(progress: () -> Void) throws(LedgerError) -> HistorySyncReport {
        var report = HistorySyncReport()
        guard let api else { return report }
        let before = try ledger.breakers()[.appStore] ?? StoreBreaker()
        var breaker = before
        defer { if breaker != before { try? ledger.saveBreaker(breaker, of: .appStore) } }
        if case let .wait(until) = breaker.permission(now: ledger.time.unixSeconds) {
            report.stoppedBecause = "the Apple breaker is open until \(Timestamp.rfc3339(unixSeconds: until))"
            return report
        }
        for environment: AppleEnvironment in [.production] + (acceptSandbox ? [.sandbox] : []) {
            let after = try readHistory(environment, api: api, breaker: &breaker, report: &report, progress: progress)
            if after == .stop { break }
        }
        return report
    }

    /// One environment's catch-up, under this host's hold on it: one host at a time reads an
    /// environment's history; the others find it held and leave it (the UUIDs would make a second
    /// reader harmless, but not cheap).
    private func readHistory(_ environment: AppleEnvironment, api: AppStoreServerClient, breaker: inout StoreBreaker,
                             report: inout HistorySyncReport, progress: () -> Void) throws(LedgerError) -> AfterEnvironment {
        let owner = Self.historyOwner
        guard var cursor = try ledger.claimNotificationHistory(environment: environment, owner: owner,
                                                               leaseSeconds: Self.historyLeaseSeconds) else {
            log.info("notifications.history_held", ["environment": environment, "by": "another settle"])
            return .next
        }
        defer { try? ledger.releaseNotificationHistory(environment: environment, owner: owner) }
        /// Saves the place; false once another host took the catch-up over (this one's lease lapsed).
        func save(_ cursor: NotificationCursor) throws(LedgerError) -> Bool {
            try ledger.saveNotificationCursor(cursor, environment: environment, owner: owner, leaseSeconds: Self.historyLeaseSeconds)
        }
        guard try openWindow(&cursor, environment: environment, save: save) else { return .next }
        var restarted = false
        for _ in 0..<Self.maxPagesPerSync {
            let result = api.notificationHistory(environment: environment, startMs: cursor.windowStartMs!, endMs: cursor.windowEndMs!,
                                                 paginationToken: cursor.paginationToken)
            report.pages += 1
            progress()
            switch result {
            case let .ok(page):
                breaker.recordAnswer()
                if let after = store(page.signedPayloads, environment: environment, report: &report) { return after }
                if page.hasMore, let token = page.paginationToken {
                    cursor.paginationToken = token
                    guard try save(cursor) else {
                        report.stoppedBecause = "another settle took the history catch-up over"
                        return .next
                    }
                    continue
                }
                cursor = NotificationCursor(syncedUntilMs: cursor.windowEndMs, startedAtMs: cursor.startedAtMs)
                _ = try save(cursor)
                return .next
            case .paginationExpired where !restarted:
                restarted = true
                cursor.paginationToken = nil
            case .paginationExpired:
                report.stoppedBecause = "Apple refused the pagination token twice"
                return .next
            case let .failed(outcome, _):
                return failed(outcome, environment: environment, breaker: &breaker, report: &report)
            }
        }
        _ = try save(cursor)
        return .next
    }

    /// Sets the window the catch-up reads: on the first start, from now (what the app granted
    /// before settle is not settle's) or from notifications.backfill_since (purchases older than
    /// now that catch-up finds are reported for a person, never delivered); after a finished
    /// window, from where it ended, a little overlapped. False when there is nothing to read now.
    private func openWindow(_ cursor: inout NotificationCursor, environment: AppleEnvironment,
                            save: (NotificationCursor) throws(LedgerError) -> Bool) throws(LedgerError) -> Bool {
        let nowMs = ledger.time.unixSeconds * 1000
        if cursor == NotificationCursor() {
            let since = backfillSinceMs.map { min($0, nowMs) } ?? nowMs
            cursor = NotificationCursor(syncedUntilMs: since, startedAtMs: nowMs)
            guard try save(cursor) else { return false }
            log.info("notifications.history_started", ["environment": environment, "since": Timestamp.rfc3339(milliseconds: since),
                                                       "backfill": backfillSinceMs != nil])
            if since >= nowMs { return false }
            cursor.windowStartMs = max(nowMs - Self.retentionMs(environment), since)
            cursor.windowEndMs = nowMs
        }
        if cursor.windowStartMs == nil || cursor.windowEndMs == nil {
            let oldest = nowMs - Self.retentionMs(environment)
            // Saturating: the cursor is a ledger row, and a backend may have written Int64.min there.
            cursor.windowStartMs = max(oldest, (cursor.syncedUntilMs ?? oldest).saturatingSubtracting(Self.overlapMs))
            cursor.windowEndMs = nowMs
            cursor.paginationToken = nil
        }
        return true
    }

    /// Stores one page's notifications; where the catch-up goes when one could not be, nil when
    /// every one was.
    private func store(_ payloads: [String], environment: AppleEnvironment, report: inout HistorySyncReport) -> AfterEnvironment? {
        for payload in payloads {
            switch receive(signedPayload: payload, source: "history") {
            case let .stored(result):
                if !result.duplicate { report.stored += 1 }
                report.needsPass = report.needsPass || result.needsPass
            case let .refused(failure):
                // Apple's own history, read over its authenticated API: a refusal means our
                // verifier is wrong (roots, clock, configuration). Skipping would lose the
                // notification for ever, so the cursor stays and the next interval reads this
                // page again.
                report.stoppedBecause = "settle's verifier refused a notification from Apple's history (\(failure.code)); "
                    + "the catch-up stops here and tries again next interval"
                log.error("notifications.history_refused", ["environment": environment, "reason": failure.code,
                                                            "detail": "\(failure)",
                                                            "effect": "catch-up stopped, its place kept; check the roots and the clock"])
                return .next
            case let .notStored(message):
                // Not even a record of it could be written: the ledger is failing. Keep the place;
                // the next interval tries again.
                report.stoppedBecause = "a notification from history could not be stored: \(message)"
                log.error("notifications.history_not_stored", ["environment": environment, "error": message,
                                                               "effect": "catch-up stopped, its place kept"])
                return .stop
            }
        }
        return nil
    }

    /// A page Apple did not serve: settle's own pace and Apple's outage stop the catch-up (the
    /// place is kept, the rest waits for the next interval); any other failure ends this
    /// environment's.
    private func failed(_ outcome: VerificationOutcome, environment: AppleEnvironment, breaker: inout StoreBreaker,
                        report: inout HistorySyncReport) -> AfterEnvironment {
        if case let .paced(message) = outcome {
            log.info("notifications.history_paced", ["environment": environment, "why": message])
            report.stoppedBecause = message
            return .stop
        }
        if case let .storeUnavailable(message, retryAfter) = outcome {
            let opened = breaker.recordFailure(message, retryAfter: retryAfter, now: ledger.time.unixSeconds,
                                               baseSeconds: policy.baseSeconds, maxSeconds: policy.maxSeconds)
            log.warning("notifications.history_unavailable", ["environment": environment, "error": message,
                                                              "breaker": opened ? "opened" : breaker.state.rawValue])
            report.stoppedBecause = message
            return .stop
        }
        let message = Self.failure(outcome).message
        log.error("notifications.history_failed", ["environment": environment, "error": message])
        report.stoppedBecause = message
        return .next
    }
}
