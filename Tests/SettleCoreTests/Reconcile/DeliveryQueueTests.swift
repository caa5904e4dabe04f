import Foundation
import SettleTesting
import Synchronization
import XCTest
@testable import SettleApp
@testable import SettleBase
@testable import SettleModel
@testable import SettleLedger
@testable import SettleEngine
@testable import SettleAppStoreSimulator

/// The delivery queue holds at most one round of deliveries: verification waits for the hooks.
final class DeliveryQueueTests: XCTestCase {
    var world: TestWorld!

    override func setUpWithError() throws { world = try TestWorld() }
    override func tearDown() { world = nil }

    /// Orders as a verification worker would hand them over.
    func orders(_ count: Int) throws -> [DeliveryQueue.Leased] {
        let ledger = try world.ledger()
        return try (0..<count).map { i in
            _ = try ledger.enqueue(NewOrder(orderId: "o-\(i)", userId: "u", productId: world.coins, transactionId: "\(i)",
                                            receipt: world.receipt("o-\(i)")))
            return DeliveryQueue.Leased(try XCTUnwrap(try ledger.claim(orderId: "o-\(i)", owner: .current, leaseSeconds: 60)?.order),
                                        leasedAt: world.time.unixSeconds)
        }
    }

    func eventually(_ condition: () -> Bool) -> Bool {
        let deadline = Date().addingTimeInterval(20)
        while Date() < deadline {
            if condition() { return true }
            usleep(1_000)
        }
        return false
    }

    func testALeasesAge_isTheLongerOfTheLedgersClockAndTheMonotonicClock_soAWallClockSteppedBackCannotHideAWait() throws {
        let order = try XCTUnwrap(try orders(1).first).order
        let leased = DeliveryQueue.Leased(order, leasedAt: 1_000, uptimeNanoseconds: 5_000_000_000)
        XCTAssertEqual(leased.age(now: 1_010, uptimeNanoseconds: 6_000_000_000), 10, "the ledger's clock moved further")
        XCTAssertEqual(leased.age(now: 400, uptimeNanoseconds: 95_000_000_000), 90, "the wall clock stepped back an hour; 90 s passed")
        XCTAssertEqual(leased.age(now: 1_000, uptimeNanoseconds: 5_000_000_000), 0)
    }

    func testPut_whenTheQueueHoldsItsCapacity_waitsUntilADeliveryWorkerTakesOne() throws {
        let queue = DeliveryQueue(capacity: 2)
        let all = try orders(3)
        XCTAssertTrue(queue.put(all[0]))
        XCTAssertTrue(queue.put(all[1]))
        let third = DispatchGroup()
        third.enter()
        let answered = Atomic<Bool>(false)
        Thread {
            answered.store(queue.put(all[2]), ordering: .relaxed)
            third.leave()
        }.start()
        XCTAssertTrue(eventually { queue.state.waitingToPut == 1 }, "the third put waits for room")
        XCTAssertEqual(queue.state.queued, 2, "never more than the capacity queued")
        XCTAssertEqual(queue.take(limit: 1)?.map(\.order.orderId), ["o-0"])
        third.wait()
        XCTAssertTrue(answered.load(ordering: .relaxed))
        XCTAssertEqual(queue.state.queued, 2)
        queue.finished()
        queue.producersFinished()
        XCTAssertEqual(queue.take(limit: 5)?.map(\.order.orderId), ["o-1", "o-2"])
        queue.finished()
        XCTAssertNil(queue.take(limit: 5), "over once the producers are done and nothing is left")
    }

