import SettleBase

/// Work a store needs on a timer of its own (Apple's notification history catch-up), which the
/// daemon runs at start and every `intervalSeconds` without knowing what it is, on its work
/// queue between passes.
package struct StoreTask: Sendable {
    /// The task's log events: `<event>` when it ran, `<event failed>` when it threw.
    package var event: String
    package var failedEvent: String
    package var intervalSeconds: Double
    /// Runs the task once; `progress` kicks the watchdog after each bounded piece of work.
    package var run: @Sendable (_ progress: @escaping @Sendable () -> Void) throws -> StoreTaskReport

    package init(event: String, failedEvent: String, intervalSeconds: Double,
                 run: @escaping @Sendable (_ progress: @escaping @Sendable () -> Void) throws -> StoreTaskReport) {
        self.event = event
        self.failedEvent = failedEvent
        self.intervalSeconds = intervalSeconds
        self.run = run
    }
}

/// What one run of a task came to: fields for its log line, and whether it left work a pass
/// should do now (a purchase to deliver, a refund to take back).
package struct StoreTaskReport {
    package var fields: [(String, Any?)]
    package var needsPass: Bool

    package init(fields: [(String, Any?)], needsPass: Bool) {
        self.fields = fields
        self.needsPass = needsPass
    }
}
