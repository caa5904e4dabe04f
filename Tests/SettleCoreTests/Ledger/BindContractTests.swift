import Foundation
import SettleTesting
import XCTest
@testable import SettleModel
@testable import SettleLedger
@testable import SettleGooglePlayModule

/// `settle bind` (issue 36) on every back end: a `token_unverifiable` order gets its user's token,
/// a history row and an audit row naming the operator, and is due now, in one transaction; every
/// refusal writes nothing at all.
extension LedgerContractTests {
    static let aliceToken = "6F1E4C2A-5B3D-4E8F-9A0B-1C2D3E4F5A6B"
    static let otherToken = "0d9c8b7a-6f5e-4d3c-8b2a-19f8e7d6c5b4"

    /// An App Store order of `user` set aside as `reason` (a backend's row, as the pass would leave it).
    func setAside(_ b: LedgerBackEnd, _ id: String, user: String = "u-1", reason: String = "token_unverifiable",
                  state: String = "needs_attention", token: String? = nil) throws {
        try enqueue(b.store, id, transaction: nil)
        let stored = token.map { "'\($0)'" } ?? "NULL"
        try b.execute("""
            UPDATE orders SET user_id = '\(user)', state = '\(state)', reason = '\(reason)',
                   last_error = 'the purchase carries …', attempts = 3, app_account_token = \(stored),
                   next_attempt_at = 0
            WHERE order_id = '\(id)'
            """)
    }

    func testBind_ofATokenUnverifiableOrder_storesTheToken_makesItDueNow_andRecordsHistoryAndAudit() throws {
        let alice = Operator(name: "alice", channel: .cli)
        try onEachBackEnd { b in
            try setAside(b, "o-1")
            let bound = try b.store.bind(orderId: "o-1", accountToken: Self.aliceToken, note: "ticket 12",
                                         binding: UserBinding(), by: alice)
            let fingerprint = AccountTokenBinding.fingerprint(Self.aliceToken.lowercased())
            XCTAssertEqual(bound, BoundOrder(orderId: "o-1", fingerprint: fingerprint, replacedFingerprint: nil),
                           b.name)
            let record = try XCTUnwrap(try b.store.orderRecord("o-1"), b.name)
            XCTAssertEqual(record.order.appAccountToken, Self.aliceToken.lowercased(),
                           "a UUID is kept lowercase (\(b.name))")
            XCTAssertEqual(record.order.state, .pending, b.name)
            XCTAssertNil(record.order.reason, b.name)
            XCTAssertEqual(record.order.attempts, 0, b.name)
            XCTAssertEqual(record.order.nextAttemptAt, world.time.unixSeconds, "due now (\(b.name))")
            let row = try XCTUnwrap(record.history.last, b.name)
            XCTAssertEqual(row.outcome, "account_token_bound", b.name)
            XCTAssertEqual(row.detail, "by alice via cli: bound app account token \(fingerprint), from needs_attention "
                           + "(token_unverifiable): ticket 12; pending, due now", b.name)
            let audit = try XCTUnwrap(try b.store.auditEntries().first, b.name)
            XCTAssertEqual(audit.action, "bind", b.name)
            XCTAssertEqual(audit.subject, "o-1", b.name)
            XCTAssertEqual(audit.actor, "alice", b.name)
            XCTAssertEqual(audit.detail, "bound app account token \(fingerprint): ticket 12", b.name)
            for text in [row.detail ?? "", audit.detail] {
                XCTAssertFalse(text.lowercased().contains(Self.aliceToken.lowercased()),
                               "the token itself stays out (\(b.name))")
            }
        }
    }

    func testBind_refusesEveryOrderAndTokenItMustNot_writingNothing() throws {
        try onEachBackEnd { b in
            try setAside(b, "o-unbound", reason: "proof_unbound")
            try setAside(b, "o-mismatch", reason: "user_mismatch", state: "rejected", token: Self.otherToken)
            try setAside(b, "o-exhausted", reason: "attempts_exhausted")
            try enqueue(b.store, "o-pending")
            try setAside(b, "o-1")
            let refusals: [(String, String, String)] = [
                ("o-unbound", Self.aliceToken, "carries no app account token"),
                ("o-mismatch", Self.aliceToken, "would hand that user's purchase"),
                ("o-exhausted", Self.aliceToken, "only needs_attention orders with reason token_unverifiable"),
                ("o-pending", Self.aliceToken, "is pending"),
                ("o-1", "not-a-uuid", "is not a UUID"),
                ("o-1", "", "is not a UUID"),
                ("o-none", Self.aliceToken, "no order o-none"),
            ]
            for (id, token, why) in refusals {
                let alice = Operator(name: "alice", channel: .cli)
                XCTAssertThrowsError(try b.store.bind(orderId: id, accountToken: token, note: "n",
                                                      binding: UserBinding(), by: alice), "\(b.name) \(id)") { error in
                    guard case let .invalid(message) = error as? LedgerError else {
                        return XCTFail("\(b.name): \(error)")
                    }
                    XCTAssertTrue(message.contains(why), "\(b.name) \(id): \(message)")
                }
            }
            XCTAssertThrowsError(try b.store.bind(orderId: "o-1", accountToken: Self.aliceToken, note: "n",
                                                  binding: UserBinding(tokenSource: .userId)), b.name) { error in
                XCTAssertTrue("\(error)".contains("user_binding.app_account_token is user_id"), "\(b.name): \(error)")
            }
            XCTAssertEqual(try b.store.auditEntries(), [], "a refusal writes no audit row (\(b.name))")
            XCTAssertEqual(try b.store.orderRecord("o-1")?.order.state, .needsAttention, b.name)
            XCTAssertNil(try b.store.orderRecord("o-1")?.order.appAccountToken, b.name)
            XCTAssertEqual(try b.store.orderRecord("o-mismatch")?.order.appAccountToken, Self.otherToken, b.name)
        }
    }

