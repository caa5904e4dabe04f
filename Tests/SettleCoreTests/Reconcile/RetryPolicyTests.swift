import XCTest
@testable import SettleApp
@testable import SettleBase
@testable import SettleModel
@testable import SettleEngine

final class RetryPolicyTests: XCTestCase {
    func testDelay_doublesFromBaseUpToMax() {
        let policy = RetryPolicy(baseSeconds: 30, maxSeconds: 21600, maxAttempts: 20, random: { 0.5 })
        XCTAssertEqual((1...6).map { policy.delay(afterAttempt: $0) }, [30, 60, 120, 240, 480, 960])
        XCTAssertEqual(policy.delay(afterAttempt: 20), 21600)
        XCTAssertEqual(policy.delay(afterAttempt: 500), 21600)
    }

    func testDelay_jitterStaysWithinTenPercent() {
        let low = RetryPolicy(baseSeconds: 100, maxSeconds: 1000, maxAttempts: 5, random: { 0 })
        let high = RetryPolicy(baseSeconds: 100, maxSeconds: 1000, maxAttempts: 5, random: { 0.999999 })
        XCTAssertEqual(low.delay(afterAttempt: 1), 90)
        XCTAssertEqual(high.delay(afterAttempt: 1), 110)
    }

    func testAppleDelay_honoursLongerRetryAfterUpToMax() {
        let policy = RetryPolicy(baseSeconds: 30, maxSeconds: 600, maxAttempts: 5, random: { 0.5 })
        XCTAssertEqual(policy.appleDelay(retryAfter: nil), 30)
        XCTAssertEqual(policy.appleDelay(retryAfter: 120), 120)
        XCTAssertEqual(policy.appleDelay(retryAfter: 99999), 600)
    }

    func testRetryAfter_readsSecondsHTTPDateAndEpochMilliseconds() {
        let now = Date(timeIntervalSince1970: 1_764_410_645)
        XCTAssertEqual(RetryAfter.seconds("120", now: now), 120)
        XCTAssertEqual(RetryAfter.seconds("1764410705000", now: now), 60)
        XCTAssertEqual(RetryAfter.seconds("Sat, 29 Nov 2025 10:05:05 GMT", now: now)!, 60, accuracy: 1)
        XCTAssertNil(RetryAfter.seconds("soon", now: now))
        XCTAssertNil(RetryAfter.seconds(nil, now: now))
    }

    func testRetryAfter_hugeNegativeNaNAndInfinite_neverTrap_andAreAtMostADay() {
        let now = Date(timeIntervalSince1970: 1_764_410_645)
        XCTAssertEqual(RetryAfter.seconds("1e22", now: now), RetryAfter.longest)
        XCTAssertEqual(RetryAfter.seconds("99999999999", now: now), RetryAfter.longest)
        XCTAssertNil(RetryAfter.seconds("-5", now: now))
        XCTAssertNil(RetryAfter.seconds("NaN", now: now))
        XCTAssertNil(RetryAfter.seconds("1e400", now: now))
        XCTAssertNil(RetryAfter.seconds("inf", now: now))
        XCTAssertEqual(RetryAfter.seconds("Fri, 31 Dec 9999 23:59:59 GMT", now: now), RetryAfter.longest)
    }

    func testAppleDelay_ignoresANaNRetryAfter() {
        let policy = RetryPolicy(baseSeconds: 30, maxSeconds: 600, maxAttempts: 5, random: { 0.5 })
        XCTAssertEqual(policy.appleDelay(retryAfter: .nan), 30)
        XCTAssertEqual(policy.appleDelay(retryAfter: .infinity), 30)
    }

    func testTimestamp_ofExtremeMilliseconds_neverTraps() {
        XCTAssertFalse(Timestamp.rfc3339(milliseconds: .min).isEmpty)
        XCTAssertFalse(Timestamp.rfc3339(milliseconds: .max).isEmpty)
        XCTAssertEqual(Timestamp.rfc3339(milliseconds: -1), "1969-12-31T23:59:59Z")
    }

    func testNoRetryOfAPlayOrder_isScheduledPastAnHourBeforeGooglesRefund_whateverTheBackoff() {
        let now: Int64 = 1_000_000
        let window = Store.googlePlay.refundWindowSeconds!
        func order(_ store: Store, boughtAgo: Int64) -> Order {
            Order(orderId: "o", userId: "u", productId: "p", state: .pending, attempts: 2, nextAttemptAt: now,
                  createdAt: now - boughtAgo, updatedAt: now, store: store)
        }
        let fresh = order(.googlePlay, boughtAgo: 60)
        XCTAssertEqual(Reconciler.nextAttempt(fresh, now: now, after: 600), now + 600, "far from the deadline: the backoff as it is")
        let late = order(.googlePlay, boughtAgo: window - 5400)
        XCTAssertEqual(Reconciler.nextAttempt(late, now: now, after: 6 * 3600), now + 1800, "an hour before Google refunds it at the latest")
        let later = order(.googlePlay, boughtAgo: window - 600)
        XCTAssertEqual(Reconciler.nextAttempt(later, now: now, after: 6 * 3600), now + Reconciler.lastRetryInterval,
                       "past that hour: once a minute, never every pass")
        XCTAssertEqual(Reconciler.nextAttempt(later, now: now, after: 10), now + 10, "a shorter backoff as it is")
        let apple = order(.appStore, boughtAgo: window - 600)
        XCTAssertEqual(Reconciler.nextAttempt(apple, now: now, after: 6 * 3600), now + 6 * 3600, "Apple refunds nothing unacknowledged")
        XCTAssertEqual(Reconciler.nextAttempt(fresh, now: now, after: .infinity), now + window - 60 - 3600, "a huge Retry-After is capped too")
    }
}