    /// Takes of several sizes between puts hand the orders out first in, first out, each once,
    /// while the queue holds at most its capacity (the taken ones' places moved past, then dropped).
    func testTakes_betweenPuts_handOutEachOrderOnce_inTheOrderPut_andFreeTheirPlaces() throws {
        let queue = DeliveryQueue(capacity: 4)
        let all = try orders(9)
        var taken: [String] = []
        func take(_ limit: Int) -> [String] {
            let batch = queue.take(limit: limit)?.map(\.order.orderId) ?? []
            queue.finished()
            taken += batch
            return batch
        }
        for order in all[0..<4] { XCTAssertTrue(queue.tryReserve() && queue.put(reserved: order)) }
        XCTAssertFalse(queue.tryReserve(), "full at its capacity")
        XCTAssertEqual(take(3), ["o-0", "o-1", "o-2"])
        for order in all[4..<7] { XCTAssertTrue(queue.tryReserve() && queue.put(reserved: order)) }
        XCTAssertFalse(queue.tryReserve(), "the three places taken are free again, no more")
        XCTAssertEqual(queue.state.queued, 4)
        XCTAssertEqual(take(2), ["o-3", "o-4"])
        XCTAssertEqual(take(1), ["o-5"])
        for order in all[7..<9] { XCTAssertTrue(queue.put(order)) }
        XCTAssertEqual(queue.state.queued, 3)
        queue.producersFinished()
        XCTAssertEqual(take(10), ["o-6", "o-7", "o-8"])
        XCTAssertNil(queue.take(limit: 1))
        XCTAssertEqual(taken, (0..<9).map { "o-\($0)" })
    }

    func testAbandon_whileAVerificationWorkerWaitsForRoom_letsItGo_withoutQueueingItsOrder() throws {
        let queue = DeliveryQueue(capacity: 1)
        let all = try orders(2)
        XCTAssertTrue(queue.put(all[0]))
        let waiting = DispatchGroup()
        waiting.enter()
        let answered = Atomic<Bool>(true)
        Thread {
            answered.store(queue.put(all[1]), ordering: .relaxed)
            waiting.leave()
        }.start()
        XCTAssertTrue(eventually { queue.state.waitingToPut == 1 })
        queue.abandon()
        waiting.wait()
        XCTAssertFalse(answered.load(ordering: .relaxed), "the order stays delivering under its lease, for rescue")
        XCTAssertNil(queue.take(limit: 1))
    }

    /// A kept place counts as taken: a worker whose answer is still being recorded holds it, and
    /// another worker waits for room until a hook takes an order or the place is given back.
    func testAReservedPlace_countsAsTaken_untilItsOrderIsPut_orTheReservationIsCancelled() throws {
        let all = try orders(3)
        let queue = DeliveryQueue(capacity: 2)
        XCTAssertTrue(queue.tryReserve())
        XCTAssertTrue(queue.put(all[0]))
        XCTAssertFalse(queue.tryReserve(), "one order queued and one place kept: full")
        let reserved = Atomic<Bool>(false)
        let waiting = DispatchGroup()
        waiting.enter()
        Thread {
            reserved.store(queue.reserve(), ordering: .relaxed)
            waiting.leave()
        }.start()
        XCTAssertTrue(eventually { queue.state.waitingToPut == 1 })
        XCTAssertEqual(queue.take(limit: 1)?.map(\.order.orderId), ["o-0"])
        queue.finished()
        waiting.wait()
        XCTAssertTrue(reserved.load(ordering: .relaxed), "the hook's take made room for the waiting worker")
        XCTAssertFalse(queue.tryReserve(), "two places kept")
        XCTAssertTrue(queue.put(reserved: all[1]))
        queue.cancelReservation()
        XCTAssertTrue(queue.tryReserve(), "a cancelled place is free again")
        XCTAssertTrue(queue.put(reserved: all[2]))
        XCTAssertEqual(queue.state.queued, 2)
        XCTAssertEqual(queue.take(limit: 2)?.map(\.order.orderId), ["o-1", "o-2"])
        queue.finished()
    }