    func testBind_refusesATokenAnotherUsersOrderCarries_evenInAnotherCase_andAcceptsTheSameUsersOwn() throws {
        try onEachBackEnd { b in
            try setAside(b, "o-bob", user: "bob", reason: "attempts_exhausted", token: Self.aliceToken.lowercased())
            try setAside(b, "o-1", user: "mallory")
            XCTAssertThrowsError(try b.store.bind(orderId: "o-1", accountToken: Self.aliceToken, note: "claims it",
                                                  binding: UserBinding()), b.name) { error in
                let message = "\(error)"
                XCTAssertTrue(message.contains("already bound to order o-bob, another user's"), "\(b.name): \(message)")
                XCTAssertFalse(message.lowercased().contains(Self.aliceToken.lowercased()), "\(b.name): \(message)")
            }
            XCTAssertEqual(try b.store.orderRecord("o-1")?.order.state, .needsAttention, b.name)
            // The same user's other order carrying the token is no objection: it is theirs.
            try setAside(b, "o-2", user: "bob")
            XCTAssertNoThrow(try b.store.bind(orderId: "o-2", accountToken: Self.aliceToken, note: "n",
                                              binding: UserBinding()), b.name)
        }
    }

    func testBind_overADifferentStoredToken_needsReplace_namingTheOldFingerprint() throws {
        try onEachBackEnd { b in
            // A token that is not a UUID leaves the user's token unknown: token_unverifiable.
            try setAside(b, "o-1", token: "not-a-uuid")
            XCTAssertThrowsError(try b.store.bind(orderId: "o-1", accountToken: Self.aliceToken, note: "n",
                                                  binding: UserBinding()), b.name) { error in
                let message = "\(error)"
                let old = AccountTokenBinding.fingerprint("not-a-uuid")
                XCTAssertTrue(message.contains("already carries another app account token (\(old))"),
                              "\(b.name): \(message)")
                XCTAssertTrue(message.contains("--replace"), "\(b.name): \(message)")
            }
            XCTAssertEqual(try b.store.orderRecord("o-1")?.order.appAccountToken, "not-a-uuid", b.name)
            let bound = try b.store.bind(orderId: "o-1", accountToken: Self.aliceToken, note: "n", replace: true,
                                         binding: UserBinding(), by: Operator(name: "alice", channel: .web))
            XCTAssertEqual(bound.replacedFingerprint, AccountTokenBinding.fingerprint("not-a-uuid"), b.name)
            XCTAssertEqual(try b.store.orderRecord("o-1")?.order.appAccountToken, Self.aliceToken.lowercased(), b.name)
            XCTAssertTrue(try b.store.auditEntries().first?.detail.contains("(replacing sha256:") ?? false, b.name)
        }
    }

    func testBind_ofAPlayOrder_takesItsAccountIdAsItIs_upTo64Bytes() throws {
        try onEachBackEnd { b in
            _ = try b.store.enqueue(NewOrder(orderId: "p-1", userId: "u-1", productId: "gems_100", store: .googlePlay,
                                             purchaseToken: Self.playToken))
            try b.execute("UPDATE orders SET state = 'needs_attention', reason = 'token_unverifiable' "
                          + "WHERE order_id = 'p-1'")
            let long = String(repeating: "a", count: 65)
            XCTAssertThrowsError(try b.store.bind(orderId: "p-1", accountToken: long, note: "n",
                                                  binding: UserBinding()), b.name) { error in
                XCTAssertTrue("\(error)".contains("the account id must be 1 to 64 bytes"), "\(b.name): \(error)")
            }
            XCTAssertThrowsError(try b.store.bind(orderId: "p-1", accountToken: "acct\n42", note: "n",
                                                  binding: UserBinding()), b.name)
            try b.store.bind(orderId: "p-1", accountToken: "Acct-42", note: "n", binding: UserBinding())
            XCTAssertEqual(try b.store.orderRecord("p-1")?.order.appAccountToken, "Acct-42", b.name)
            let detail = try b.store.orderRecord("p-1")?.history.last?.detail ?? ""
            XCTAssertTrue(detail.hasPrefix("bound account id sha256:"), "\(b.name): \(detail)")
        }
    }
}
