import Foundation
import SettleTesting
import XCTest
@testable import SettleModel
@testable import SettleLedger

/// Support actions name who took them, in the order's history, on every back end (issue 26).
extension LedgerContractTests {
    func testRetryAssignAndResolve_byAnOperator_sayWhoInTheHistory() throws {
        let alice = Operator(name: "alice", channel: .web), root = Operator(name: "root", channel: .cli)
        try onEachBackEnd { b in
            try enqueue(b.store, "o-1")
            try enqueue(b.store, "o-2", transaction: "101")
            try enqueue(b.store, "o-3", transaction: "102")
            try b.execute("UPDATE orders SET state = 'needs_attention', reason = 'attempts_exhausted' WHERE order_id IN ('o-1', 'o-3')")
            try b.execute("UPDATE orders SET user_id = '', state = 'needs_attention', reason = 'unclaimed_purchase' WHERE order_id = 'o-2'")

            try b.store.retry(orderIds: ["o-1"], note: "ticket 1", proof: nil, by: alice)
            let retried = try XCTUnwrap(try b.store.orderRecord("o-1")?.history.last, b.name)
            XCTAssertEqual(retried.outcome, "retried", b.name)
            XCTAssertEqual(retried.detail, "by alice via web: ticket 1", b.name)

            try b.store.assign(orderId: "o-2", userId: "u-9", note: "ticket 2", accountToken: nil, by: root)
            XCTAssertEqual(try b.store.orderRecord("o-2")?.history.last?.detail, "by root via cli: to user u-9: ticket 2", b.name)

            try b.store.resolve(orderIds: ["o-3"], as: .wontGrant, note: "ticket 3", transaction: nil, by: alice)
            let resolved = try XCTUnwrap(try b.store.orderRecord("o-3")?.history.last, b.name)
            XCTAssertEqual(resolved.outcome, "resolved_wont_grant", b.name)
            XCTAssertEqual(resolved.detail, "by alice via web: from needs_attention (attempts_exhausted): ticket 3", b.name)
        }
    }

    func testSupportActions_withoutAnOperator_keepTheirHistoryAsBefore() throws {
        try onEachBackEnd { b in
            try enqueue(b.store, "o-1")
            try b.execute("UPDATE orders SET state = 'rejected', reason = 'receipt_invalid' WHERE order_id = 'o-1'")
            try b.store.retry(orderIds: ["o-1"], note: "ticket 1")
            XCTAssertEqual(try b.store.orderRecord("o-1")?.history.last?.detail, "ticket 1", b.name)
        }
    }
}
