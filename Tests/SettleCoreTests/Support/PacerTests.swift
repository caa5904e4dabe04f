import Foundation
import Synchronization
import XCTest
@testable import SettleBase
@testable import SettleModel
import SettleAppStore
import SettleGooglePlay

/// The token bucket alone, on an injected clock: rate, burst, priorities and the support
/// reserve, a 429's lowered rate and `Retry-After`, and the slow restore.
final class PacerBucketTests: XCTestCase {
    func waited(_ decision: PacerBucket.Decision) -> Double {
        guard case let .wait(seconds) = decision else { return 0 }
        return seconds
    }

    func grants(_ bucket: inout PacerBucket, _ priority: PacerPriority, now: Double) -> Int {
        var granted = 0
        while bucket.take(priority, now: now) == .granted { granted += 1 }
        return granted
    }

    func testFullBucket_grantsItsBurst_thenOneRequestPerIntervalAtTheRate() {
        var bucket = PacerBucket(rate: 10, now: 0)
        XCTAssertEqual(grants(&bucket, .supportLookup, now: 0), 10, "a second's worth at once")
        XCTAssertEqual(waited(bucket.take(.supportLookup, now: 0)), 0.1, accuracy: 1e-9)
        XCTAssertEqual(bucket.take(.supportLookup, now: 0.1), .granted)
        XCTAssertEqual(waited(bucket.take(.supportLookup, now: 0.15)), 0.05, accuracy: 1e-9, "half a token short")
        XCTAssertEqual(grants(&bucket, .supportLookup, now: 100), 10, "refilled to the burst, never more")
    }

    func testPriorities_lowerOnesStopEarlier_andOnlySupportTakesTheReserve() {
        var bucket = PacerBucket(rate: 50, now: 0)
        XCTAssertEqual(grants(&bucket, .historyCatchUp, now: 0), 30, "history leaves 20 of 50 to those above it")
        XCTAssertEqual(grants(&bucket, .dueOrders, now: 0), 5)
        XCTAssertEqual(grants(&bucket, .consumptionAnswers, now: 0), 5)
        XCTAssertEqual(grants(&bucket, .refundDeadline, now: 0), 5)
        XCTAssertEqual(grants(&bucket, .supportLookup, now: 0), 5, "the reserve: a tenth of the bucket")
        guard case let .wait(history) = bucket.take(.historyCatchUp, now: 0),
              case let .wait(deadline) = bucket.take(.refundDeadline, now: 0) else { return XCTFail("an empty bucket grants") }
        XCTAssertLessThan(deadline, history, "the refund deadline is served before history once tokens come back")
        XCTAssertEqual(deadline, 6 / 50, accuracy: 1e-9)
    }

    func test429_halvesTheRate_honoursRetryAfter_andStopsAtTheFloor() {
        var bucket = PacerBucket(rate: 40, now: 0)
        bucket.throttled(retryAfter: 5, now: 0)
        XCTAssertEqual(bucket.rate, 20)
        XCTAssertEqual(waited(bucket.take(.supportLookup, now: 4)), 1, accuracy: 1e-9, "nothing before Retry-After")
        XCTAssertEqual(bucket.take(.supportLookup, now: 5), .granted)
        for _ in 0..<10 { bucket.throttled(retryAfter: nil, now: 6) }
        XCTAssertEqual(bucket.rate, 5, "an eighth of 40, however often Apple refuses")
        XCTAssertEqual(bucket.throttles, 11)
        XCTAssertEqual(waited(bucket.take(.supportLookup, now: 6)), 0.2, accuracy: 1e-9, "without Retry-After: one request's time at the new rate")
    }

    func test429_isTheStoreRefusingBelowItsRate_onlyOnceTheBucketIsAtItsFloor() {
        var bucket = PacerBucket(rate: 40, now: 0)
        XCTAssertFalse(bucket.throttled(retryAfter: nil, now: 0), "at 40/s: settle too fast")
        XCTAssertFalse(bucket.throttled(retryAfter: nil, now: 1), "at 20/s")
        XCTAssertFalse(bucket.throttled(retryAfter: nil, now: 2), "at 10/s: lowered to the floor of 5/s")
        XCTAssertTrue(bucket.isAtFloor)
        XCTAssertTrue(bucket.throttled(retryAfter: nil, now: 3), "at 5/s, an eighth of its rate: the store is refusing")
        XCTAssertEqual(bucket.floorThrottles, 1)
        bucket.succeeded(now: 4)
        XCTAssertFalse(bucket.isAtFloor, "an answer lifts it off the floor")
        XCTAssertFalse(bucket.throttled(retryAfter: nil, now: 5), "a 429 after an answer is pacing again")
        XCTAssertEqual(bucket.throttles, 5)
    }

