import Dispatch
import Foundation
import SettleModel

/// The hand-off between a pass's verification workers and its delivery workers: a verified
/// order (already `delivering`, its grant reserved and durable) waits here for its hook, so a
/// verification worker goes straight back to Apple and `schedule.concurrency` requests stay in
/// flight while hooks run. Delivery workers take up to `delivery.batch_size` orders at a time.
///
/// The queue holds at most `capacity` orders (one round of the delivery workers): a
/// verification worker that finds it full waits, so verification never runs ahead of the
/// hooks, a shutdown has at most one round of deliveries to finish, and no order waits
/// here for longer than its delivery lease lasts in the common case. Each order carries when its
/// lease was taken: one that waited longer than a renewal interval has its claim taken again
/// when the hook starts (`Reconciler.deliver`).
///
/// Producers and consumers wait on conditions of their own and each change wakes only the
/// waiters it can help: with one condition and broadcasts, every queued order woke every idle
/// delivery worker (about 35 context switches an order at concurrency 32). A hand-off wakes its
/// waiter after releasing the lock, so the woken thread does not sleep again on the mutex.
package final class DeliveryQueue: @unchecked Sendable {
    /// A `delivering` order and when its delivery lease was taken, at the latest (the lease runs
    /// until at least then plus its length): on the ledger's clock, and on this host's monotonic
    /// clock, which a step of the wall clock cannot move back.
    package struct Leased: Sendable {
        package var order: Order
        package var leasedAt: Int64
        package var leasedAtUptimeNanoseconds: UInt64

        package init(_ order: Order, leasedAt: Int64, uptimeNanoseconds: UInt64 = DispatchTime.now().uptimeNanoseconds) {
            self.order = order
            self.leasedAt = leasedAt
            leasedAtUptimeNanoseconds = uptimeNanoseconds
        }

        /// Seconds since the lease was taken: the longer of the two clocks' answers.
        package func age(now: Int64, uptimeNanoseconds: UInt64 = DispatchTime.now().uptimeNanoseconds) -> Int64 {
            let monotonic = Int64((uptimeNanoseconds &- leasedAtUptimeNanoseconds) / 1_000_000_000)
            return max(now - leasedAt, uptimeNanoseconds >= leasedAtUptimeNanoseconds ? monotonic : 0)
        }
    }

    package let capacity: Int
    /// One mutex and two conditions, owned here and destroyed in deinit.
    private let mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
    /// Delivery workers wait here for orders (or for the end of the pass).
    private let hasOrders = UnsafeMutablePointer<pthread_cond_t>.allocate(capacity: 1)
    /// Verification workers wait here for room.
    private let hasRoom = UnsafeMutablePointer<pthread_cond_t>.allocate(capacity: 1)
    /// Queued orders from `head` on (those before it are taken): taking moves `head` instead of
    /// every order behind it.
    private var orders: [Leased] = []
    private var head = 0
    private var queued: Int { orders.count - head }
    private var producing = true
    /// Batches taken and not yet finished: the queue is over only when none is in progress.
    private var inProgress = 0
    private var abandoned = false
    private var blockedProducers = 0
    /// Places kept for verified orders whose answers are still being recorded (`reserve`).
    private var reserved = 0

    package init(capacity: Int) {
        self.capacity = max(1, capacity)
        pthread_mutex_init(mutex, nil)
        pthread_cond_init(hasOrders, nil)
        pthread_cond_init(hasRoom, nil)
    }

    deinit {
        pthread_cond_destroy(hasRoom)
        pthread_cond_destroy(hasOrders)
        pthread_mutex_destroy(mutex)
        hasRoom.deallocate()
        hasOrders.deallocate()
        mutex.deallocate()
    }

    private func locked<T>(_ body: () -> T) -> T {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return body()
    }

    /// Queues `order`, waiting while the queue is full. False when the pass was abandoned
    /// meanwhile: the order stays `delivering` under its lease, for rescue.
    @discardableResult
    package func put(_ order: Leased) -> Bool {
        let queued = locked {
            guard waitForRoom() else { return false }
            orders.append(order)
            return true
        }
        if queued { pthread_cond_signal(hasOrders) }
        return queued
    }

    /// Waits for room for one order and keeps it: a verification worker whose store confirmed a
    /// purchase keeps its place before a recorder writes the answer down, so verification never
    /// runs ahead of the hooks. False when the pass was abandoned meanwhile. Every true answer is
    /// followed by `put(reserved:)` or `cancelReservation()`.
    package func reserve() -> Bool {
        locked {
            guard waitForRoom() else { return false }
            reserved += 1
            return true
        }
    }

    /// Waits, the lock held, until the queue has room; false when the pass was abandoned meanwhile.
    private func waitForRoom() -> Bool {
        // Counted while it waits: others see it only then, the lock being held otherwise.
        blockedProducers += 1
        while queued + reserved >= capacity && !abandoned {
            pthread_cond_wait(hasRoom, mutex)
        }
        blockedProducers -= 1
        return !abandoned
    }

    /// `reserve` when there is room now; false (nothing kept) when it would wait.
    package func tryReserve() -> Bool {
        locked {
            guard queued + reserved < capacity && !abandoned else { return false }
            reserved += 1
            return true
        }
    }

    /// Queues `order` in the place `reserve` kept: never waits. False when the pass was abandoned.
    @discardableResult
    package func put(reserved order: Leased) -> Bool {
        let queued = locked {
            reserved -= 1
            guard !abandoned else { return false }
            orders.append(order)
            return true
        }
        if queued { pthread_cond_signal(hasOrders) }
        return queued
    }

    /// Gives back a place `reserve` kept (the answer did not end in a delivery).
    package func cancelReservation() {
        locked { reserved -= 1 }
        pthread_cond_signal(hasRoom)
    }

    /// Up to `limit` orders, waiting while none is queued and more may come; nil once the
    /// verification workers are done, nothing is queued and no delivery is in progress.
    /// Every non-nil answer must be followed by `finished()`.
    package func take(limit: Int) -> [Leased]? {
        var leftOver = false
        var roomFor = 0
        let batch: [Leased]? = locked {
            while queued == 0 && !abandoned && (producing || inProgress > 0) {
                pthread_cond_wait(hasOrders, mutex)
            }
            guard !abandoned, queued > 0 else { return nil }
            let batch = Array(orders[head..<(head + min(max(1, limit), queued))])
            head += batch.count
            if head == orders.count {
                orders.removeAll(keepingCapacity: true)
                head = 0
            } else if head >= capacity {
                orders.removeFirst(head)
                head = 0
            }
            inProgress += 1
            leftOver = queued > 0
            roomFor = min(batch.count, blockedProducers)
            return batch
        }
        // Orders left over: another delivery worker may take them.
        if leftOver { pthread_cond_signal(hasOrders) }
        // Room again: wake as many verification workers as there are new places.
        for _ in 0..<roomFor { pthread_cond_signal(hasRoom) }
        return batch
    }

    package func finished() {
        locked {
            inProgress -= 1
            // The last delivery of a pass whose producers are done: the idle workers may stop.
            if inProgress == 0 && !producing && queued == 0 { pthread_cond_broadcast(hasOrders) }
        }
    }

    /// The verification workers are done: once the queue drains, delivery workers stop.
    package func producersFinished() {
        locked {
            producing = false
            pthread_cond_broadcast(hasOrders)
        }
    }

    /// The pass failed: deliveries not started stay `delivering` with their lease, for rescue,
    /// and verification workers waiting for room are let go.
    package func abandon() {
        locked {
            abandoned = true
            pthread_cond_broadcast(hasOrders)
            pthread_cond_broadcast(hasRoom)
        }
    }

    /// How many orders wait for a hook, and how many verification workers wait for room (tests).
    package var state: (queued: Int, waitingToPut: Int) {
        locked { (queued, blockedProducers) }
    }
}
