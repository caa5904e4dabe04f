import XCTest
@testable import SettleBase
@testable import SettleModel
import SettleAppStore

/// A bucket that learns a rate its store publishes none for (verifyReceipt, issue 38), on an
/// injected clock: a 429 halves what the store granted lately and remembers it, the requests
/// in flight cost one decrease, successes climb back additively, a 5xx slows it down, and a
/// 429 is the store refusing only at the floor.
final class PacerLearningTests: XCTestCase {
    /// Successes at `rate` a second from `from` for `seconds`, granted as they come.
    func succeed(_ bucket: inout PacerBucket, rate: Double, from: Double, seconds: Double) -> Double {
        var now = from
        while now < from + seconds {
            bucket.succeeded(now: now)
            now += 1 / rate
        }
        return now
    }

    func testA429_halvesWhatTheStoreGrantedLately_andLearnsIt() {
        var bucket = PacerBucket(rate: 1000, learns: true, now: 0)
        let now = succeed(&bucket, rate: 200, from: 0, seconds: 3)
        XCTAssertEqual(bucket.rate, 1000, "no 429 yet: the ceiling")
        XCTAssertFalse(bucket.throttled(retryAfter: 0.005, now: now, sentAt: now - 0.02),
                       "above the floor: settle too fast")
        let learned = try? XCTUnwrap(bucket.learning?.learnedRate)
        XCTAssertEqual(learned ?? 0, 200, accuracy: 2, "the store granted 200 a second, not the bucket's 1000")
        XCTAssertEqual(bucket.rate, 100, accuracy: 1)
        XCTAssertEqual(bucket.throttles, 1)
    }

    func testThe429sOfRequestsInFlight_lowerTheRateOnce() {
        var bucket = PacerBucket(rate: 1000, learns: true, now: 0)
        let now = succeed(&bucket, rate: 200, from: 0, seconds: 2)
        bucket.throttled(retryAfter: nil, now: now, sentAt: now - 0.02)
        let lowered = bucket.rate
        for i in 1...7 {
            XCTAssertFalse(bucket.throttled(retryAfter: nil, now: now + Double(i) * 0.001, sentAt: now - 0.01),
                           "sent before the decrease")
        }
        XCTAssertEqual(bucket.rate, lowered, "eight 429s of one burst: one halving")
        XCTAssertEqual(bucket.throttles, 8, "all counted")
        bucket.throttled(retryAfter: nil, now: now + 1, sentAt: now + 0.5)
        XCTAssertLessThan(bucket.rate, lowered, "a request sent after the decrease is a new signal")
    }

    func testSuccesses_bringTheRateBackNearTheLearnedOneQuickly_thenClimbAdditively() {
        var bucket = PacerBucket(rate: 1000, learns: true, now: 0)
        var now = succeed(&bucket, rate: 200, from: 0, seconds: 2)
        bucket.throttled(retryAfter: nil, now: now, sentAt: now)
        XCTAssertEqual(bucket.rate, 100, accuracy: 1)
        now = succeed(&bucket, rate: 100, from: now, seconds: 0.5)
        XCTAssertEqual(bucket.rate, 194, accuracy: 1, "within half a second: 97 % of the learned 200")
        now = succeed(&bucket, rate: 190, from: now, seconds: 10)
        XCTAssertEqual(bucket.rate, 194 + 2 * 10, accuracy: 1.5,
                       "then a hundredth of the learned rate a second: additive")
        let before = bucket.rate
        bucket.succeeded(now: now)
        bucket.succeeded(now: now)
        XCTAssertEqual(bucket.rate, before, accuracy: 0.05,
                       "successes at one instant add nothing: the climb is by time")
        for _ in 0..<10_000 { now += 1; bucket.succeeded(now: now) }
        XCTAssertEqual(bucket.rate, 1000, "never above the ceiling")
    }

    func testAtTheFloor_a429IsTheStoreRefusing_andTheFloorIsA64thOfTheCeiling() {
        var bucket = PacerBucket(rate: 1000, learns: true, now: 0)
        XCTAssertEqual(bucket.floorRate, 1000.0 / 64)
        var now = 0.0
        var atFloor = false
        for _ in 0..<10 {
            now += 2
            atFloor = bucket.throttled(retryAfter: nil, now: now, sentAt: now)
            if atFloor { break }
        }
        XCTAssertTrue(atFloor, "Apple granting nothing: down to the floor, then the breaker hears it")
        XCTAssertEqual(bucket.rate, 1000.0 / 64)
        XCTAssertEqual(bucket.floorThrottles, 1)
    }

    func testRetryAfter_isWaited_butAtMostAMinute() {
        var bucket = PacerBucket(rate: 1000, learns: true, now: 0)
        bucket.throttled(retryAfter: 2, now: 0, sentAt: 0)
        guard case let .wait(wait) = bucket.take(.dueOrders, now: 1) else {
            return XCTFail("granted inside Retry-After")
        }
        XCTAssertEqual(wait, 1, accuracy: 1e-9)
        bucket.throttled(retryAfter: RetryAfter.longest, now: 10, sentAt: 10)
        guard case let .wait(capped) = bucket.take(.dueOrders, now: 10) else {
            return XCTFail("granted inside Retry-After")
        }
        XCTAssertEqual(capped, PacerLearning.longestWait, accuracy: 1e-9,
                       "a day's Retry-After does not stop the endpoint a day")
        var published = PacerBucket(rate: 50, now: 0)
        published.throttled(retryAfter: 120, now: 0)
        XCTAssertEqual(published.notBefore, 120, "a published rate's bucket waits what it is told, as before")
    }

