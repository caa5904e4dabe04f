import XCTest
@testable import SettleModel
import SettleTesting

/// A store's own reasons are explained in its descriptor's words, not the core's (issue 33): the
/// verdict, the overview and `retry` read them through `Verdict`, for every registered store.
final class StoreReasonWordsTests: XCTestCase {
    private func order(_ store: Store, reason: String) -> Order {
        Order(orderId: "o-1", userId: "u-1", productId: "coins", state: .rejected, attempts: 1, nextAttemptAt: 0, reason: reason,
              createdAt: 0, updatedAt: 0, store: store)
    }

    func testAStoresOwnReason_isExplainedInItsWords_withItsAdvice() {
        let verdict = Verdict(order(.bogus, reason: "sale_voided"), now: 10)
        XCTAssertEqual(verdict.why, "the bogus shop voided the sale")
        XCTAssertEqual(verdict.next, "nothing to grant: the shop voided it; or settle resolve o-1 --as wont_grant --note TICKET")
    }

    func testAReasonEveryStoreGives_isInTheOrdersStoresWords_andTheCoresWithoutAStore() {
        XCTAssertEqual(Verdict(order(.bogus, reason: "refunded"), now: 10).why, "the bogus shop took the money back")
        XCTAssertEqual(Verdict.explanation("refunded"), "the store refunded or revoked the purchase")
        // No words for its advice: the core's.
        XCTAssertEqual(Verdict.retryAdvice("refunded", store: .bogus), "nothing to grant: the store refunded it (a retry is rejected the same way)")
    }

    func testAStoresReason_withoutAStore_usesTheRegisteredStoresWords() {
        XCTAssertEqual(Verdict.explanation("sale_voided"), "the bogus shop voided the sale")
        XCTAssertEqual(Verdict.explanation("no_such_reason"), "no_such_reason")
    }
}
