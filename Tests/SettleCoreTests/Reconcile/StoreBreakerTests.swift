import XCTest
@testable import SettleApp
@testable import SettleLedger

/// The breaker as a pure state machine: no I/O, time passed in.
final class StoreBreakerTests: XCTestCase {
    func fail(_ breaker: inout StoreBreaker, at now: Int64, retryAfter: Double? = nil) -> Bool {
        breaker.recordFailure("HTTP 503", retryAfter: retryAfter, now: now, baseSeconds: 30, maxSeconds: 100)
    }

    func testOpensAfterFiveConsecutiveFailures_notBefore() {
        var breaker = StoreBreaker()
        for i in 1...4 { XCTAssertFalse(fail(&breaker, at: 1000 + Int64(i))) }
        XCTAssertEqual(breaker.permission(now: 1004), .claim)
        XCTAssertTrue(fail(&breaker, at: 1005))
        XCTAssertEqual(breaker.state, .open)
        XCTAssertEqual(breaker.retryAt, 1035)
        XCTAssertEqual(breaker.permission(now: 1034), .wait(until: 1035))
        XCTAssertEqual(breaker.lastError, "HTTP 503")
    }

    func testAnAnswerInBetween_resetsTheCount() {
        var breaker = StoreBreaker()
        for i in 1...4 { _ = fail(&breaker, at: Int64(i)) }
        breaker.recordAnswer()
        for i in 1...4 { XCTAssertFalse(fail(&breaker, at: Int64(10 + i))) }
        XCTAssertEqual(breaker.state, .closed)
    }

    func testRetryAfter_opensAtOnce_andIsHonouredWhenLongerThanTheCoolDown() {
        var breaker = StoreBreaker()
        XCTAssertTrue(fail(&breaker, at: 1000, retryAfter: 600))
        XCTAssertEqual(breaker.retryAt, 1600)
        var short = StoreBreaker()
        XCTAssertTrue(fail(&short, at: 1000, retryAfter: 5))
        XCTAssertEqual(short.retryAt, 1030, "never shorter than our own cool-down")
    }

    func testAfterTheCoolDown_oneProbe_aFailedProbeDoublesTheCoolDownUpToTheMax() {
        var breaker = StoreBreaker()
        for i in 1...5 { _ = fail(&breaker, at: Int64(i)) }
        XCTAssertEqual(breaker.cooldownSeconds, 30)
        XCTAssertEqual(breaker.permission(now: 35), .probe)
        XCTAssertTrue(fail(&breaker, at: 35))
        XCTAssertEqual(breaker.cooldownSeconds, 60)
        XCTAssertEqual(breaker.retryAt, 95)
        XCTAssertTrue(fail(&breaker, at: 95))
        XCTAssertEqual(breaker.cooldownSeconds, 100, "capped at backoff_max")
        XCTAssertTrue(fail(&breaker, at: 195))
        XCTAssertEqual(breaker.cooldownSeconds, 100)
    }

    func testAnsweredProbe_closesTheBreaker() {
        var breaker = StoreBreaker()
        for i in 1...5 { _ = fail(&breaker, at: Int64(i)) }
        breaker.recordAnswer()
        XCTAssertEqual(breaker, StoreBreaker())
        XCTAssertEqual(breaker.permission(now: 0), .claim)
    }

    func testConfigurationFault_opensTheStoresBreaker_doublingItsCooldown_andIsShownUntilTheStoreAnswers() {
        var breaker = StoreBreaker()
        breaker.recordConfigurationFault("21004", now: 100, baseSeconds: 30, maxSeconds: 100)
        XCTAssertEqual(breaker.state, .open)
        XCTAssertEqual(breaker.retryAt, 130)
        XCTAssertTrue(breaker.isOpenForConfigurationFault)
        XCTAssertEqual(breaker.lastError, "configuration fault: 21004")
        breaker.recordConfigurationFault("21004", now: 130, baseSeconds: 30, maxSeconds: 100)
        XCTAssertEqual(breaker.retryAt, 190, "the probe failed the same way: twice the cool-down")
        breaker.recordConfigurationFault("21004", now: 190, baseSeconds: 30, maxSeconds: 100)
        XCTAssertEqual(breaker.retryAt, 290, "at most backoff_max_seconds")
        breaker.recordAnswer()
        XCTAssertNil(breaker.lastError)
        XCTAssertEqual(breaker.state, .closed)
        XCTAssertFalse(breaker.isOpenForConfigurationFault)
    }

    func testAFaultOfTheHooksSetup_isShownButDoesNotOpenTheStoresBreaker() {
        var breaker = StoreBreaker()
        breaker.noteConfigurationFault("hook cannot start", now: 100)
        XCTAssertEqual(breaker.state, .closed)
        XCTAssertEqual(breaker.lastError, "configuration fault: hook cannot start")
    }

    func testRetryAfter_huge_infiniteOrNaN_opensWithoutTrapping() {
        for retryAfter in [1e22, .infinity, .nan, -1e30] {
            var breaker = StoreBreaker()
            XCTAssertTrue(fail(&breaker, at: 1000, retryAfter: retryAfter), "\(retryAfter)")
            XCTAssertNotNil(breaker.retryAt, "\(retryAfter)")
        }
        var late = StoreBreaker()
        _ = fail(&late, at: .max - 5, retryAfter: 600)
        XCTAssertEqual(late.retryAt, .max, "saturates instead of overflowing")
    }
}
