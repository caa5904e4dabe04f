
/// What one reconcile pass did, for the summary line, the exit code and the logs.
package struct PassReport: Sendable, Equatable {
    package var reconciled = 0
    package var finished = 0
    package var rejected = 0
    package var retrying = 0
    package var needsAttention = 0
    /// Verifications that got an answer from Apple (any answer, even a rejection).
    package var appleAnswers = 0
    /// Verifications that failed because Apple as a whole was unavailable.
    package var appleWideFailures = 0
    /// Whether the Apple breaker opened during this pass and stopped claiming.
    package var breakerOpened = false
    /// Set when the breaker was already open: nothing was claimed, Apple is retried then.
    package var breakerWaitUntil: Int64?
    /// Set when the pass stopped on a configuration fault (e.g. 21004).
    package var configurationFault: String?
    /// Revokes the hook confirmed and refund requests answered (notifications' work).
    package var revoked = 0
    package var refundRequestsAnswered = 0
    /// Named orders (`--order`) that were not reconciled, and why.
    package var skipped: [SkippedOrder] = []

    package struct SkippedOrder: Sendable, Equatable {
        package var orderId: String
        package var why: String
        package var exists: Bool
    }

    package init() {}

    /// Apple never answered during a pass that needed it.
    package var appleUnavailableForWholePass: Bool { appleAnswers == 0 && (appleWideFailures > 0 || breakerWaitUntil != nil) }

    package var summaryLine: String {
        var line = "reconciled \(reconciled): \(finished) finished, \(rejected) rejected, \(retrying) retrying, \(needsAttention) needs attention"
        if revoked > 0 { line += ", \(revoked) revoked" }
        if refundRequestsAnswered > 0 { line += ", \(refundRequestsAnswered) refund requests answered" }
        return line
    }
}
