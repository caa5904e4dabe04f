import XCTest
@testable import SettleApp
@testable import SettleLedger
import SettleModel
import SettleAppStore
import SettleGooglePlay
import SettleTesting

/// `settle status` in words (issue 36): each refund clock under its own store's line, and a
/// breaker past its cool-down never "open until … ago".
final class StatusTextTests: XCTestCase {
    func testRefundClocks_standUnderTheirOwnStore_neverUnderAnother() {
        var summary = LedgerSummary(counts: [:], oldestUndeliveredSeconds: nil, orders: [], matching: 0, filtered: false)
        summary.storeCounts = [Store.appStore: [OrderState.pending: 1], Store.googlePlay: [OrderState.delivering: 1]]
        summary.refundDeadlines = [RefundDeadline(store: .googlePlay, orderId: "p-1", state: .delivering, refundAt: 2_000,
                                                  exact: true, delivered: true)]
        let lines = StatusView.text(summary, now: 1_000).split(separator: "\n").map(String.init)
        let play = lines.firstIndex { $0.hasPrefix("google_play:") }
        let clock = lines.firstIndex { $0.contains("unacknowledged p-1") }
        XCTAssertNotNil(play, lines.joined(separator: "\n"))
        XCTAssertEqual(clock, play.map { $0 + 1 }, lines.joined(separator: "\n"))
        let apple = lines.firstIndex { $0.hasPrefix("apple:") }
        XCTAssertNotEqual(apple.map { $0 + 1 }, clock, "not under apple:")
    }

    func testAnOpenBreakerPastItsCoolDown_waitsForTheNextPass_neverOpenUntilAgo() {
        var breaker = StoreBreaker()
        breaker.state = .open
        breaker.retryAt = 98
        let text = StatusView.healthText(breaker, now: 100)
        XCTAssertFalse(text.contains("ago)"), text)
        XCTAssertTrue(text.hasPrefix("breaker OPEN since its cool-down ended 2s ago; the next pass probes it"), text)
        breaker.retryAt = 130
        XCTAssertTrue(StatusView.healthText(breaker, now: 100).contains("until") && StatusView.healthText(breaker, now: 100).contains("(in 30s)"))
    }
}