    func testShare_isThisHostsPartOfTheRate_ceilingFloorAndBurst() {
        var bucket = PacerBucket(rate: 50, now: 0)
        bucket.setShare(0.5, now: 0)
        XCTAssertEqual(bucket.rate, 25)
        XCTAssertEqual(bucket.ceilingRate, 25)
        XCTAssertEqual(bucket.floorRate, 25.0 / 8)
        XCTAssertEqual(bucket.configuredRate, 50, "the store's rate is unchanged; this host takes half")
        XCTAssertEqual(grants(&bucket, .supportLookup, now: 0), 25, "a second's worth of the share")
        XCTAssertEqual(grants(&bucket, .supportLookup, now: 10), 25, "refilled to the share's burst")
        bucket.throttled(retryAfter: nil, now: 10)
        bucket.setShare(1, now: 10)
        XCTAssertEqual(bucket.rate, 25, "a lowered rate scales with the share: half of 50 after the 429")
        for _ in 0..<200 { bucket.succeeded(now: 11) }
        XCTAssertEqual(bucket.rate, 50, "alone again: the whole rate")
    }

    func testSuccesses_restoreTheRateSlowly_toTheConfiguredOneAndNoFurther() {
        var bucket = PacerBucket(rate: 40, now: 0)
        bucket.throttled(retryAfter: nil, now: 0)
        bucket.succeeded(now: 1)
        XCTAssertEqual(bucket.rate, 20.4, accuracy: 1e-9, "a hundredth of the configured rate per success")
        for _ in 0..<200 { bucket.succeeded(now: 2) }
        XCTAssertEqual(bucket.rate, 40)
    }
}

/// The shared pacer: buckets per key, the bounded wait, and keys it does not pace.
final class PacerTests: XCTestCase {
    let apple = PacerKey(store: "app_store", group: "order_lookup", environment: "Production")

    /// The waits a pacer asked for, each one moving the manual clock instead of sleeping.
    final class Sleeps: Sendable {
        let waits = Mutex<[Double]>([])
        var count: Int { waits.withLock { $0.count } }
    }

    func pacer(_ clock: ManualTimeSource, slept: Sleeps = Sleeps()) -> Pacer {
        Pacer(time: clock, rates: { StoreRateLimits.rate($0, configured: [:]) },
              sleep: { seconds in slept.waits.withLock { $0.append(seconds) }; clock.advance(by: seconds) })
    }

    func testAcquire_waitsOnTheInjectedClock_atThePublishedRate() throws {
        let clock = ManualTimeSource(Date(timeIntervalSince1970: 1_000))
        let slept = Sleeps()
        let pacer = pacer(clock, slept: slept)
        for _ in 0..<13 { try pacer.acquire(apple, priority: .supportLookup, budget: 5) }
        XCTAssertEqual(slept.count, 3, "Look Up Order ID: a burst of 10, then 10 a second")
        XCTAssertEqual(clock.now.timeIntervalSince1970, 1_000.3, accuracy: 1e-6)
    }

    func testAcquire_refusesAWaitLongerThanTheBudget_namingThePacer() {
        let clock = ManualTimeSource(Date(timeIntervalSince1970: 1_000))
        let pacer = pacer(clock)
        pacer.throttled(apple, retryAfter: 60)
        XCTAssertThrowsError(try pacer.acquire(apple, priority: .supportLookup, budget: 30)) { error in
            XCTAssertTrue("\(error)".hasPrefix("paced: app_store order_lookup (Production) at 5/s"), "\(error)")
        }
        XCTAssertEqual(clock.now.timeIntervalSince1970, 1_000, "refused at once, not after waiting")
    }

