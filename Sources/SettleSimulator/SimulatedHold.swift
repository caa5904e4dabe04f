import Foundation

/// Holds a simulated store's answers until the test lets them go: a store that is slow for as
/// long as the test needs, without a clock or a sleep deciding the outcome. A held answer is
/// let go after `limit` seconds at most, so a test that fails never hangs.
package final class SimulatedHold: @unchecked Sendable {
    private let condition = NSCondition()
    // Guarded by `condition`.
    private var holding = false
    private var waiting = 0

    package init() {}

    /// From now on every answer waits until `release()`.
    package func hold() {
        condition.lock()
        holding = true
        condition.unlock()
    }

    package func release() {
        condition.lock()
        holding = false
        condition.broadcast()
        condition.unlock()
    }

    /// How many answers are held now.
    package var held: Int {
        condition.lock()
        defer { condition.unlock() }
        return waiting
    }

    /// Called before answering: waits while held (at most `limit` seconds).
    package func pass(limit: TimeInterval = 20) {
        condition.lock()
        defer { condition.unlock() }
        guard holding else { return }
        waiting += 1
        let until = Date().addingTimeInterval(limit)
        while holding && condition.wait(until: until) {}
        waiting -= 1
    }
}
