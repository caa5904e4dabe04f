import Foundation

/// The hand-off between a pass's verification workers and its delivery workers: a verified
/// order (already `delivering`, its grant reserved and durable) waits here for its hook, so a
/// verification worker goes straight back to Apple and `schedule.concurrency` requests stay in
/// flight while hooks run. Delivery workers take up to `delivery.batch_size` orders at a time.
///
/// The queue holds at most `capacity` orders (one round of the delivery workers): a
/// verification worker that finds it full waits, so verification never runs ahead of the
/// hooks, a shutdown has at most one round of deliveries to finish, and no order waits
/// here for longer than its delivery lease lasts in the common case. The lease is checked
/// again when the hook starts all the same (`Reconciler.deliver`).
final class DeliveryQueue: @unchecked Sendable {
    let capacity: Int
    private let condition = NSCondition()
    private var orders: [Order] = []
    private var producing = true
    /// Batches taken and not yet finished: the queue is over only when none is in progress.
    private var inProgress = 0
    private var abandoned = false
    private var blockedProducers = 0

    init(capacity: Int) {
        self.capacity = max(1, capacity)
    }

    /// Queues `order`, waiting while the queue is full. False when the pass was abandoned
    /// meanwhile: the order stays `delivering` under its lease, for rescue.
    @discardableResult
    func put(_ order: Order) -> Bool {
        condition.lock()
        defer { condition.unlock() }
        // Counted while it waits: others see it only then, the lock being held otherwise.
        blockedProducers += 1
        while orders.count >= capacity && !abandoned {
            condition.wait()
        }
        blockedProducers -= 1
        guard !abandoned else { return false }
        orders.append(order)
        condition.broadcast()
        return true
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
        // Room again: wake a verification worker waiting to put.
        condition.broadcast()
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

    /// The pass failed: deliveries not started stay `delivering` with their lease, for rescue,
    /// and verification workers waiting for room are let go.
    func abandon() {
        condition.lock()
        abandoned = true
        condition.broadcast()
        condition.unlock()
    }

    /// How many orders wait for a hook, and how many verification workers wait for room (tests).
    var state: (queued: Int, waitingToPut: Int) {
        condition.lock()
        defer { condition.unlock() }
        return (orders.count, blockedProducers)
    }
}