    func testA5xx_slowsALearningBucket_andLeavesAPublishedOne() {
        var learning = PacerBucket(rate: 1000, learns: true, now: 0)
        let now = succeed(&learning, rate: 200, from: 0, seconds: 2)
        learning.throttled(retryAfter: nil, now: now, sentAt: now)
        learning.overloaded(now: now + 1, sentAt: now + 0.5)
        XCTAssertEqual(learning.rate, 50, accuracy: 1, "halved again")
        learning.overloaded(now: now + 1.01, sentAt: now + 0.6)
        XCTAssertEqual(learning.rate, 50, accuracy: 1, "the 5xx of requests in flight: once")
        XCTAssertEqual(learning.overloads, 1)
        XCTAssertEqual(learning.learning?.learnedRate ?? 0, 200, accuracy: 2, "a 5xx teaches nothing of the limit")
        XCTAssertEqual(learning.throttles, 1, "not a 429")
        var published = PacerBucket(rate: 50, now: 0)
        published.overloaded(now: 1)
        XCTAssertEqual(published.rate, 50)
    }

    func testVerifyReceipt_learnsUnderAConfigurableCeiling_perEnvironment_andTheServerAPIDoesNot() {
        let production = PacerKey(store: "app_store", group: "verify_receipt", environment: "Production")
        let sandbox = PacerKey(store: "app_store", group: "verify_receipt", environment: "Sandbox")
        let info = PacerKey(store: "app_store", group: "transaction_info", environment: "Production")
        XCTAssertEqual(StoreRateLimits.rate(production, configured: [:]), 1000)
        XCTAssertEqual(StoreRateLimits.rate(sandbox, configured: [:]), 100, "sandbox at a tenth, like the Server API")
        XCTAssertEqual(StoreRateLimits.rate(production, configured: [.appStore: ["verify_receipt": 300]]), 300)
        XCTAssertTrue(StoreRateLimits.learns(production))
        XCTAssertFalse(StoreRateLimits.learns(info), "published: kept to, not learned")
    }

    /// The whole loop against a store's token bucket (a second's burst, as the fakes keep it),
    /// eight workers with 20 ms round trips (400 requests a second possible), on simulated time.
    func testAgainstAStoreLimitOf200_theRateSettlesNearIt_withFew429sOnceLearned() {
        let drained = PacerSimulation(limit: 200, ceiling: 1000, workers: 8, latency: 0.02).run(seconds: 120)
        XCTAssertGreaterThanOrEqual(drained.granted, Int(0.95 * 200 * 120), "drained close to the limit: \(drained)")
        XCTAssertLessThanOrEqual(Double(drained.refusedAfter10s), 0.01 * Double(drained.requestsAfter10s), "\(drained)")
        XCTAssertEqual(drained.floorThrottles, 0, "never at the floor: the breaker would have heard nothing")
    }
}

/// A discrete-event run of workers through one learning bucket against a store's token bucket.
struct PacerSimulation {
    var limit: Double
    var ceiling: Double
    var workers: Int
    var latency: Double

    struct Result: CustomStringConvertible {
        var granted = 0, refused = 0, refusedAfter10s = 0, requestsAfter10s = 0, floorThrottles = 0
        var description: String {
            "granted \(granted), refused \(refused), after 10 s \(refusedAfter10s) of \(requestsAfter10s), "
                + "at the floor \(floorThrottles)"
        }
    }

    func run(seconds: Double) -> Result {
        var bucket = PacerBucket(rate: ceiling, learns: true, now: 0)
        var (storeTokens, storeUpdated) = (limit, 0.0)
        // Each worker: when it acts next, and the reply it waits for (sent at, admitted).
        var next = Array(repeating: 0.0, count: workers)
        var awaiting: [(sentAt: Double, admitted: Bool)?] = Array(repeating: nil, count: workers)
        var result = Result()
        while true {
            let w = next.indices.min { next[$0] < next[$1] }!
            let now = next[w]
            guard now < seconds else { break }
            if let reply = awaiting[w] {
                awaiting[w] = nil
                if reply.admitted {
                    bucket.succeeded(now: now)
                } else if bucket.throttled(retryAfter: (1 - storeTokens) / limit, now: now, sentAt: reply.sentAt) {
                    result.floorThrottles += 1
                }
                continue
            }
            if case let .wait(wait) = bucket.take(.dueOrders, now: now) {
                next[w] = now + wait
                continue
            }
            storeTokens = min(limit, storeTokens + (now - storeUpdated) * limit)
            storeUpdated = now
            let admitted = storeTokens >= 1
            if admitted { storeTokens -= 1; result.granted += 1 } else { result.refused += 1 }
            if now >= 10 {
                result.requestsAfter10s += 1
                if !admitted { result.refusedAfter10s += 1 }
            }
            awaiting[w] = (now, admitted)
            next[w] = now + latency
        }
        return result
    }
}