    func testPass_withEveryHookSlot_andTheQueueFull_claimsNoMoreOrdersUntilAHookEnds() throws {
        // One verification worker, one delivery worker, room for one order in the queue.
        let fifo = world.folder + "/release"
        XCTAssertEqual(mkfifo(fifo, 0o600), 0)
        let hook = try world.hook("slow-first.sh", exit: 0, extra: "[ \"$SETTLE_ORDER_ID\" = o-0 ] && read line < \(fifo)")
        try world.writeConfig(hook: hook, schedule: [("concurrency", .number(1))])
        let ledger = try world.ledger()
        for i in 0..<5 {
            let receipt = world.scriptReceipt("o-\(i)", [SimulatedTransaction(productId: world.coins, transactionId: "t-\(i)")])
            _ = try ledger.enqueue(NewOrder(orderId: "o-\(i)", userId: "u", productId: world.coins, transactionId: "t-\(i)",
                                            receipt: receipt))
        }
        let base = try world.reconciler(ledger: ledger)
        XCTAssertEqual(base.deliveryCapacity, 1)
        // What each verification saw of the first order, whose hook blocks.
        let seen = Mutex<[String: OrderState]>([:])
        let verifier = ObservedVerifier(inner: base.verifier) { order in
            let first = (try? ledger.orderRecord("o-0"))?.order.state
            seen.withLock { $0[order.orderId] = first }
        }
        let reconciler = Reconciler(configuration: base.configuration, ledger: ledger, verifier: verifier, deliverer: base.deliverer,
                                    policy: base.policy, log: .silent)
        let pass = DispatchGroup()
        DispatchQueue.global().async(group: pass) { _ = try? reconciler.runPass() }
        // o-0 in its hook, o-1 queued, o-2 confirmed by the store and its worker waiting for room
        // (the answer is written down once it has its place: it is still `verifying`).
        XCTAssertTrue(eventually { (try? ledger.orderRecord("o-1"))??.order.state == .delivering })
        XCTAssertTrue(eventually { seen.withLock { $0["o-2"] } != nil })
        let fd = open(fifo, O_WRONLY)
        _ = write(fd, "go\n", 3)
        close(fd)
        pass.wait()
        XCTAssertEqual(try ledger.summary(OrderFilter(limit: 10)).counts[.finished], 5)
        XCTAssertEqual(seen.withLock { $0["o-3"] }, .finished, "o-3 was claimed only once o-0's hook had ended and made room")
        XCTAssertEqual(seen.withLock { $0["o-4"] }, .finished)
    }

    func testStopRequested_whileAnOrderWaitsForItsHook_leavesItDeliveringForTheNextStart_withTheSameKey() throws {
        let fifo = world.folder + "/release"
        XCTAssertEqual(mkfifo(fifo, 0o600), 0)
        let hook = try world.hook("slow-first.sh", exit: 0, extra: "[ \"$SETTLE_ORDER_ID\" = o-0 ] && read line < \(fifo)")
        try world.writeConfig(hook: hook, schedule: [("concurrency", .number(1))])
        let ledger = try world.ledger()
        for i in 0..<2 {
            let receipt = world.scriptReceipt("o-\(i)", [SimulatedTransaction(productId: world.coins, transactionId: "t-\(i)")])
            _ = try ledger.enqueue(NewOrder(orderId: "o-\(i)", userId: "u", productId: world.coins, transactionId: "t-\(i)",
                                            receipt: receipt))
        }
        let lines = LineCollector()
        let reconciler = try world.reconciler(ledger: ledger, log: Log(environment: [:], time: world.time, sink: { lines.append($0) }))
        let stop = Atomic<Bool>(false)
        let pass = DispatchGroup()
        DispatchQueue.global().async(group: pass) { _ = try? reconciler.runPass(shouldStop: { stop.load(ordering: .relaxed) }) }
        XCTAssertTrue(eventually { (try? ledger.orderRecord("o-1"))??.order.state == .delivering })
        stop.store(true, ordering: .relaxed)  // SIGTERM
        let fd = open(fifo, O_WRONLY)
        _ = write(fd, "go\n", 3)
        close(fd)
        pass.wait()
        XCTAssertEqual(world.deliveries, ["t-0 o-0"], "the hook in flight finished; no new one started")
        XCTAssertEqual(try ledger.orderRecord("o-1")?.order.state, .delivering)
        XCTAssertTrue(lines.lines.contains { $0.contains("order.delivery_deferred") && $0.contains("o-1") }, lines.lines.joined(separator: "\n"))
        _ = try world.reconciler(ledger: ledger).runPass()
        XCTAssertEqual(world.deliveries, ["t-0 o-0", "t-1 o-1"], "the next start delivers it, with its key")
        XCTAssertEqual(try ledger.orderRecord("o-1")?.order.state, .finished)
    }
}

/// The real verifier, with a look (or a wait) before each verification.
struct ObservedVerifier: OrderVerifier {
    let inner: any OrderVerifier
    let before: @Sendable (Order) -> Void

    func verify(_ order: Order) throws -> Verification {
        before(order)
        return try inner.verify(order)
    }
}