    func testWorkPriority_isLentToEveryCallTheWorkMakes_butSupportKeepsItsReserve() throws {
        let clock = ManualTimeSource(Date(timeIntervalSince1970: 1_000))
        let pacer = pacer(clock)
        let play = PacerKey(store: "google_play", group: "one_time_purchases", environment: "production")
        var history = 0
        PacerPriority.$work.withValue(.historyCatchUp) {
            while pacer.take(play, priority: PlayRateGroups.priority(call: "products.get")) == .granted { history += 1 }
        }
        XCTAssertEqual(history, 30, "products.get for the history catch-up stops where history does (20 of 50 left)")
        var due = 0
        while pacer.take(play, priority: PlayRateGroups.priority(call: "products.get")) == .granted { due += 1 }
        XCTAssertEqual(due, 5, "unbound, products.get is due work: it leaves 15 of 50 to those above it")
        var deadline = 0
        PacerPriority.$work.withValue(.refundDeadline) {
            while pacer.take(play, priority: PlayRateGroups.priority(call: "products.get")) == .granted { deadline += 1 }
        }
        XCTAssertEqual(deadline, 10, "an order near its refund deadline reads its purchase at .refundDeadline, down to the reserve")
        XCTAssertEqual(PacerPriority.$work.withValue(.historyCatchUp) { PacerPriority.forCall(.supportLookup) }, .supportLookup)
        XCTAssertNil(PacerPriority.work, "the binding ends with its work")
    }

    func testHosts_eachTakeTheirShare_ofEveryBucket_andAloneTheWholeRate() {
        let clock = ManualTimeSource(Date(timeIntervalSince1970: 1_000))
        let pacer = pacer(clock)
        let play = PacerKey(store: "google_play", group: "orders", environment: "production")
        _ = pacer.take(play, priority: .supportLookup)
        pacer.setHosts(2)
        XCTAssertEqual(pacer.bucket(play)?.rate, 25, "a bucket made before: halved")
        XCTAssertEqual(pacer.take(apple, priority: .supportLookup), .granted)
        XCTAssertEqual(pacer.bucket(apple)?.rate, 5, "a bucket made after: half of Look Up Order ID's 10/s")
        pacer.setHosts(1)
        XCTAssertEqual(pacer.bucket(play)?.rate, 50)
        let snapshot = pacer.snapshots().first { $0.key == apple }
        XCTAssertEqual(snapshot?.granted, 1)
        XCTAssertEqual(snapshot?.share, 1)
        XCTAssertEqual(snapshot?.configuredRate, 10)
    }

    func testKeys_arePacedApart_sandboxAtATenth_unknownGroupsUnpaced() {
        let clock = ManualTimeSource(Date(timeIntervalSince1970: 1_000))
        let pacer = pacer(clock)
        let sandbox = PacerKey(store: "app_store", group: "transaction_info", environment: "Sandbox")
        var granted = 0
        while pacer.take(sandbox, priority: PacerPriority.supportLookup) == PacerBucket.Decision.granted { granted += 1 }
        XCTAssertEqual(granted, 5, "50/s in production, 5/s in sandbox")
        XCTAssertEqual(pacer.take(PacerKey(store: "app_store", group: "transaction_info", environment: "Production"),
                                  priority: PacerPriority.supportLookup), PacerBucket.Decision.granted, "production has a bucket of its own")
        let unknown = PacerKey(store: "app_store", group: "no_such_group", environment: "Production")
        for _ in 0..<1_000 { XCTAssertEqual(pacer.take(unknown, priority: PacerPriority.historyCatchUp), PacerBucket.Decision.granted) }
    }

    func testConfiguredRates_replaceThePublishedOnes() {
        let key = PacerKey(store: "google_play", group: "orders", environment: "production")
        XCTAssertEqual(StoreRateLimits.rate(key, configured: [:]), 50, "3,000 a minute")
        XCTAssertEqual(StoreRateLimits.rate(key, configured: [.googlePlay: ["orders": 200]]), 200)
        XCTAssertEqual(StoreRateLimits.rate(apple, configured: [.appStore: ["order_lookup": 30]]), 30)
        XCTAssertEqual(AppStoreRateGroups.group(method: "GET", path: "/inApps/v2/history/1?sort=ASCENDING"), "transaction_history")
        XCTAssertEqual(AppStoreRateGroups.group(method: "PUT", path: "/inApps/v2/transactions/consumption/1"), "consumption")
        XCTAssertEqual(AppStoreRateGroups.group(method: "POST", path: "/inApps/v1/transactions/1/finish"), "finish_transaction")
        XCTAssertEqual(PlayRateGroups.group(call: "productsv2.get"), "one_time_purchases")
        XCTAssertEqual(PlayRateGroups.priority(call: "products.acknowledge"), .refundDeadline)
    }
}
