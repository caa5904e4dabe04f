import Foundation
import SettleTesting
import XCTest
@testable import SettleModel
@testable import SettleLedger

/// The audit log (issue 36), on every back end: each support action a person takes writes its
/// entry in the action's own transaction, and none when the action is refused.
extension LedgerContractTests {
    func testEverySupportAction_byAPerson_writesOneAuditEntry_newestFirst() throws {
        let alice = Operator(name: "alice", channel: .web, role: .support, source: "203.0.113.7")
        let root = Operator(name: "root", channel: .cli)
        try onEachBackEnd { b in
            try enqueue(b.store, "o-1")
            try enqueue(b.store, "o-2", transaction: "101")
            try enqueue(b.store, "o-3", transaction: "102")
            try b.execute("""
                UPDATE orders SET state = 'needs_attention', reason = 'attempts_exhausted'
                WHERE order_id IN ('o-1', 'o-3')
                """)
            try b.execute("""
                UPDATE orders SET user_id = '', state = 'needs_attention', reason = 'unclaimed_purchase'
                WHERE order_id = 'o-2'
                """)

            try b.store.retry(orderIds: ["o-1"], note: "ticket 1", proof: nil, by: alice)
            try b.store.assign(orderId: "o-2", userId: "u-9", note: "ticket 2", accountToken: nil, by: root)
            try b.store.resolve(orderIds: ["o-3"], as: .wontGrant, note: "ticket 3", transaction: nil, by: alice)

            let entries = try b.store.auditEntries()
            XCTAssertEqual(entries.map(\.action), ["resolve", "assign", "retry"], b.name)
            XCTAssertEqual(entries.map(\.subject), ["o-3", "o-2", "o-1"], b.name)
            let retry = try XCTUnwrap(entries.last, b.name)
            XCTAssertEqual(retry.actor, "alice", b.name)
            XCTAssertEqual(retry.channel, .web, b.name)
            XCTAssertEqual(retry.role, .support, b.name)
            XCTAssertEqual(retry.source, "203.0.113.7", b.name)
            XCTAssertEqual(retry.outcome, .ok, b.name)
            XCTAssertEqual(retry.detail, "ticket 1", b.name)
            XCTAssertEqual(retry.at, world.time.unixSeconds, b.name)
            XCTAssertEqual(entries[1].source, "local", "the shell's source is local (\(b.name))")
            XCTAssertEqual(entries[1].role, nil, b.name)
            XCTAssertEqual(entries[1].detail, "to user u-9: ticket 2", b.name)
            XCTAssertEqual(entries[0].detail, "wont_grant: ticket 3", b.name)
            XCTAssertTrue(entries[0].id > entries[1].id && entries[1].id > entries[2].id, b.name)

            XCTAssertEqual(try b.store.auditEntries(actor: "root").map(\.subject), ["o-2"], b.name)
            XCTAssertEqual(try b.store.auditEntries(limit: 1).map(\.action), ["resolve"], b.name)
            XCTAssertEqual(try b.store.auditEntries(before: entries[0].id).map(\.action), ["assign", "retry"], b.name)
            XCTAssertEqual(try b.store.auditEntries(since: world.time.unixSeconds + 1), [], b.name)
        }
    }

    func testARefusedAction_leavesNoAuditEntry_andARecordedRefusalIsKept() throws {
        let viewer = Operator(name: "vic", channel: .web, role: .viewer, source: "198.51.100.4")
        try onEachBackEnd { b in
            try enqueue(b.store, "o-1")
            // A pending order cannot be retried: the action and its audit entry roll back together.
            XCTAssertThrowsError(try b.store.retry(orderIds: ["o-1"], note: "x", proof: nil, by: viewer), b.name)
            XCTAssertEqual(try b.store.auditEntries(), [], b.name)
            try b.store.recordAudit(AuditEntry(viewer, action: "retry", subject: "o-1", detail: "needs role support",
                                               outcome: .refused))
            let refused = try XCTUnwrap(try b.store.auditEntries().first, b.name)
            XCTAssertEqual(refused.outcome, .refused, b.name)
            XCTAssertEqual(refused.actor, "vic", b.name)
            XCTAssertEqual(refused.at, world.time.unixSeconds, "stamped with the ledger's clock (\(b.name))")
        }
    }

    func testTransferAndRedelivery_areAudited_withTheirNote_andANoteCannotBreakTheLine() throws {
        let ann = Operator(name: "ann", channel: .web, role: .admin, source: "192.0.2.1")
        try onEachBackEnd { b in
            try grantedOrder(b.store, "o-1", transaction: "100")
            try b.store.requestTransfer(orderId: "o-1", toUser: "u-2", note: "ticket 7\nforged line", by: ann)
            let transfer = try XCTUnwrap(try b.store.auditEntries().first, b.name)
            XCTAssertEqual(transfer.action, "transfer", b.name)
            XCTAssertEqual(transfer.detail, "to user u-2: ticket 7 forged line", b.name)
            XCTAssertEqual(transfer.role, .admin, b.name)
            XCTAssertEqual(transfer.subject, "o-1", b.name)
        }
    }
}
