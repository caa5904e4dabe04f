import Foundation

/// What one Get Notification History catch-up did.
public struct HistorySyncReport: Sendable, Equatable {
    /// Notifications stored now that the endpoint had missed.
    public var stored = 0
    public var pages = 0
    /// Some stored notification left work for a pass.
    public var needsPass = false
    /// Why it stopped early (Apple unavailable, the breaker open), nil when it read everything.
    public var stoppedBecause: String?
}

/// Get Notification History from the last point seen, so a notification sent while settle was
/// down (or lost on the way) is found within one interval.
extension NotificationInbox {
    /// Apple keeps 180 days of production notifications and 30 of sandbox ones.
    static func retentionMs(_ environment: String) -> Int64 { (environment == "Production" ? 180 : 30) * 86_400_000 }
    /// Each window starts this far before the last one ended: a notification Apple records a
    /// little late is still seen; the UUID makes the overlap harmless.
    static let overlapMs: Int64 = 10 * 60_000
    /// Pages read per environment per catch-up; the cursor keeps the place for the next one.
    static let maxPagesPerSync = 50

    public func syncHistory() throws(LedgerError) -> HistorySyncReport {
        var report = HistorySyncReport()
        guard let api else { return report }
        let before = try ledger.appleBreaker()
        var breaker = before
        defer { if breaker != before { try? ledger.saveAppleBreaker(breaker) } }
        if case let .wait(until) = breaker.permission(now: ledger.time.unixSeconds) {
            report.stoppedBecause = "the Apple breaker is open until \(Timestamp.rfc3339(unixSeconds: until))"
            return report
        }
        environments: for environment in ["Production"] + (acceptSandbox ? ["Sandbox"] : []) {
            var cursor = try ledger.notificationCursor(environment: environment)
            let nowMs = ledger.time.unixSeconds * 1000
            if cursor.windowStartMs == nil || cursor.windowEndMs == nil {
                let oldest = nowMs - Self.retentionMs(environment)
                cursor.windowStartMs = max(oldest, (cursor.syncedUntilMs ?? oldest) - Self.overlapMs)
                cursor.windowEndMs = nowMs
                cursor.paginationToken = nil
            }
            var restarted = false
            for _ in 0..<Self.maxPagesPerSync {
                let result = api.notificationHistory(environment: environment, startMs: cursor.windowStartMs!, endMs: cursor.windowEndMs!,
                                                     paginationToken: cursor.paginationToken)
                report.pages += 1
                switch result {
                case let .ok(page):
                    breaker.recordAnswer()
                    for payload in page.signedPayloads {
                        switch receive(signedPayload: payload, source: "history") {
                        case let .stored(result):
                            if !result.duplicate { report.stored += 1 }
                            report.needsPass = report.needsPass || result.needsPass
                        case .refused: continue
                        case let .notStored(message): throw LedgerError.invalid("a notification from history was not stored: \(message)")
                        }
                    }
                    if page.hasMore, let token = page.paginationToken {
                        cursor.paginationToken = token
                        try ledger.saveNotificationCursor(cursor, environment: environment)
                        continue
                    }
                    cursor = NotificationCursor(syncedUntilMs: cursor.windowEndMs)
                    try ledger.saveNotificationCursor(cursor, environment: environment)
                    continue environments
                case .paginationExpired where !restarted:
                    restarted = true
                    cursor.paginationToken = nil
                case .paginationExpired:
                    report.stoppedBecause = "Apple refused the pagination token twice"
                    continue environments
                case let .failed(outcome, _):
                    if case let .appleUnavailable(message, retryAfter) = outcome {
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
            try ledger.saveNotificationCursor(cursor, environment: environment)
        }
        return report
    }
}
