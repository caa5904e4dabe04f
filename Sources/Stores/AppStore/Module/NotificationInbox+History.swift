import Foundation
import SettleBase
import SettleModel
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
        environments: for environment: AppleEnvironment in [.production] + (acceptSandbox ? [.sandbox] : []) {
            // One host at a time reads an environment's history; the others find it held and
            // leave it (the UUIDs would make a second reader harmless, but not cheap).
            let owner = Self.historyOwner
            guard var cursor = try ledger.claimNotificationHistory(environment: environment, owner: owner,
                                                                   leaseSeconds: Self.historyLeaseSeconds) else {
                log.info("notifications.history_held", ["environment": environment, "by": "another settle"])
                continue environments
            }
            defer { try? ledger.releaseNotificationHistory(environment: environment, owner: owner) }
            /// Saves the place; false once another host took the catch-up over (this one's lease lapsed).
            func save(_ cursor: NotificationCursor) throws(LedgerError) -> Bool {
                try ledger.saveNotificationCursor(cursor, environment: environment, owner: owner, leaseSeconds: Self.historyLeaseSeconds)
            }
            let nowMs = ledger.time.unixSeconds * 1000
            if cursor == NotificationCursor() {
                // The first start: history begins now (what the app granted before settle is not
                // settle's), or at notifications.backfill_since; purchases older than now that
                // catch-up finds are reported for a person, never delivered.
                let since = backfillSinceMs.map { min($0, nowMs) } ?? nowMs
                cursor = NotificationCursor(syncedUntilMs: since, startedAtMs: nowMs)
                guard try save(cursor) else { continue environments }
                log.info("notifications.history_started", ["environment": environment, "since": Timestamp.rfc3339(milliseconds: since),
                                                           "backfill": backfillSinceMs != nil])
                if since >= nowMs { continue environments }
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
            var restarted = false
            for _ in 0..<Self.maxPagesPerSync {
                let result = api.notificationHistory(environment: environment, startMs: cursor.windowStartMs!, endMs: cursor.windowEndMs!,
                                                     paginationToken: cursor.paginationToken)
                report.pages += 1
                progress()
                switch result {
                case let .ok(page):
                    breaker.recordAnswer()
                    for payload in page.signedPayloads {
                        switch receive(signedPayload: payload, source: "history") {
                        case let .stored(result):
                            if !result.duplicate { report.stored += 1 }
                            report.needsPass = report.needsPass || result.needsPass
                        case let .refused(failure):
                            // Apple's own history, read over its authenticated API: a refusal means
                            // our verifier is wrong (roots, clock, configuration). Skipping would lose
                            // the notification for ever, so the cursor stays and the next interval
                            // reads this page again.
                            report.stoppedBecause = "settle's verifier refused a notification from Apple's history (\(failure.code)); "
                                + "the catch-up stops here and tries again next interval"
                            log.error("notifications.history_refused", ["environment": environment, "reason": failure.code,
                                                                        "detail": "\(failure)",
                                                                        "effect": "catch-up stopped, its place kept; check the roots and the clock"])
                            continue environments
                        case let .notStored(message):
                            // Not even a record of it could be written: the ledger is failing. Keep
                            // the place; the next interval tries again.
                            report.stoppedBecause = "a notification from history could not be stored: \(message)"
                            log.error("notifications.history_not_stored", ["environment": environment, "error": message,
                                                                           "effect": "catch-up stopped, its place kept"])
                            break environments
                        }
                    }
                    if page.hasMore, let token = page.paginationToken {
                        cursor.paginationToken = token
                        guard try save(cursor) else {
                            report.stoppedBecause = "another settle took the history catch-up over"
                            continue environments
                        }
                        continue
                    }
                    cursor = NotificationCursor(syncedUntilMs: cursor.windowEndMs, startedAtMs: cursor.startedAtMs)
                    _ = try save(cursor)
                    continue environments
                case .paginationExpired where !restarted:
                    restarted = true
                    cursor.paginationToken = nil
                case .paginationExpired:
                    report.stoppedBecause = "Apple refused the pagination token twice"
                    continue environments
                case let .failed(outcome, _):
                    if case let .paced(message) = outcome {
                        // settle's own pace: the place is kept, the rest waits for the next interval.
                        log.info("notifications.history_paced", ["environment": environment, "why": message])
                        report.stoppedBecause = message
                        break environments
                    }
                    if case let .storeUnavailable(message, retryAfter) = outcome {
                        let opened = breaker.recordFailure(message, retryAfter: retryAfter, now: ledger.time.unixSeconds,
                                                           baseSeconds: policy.baseSeconds, maxSeconds: policy.maxSeconds)
                        log.warning("notifications.history_unavailable", ["environment": environment, "error": message,
                                                                          "breaker": opened ? "opened" : breaker.state.rawValue])
                        report.stoppedBecause = message
                        break environments
                    }
                    let message = Self.failure(outcome).message
                    log.error("notifications.history_failed", ["environment": environment, "error": message])
                    report.stoppedBecause = message
                    continue environments
                }
            }
            _ = try save(cursor)
        }
        return report
    }
}
