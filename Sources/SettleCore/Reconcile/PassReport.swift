/// What one reconcile pass did, for the summary line, the exit code and the logs.
public struct PassReport: Sendable, Equatable {
    public var reconciled = 0
    public var finished = 0
    public var rejected = 0
    public var retrying = 0
    public var needsAttention = 0
    /// Verifications that got an answer from Apple (any answer, even a rejection).
    public var appleAnswers = 0
    /// Verifications that failed because Apple as a whole was unavailable.
    public var appleWideFailures = 0
    /// Whether the Apple breaker opened during this pass and stopped claiming.
    public var breakerOpened = false
    /// Set when the breaker was already open: nothing was claimed, Apple is retried then.
    public var breakerWaitUntil: Int64?
    /// Set when the pass stopped on a configuration fault (e.g. 21004).
    public var configurationFault: String?
    /// Revokes the hook confirmed and refund requests answered (notifications' work).
    public var revoked = 0
    public var refundRequestsAnswered = 0
    /// Named orders (`--order`) that were not reconciled, and why.
    public var skipped: [SkippedOrder] = []

    public struct SkippedOrder: Sendable, Equatable {
        public var orderId: String
        public var why: String
        public var exists: Bool
    }

    public init() {}

    /// Apple never answered during a pass that needed it.
    public var appleUnavailableForWholePass: Bool { appleAnswers == 0 && (appleWideFailures > 0 || breakerWaitUntil != nil) }

    public var summaryLine: String {
        var line = "reconciled \(reconciled): \(finished) finished, \(rejected) rejected, \(retrying) retrying, \(needsAttention) needs attention"
        if revoked > 0 { line += ", \(revoked) revoked" }
        if refundRequestsAnswered > 0 { line += ", \(refundRequestsAnswered) refund requests answered" }
        return line
    }
}
