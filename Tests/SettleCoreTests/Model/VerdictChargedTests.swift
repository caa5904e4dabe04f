import XCTest
@testable import SettleModel
import SettleTesting

/// Issue 36, bug 3: an order set aside on the store's own answer never reads "settle has not had
/// the store's answer yet" right above a "why" that quotes that answer.
final class VerdictChargedTests: XCTestCase {
    private func order(_ reason: String, state: OrderState = .needsAttention) -> Order {
        Order(orderId: "o-1", userId: "u-1", productId: "coins", state: state, attempts: 1, nextAttemptAt: 0, reason: reason,
              createdAt: 0, updatedAt: 0, store: .bogus)
    }

    func testReasonsThatQuoteTheStoresAnswer_sayItAnswered_notThatItHasNot() {
        for reason in ["token_unverifiable", "purchase_state_unclear", "proof_unbound", "history_incomplete"] {
            let charged = Verdict(order(reason), now: 10).charged
            XCTAssertFalse(charged.contains("has not had"), "\(reason): \(charged)")
            XCTAssertTrue(charged.hasPrefix("unclear: \(StoreRegistry.descriptor(.bogus).owner) answered"), "\(reason): \(charged)")
        }
    }

    func testReasonsGivenBeforeTheStoreAnswered_stillSayNotYet() {
        for reason in ["attempts_exhausted", "unknown_product", "server_api_required"] {
            XCTAssertTrue(Verdict(order(reason), now: 10).charged.hasPrefix("not yet confirmed"), reason)
        }
    }

    /// Issue 36, bug 5: a due order (a breaker held it past its time) is not "tried again … ago".
    func testADueOrder_isTriedAtTheNextPass_neverAgainInThePast() {
        var due = order("", state: .pending)
        due.reason = nil
        due.nextAttemptAt = 73
        let next = Verdict(due, now: 100).next ?? ""
        XCTAssertTrue(next.hasPrefix("nothing: settle tries it at its next pass (due since 27s)"), next)
        XCTAssertFalse(next.contains("ago"), next)
        due.nextAttemptAt = 130
        XCTAssertTrue(Verdict(due, now: 100).next?.contains("tries again") == true)
        XCTAssertTrue(Verdict(due, now: 100).next?.contains("(in 30s)") == true, Verdict(due, now: 100).next ?? "")
    }
}
