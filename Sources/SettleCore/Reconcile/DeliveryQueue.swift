import Foundation

/// The hand-off between a pass's verification workers and its delivery workers: a verified
/// order (already `delivering`, its grant reserved and durable) waits here for its hook, so a
/// verification worker goes straight back to Apple and `schedule.concurrency` requests stay in
/// flight while hooks run. Delivery workers take up to `delivery.batch_size` orders at a time.
final class DeliveryQueue: @unchecked Sendable {
    private let condition = NSCondition()
    private var orders: [Order] = []
    private var producing = true
    /// Batches taken and not yet finished: a delivery may queue more (an order re-matched
    /// after "already granted"), so the queue is over only when none is in progress.
    private var inProgress = 0
    private var abandoned = false

    func put(_ order: Order) {
        condition.lock()
        orders.append(order)
        condition.signal()
        condition.unlock()
    }

    /// Up to `limit` orders, waiting while none is queued and more may come; nil once the
    /// verification workers are done, nothing is queued and no delivery is in progress.
    /// Every non-nil answer must be followed by `finished()`.
    func take(limit: Int) -> [Order]? {
        condition.lock()
        defer { condition.unlock() }
        while orders.isEmpty && !abandoned && (producing || inProgress > 0) {
            condition.wait()
        }
        guard !abandoned, !orders.isEmpty else { return nil }
        let batch = Array(orders.prefix(max(1, limit)))
        orders.removeFirst(batch.count)
        inProgress += 1
        return batch
    }

    func finished() {
        condition.lock()
        inProgress -= 1
        condition.broadcast()
        condition.unlock()
    }

    /// The verification workers are done: once the queue drains, delivery workers stop.
    func producersFinished() {
        condition.lock()
        producing = false
        condition.broadcast()
        condition.unlock()
    }

    /// The pass failed: deliveries not started stay `delivering` with their lease, for rescue.
    func abandon() {
        condition.lock()
        abandoned = true
        condition.broadcast()
        condition.unlock()
    }
}
