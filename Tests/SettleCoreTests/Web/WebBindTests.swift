import Foundation
import SettleTesting
import XCTest
@testable import SettleApp
@testable import SettleBase
@testable import SettleModel
@testable import SettleLedger

/// The order page's Bind form (issue 36), over loopback HTTP on both engines: shown only on a
/// `token_unverifiable` order and to a support role; a viewer's POST is 403 and audited as
/// refused; a refusal is shown without echoing the token.
final class WebBindTests: WebConsoleTestCase {
    let token = "6f1e4c2a-5b3d-4e8f-9a0b-1c2d3e4f5a6b"
    let sam = [WebConsoleTestCase.basic("sam", "pw")], vic = [WebConsoleTestCase.basic("vic", "pw2")]

    func users() -> WebUsers {
        WebUsers(hashes: ["sam": WebPasswordHash.make("pw", iterations: 1000),
                          "vic": WebPasswordHash.make("pw2", iterations: 1000)],
                 roles: ["sam": .support, "vic": .viewer])
    }

    func setAside(_ engine: Engine, _ id: String, user: String = "u-1", reason: String = "token_unverifiable",
                  token: String? = nil) throws {
        try enqueue(engine.ledger, id, user: user, transaction: "t-\(id)")
        try engine.execute("UPDATE orders SET state = 'needs_attention', reason = '\(reason)', app_account_token = "
                           + (token.map { "'\($0)'" } ?? "NULL") + " WHERE order_id = '\(id)'")
    }

    func testBindForm_supportBindsAndIsAudited_aViewerIs403_onBothEngines() throws {
        try onEachEngine { engine in
            try setAside(engine, "o-1")
            try setAside(engine, "o-2", reason: "user_mismatch")
            let base = try start(engine.ledger, actions: true, users: users())
            let page = text(try get(base, "/orders/o-1", headers: sam))
            XCTAssertTrue(page.contains("id=\"bind-form\""), engine.name)
            XCTAssertFalse(text(try get(base, "/orders/o-2", headers: sam)).contains("bind-form"),
                           "no Bind on user_mismatch: \(engine.name)")
            XCTAssertFalse(text(try get(base, "/orders/o-1", headers: vic)).contains("bind-form"), engine.name)

            // A viewer's own, valid form is refused for its role, audited, and writes nothing else.
            let vicToken = try XCTUnwrap(consoles.last).csrf.token(for: "vic")
            let refused = try post(base, "/orders/o-1/bind", [("csrf", vicToken), ("token", token), ("note", "n")],
                                   headers: vic)
            XCTAssertEqual(refused.status, 403, engine.name)
            XCTAssertEqual(try engine.ledger.orderRecord("o-1")?.order.state, .needsAttention, engine.name)
            let vicBinds = try engine.ledger.auditEntries(actor: "vic").filter { $0.action == "bind" }
            XCTAssertEqual(vicBinds.map(\.outcome), [.refused], engine.name)

            let done = try post(base, "/orders/o-1/bind", [("csrf", try csrfToken(base, order: "o-1", headers: sam)),
                                                           ("token", token), ("note", "ticket 4")], headers: sam)
            XCTAssertEqual(done.status, 303, "\(engine.name): \(text(done))")
            let order = try XCTUnwrap(try engine.ledger.orderRecord("o-1")?.order, engine.name)
            XCTAssertEqual(order.state, .pending, engine.name)
            XCTAssertEqual(order.appAccountToken, token, engine.name)
            let samBinds = try engine.ledger.auditEntries(actor: "sam").filter { $0.action == "bind" }
            let audit = try XCTUnwrap(samBinds.first, engine.name)
            XCTAssertEqual(audit.channel, .web, engine.name)
            XCTAssertEqual(audit.role, .support, engine.name)
            XCTAssertEqual(audit.outcome, .ok, engine.name)
            let after = text(try get(base, "/orders/o-1?done=bound", headers: sam))
            XCTAssertTrue(after.contains("account token bound"), engine.name)
        }
    }

    func testBindForm_refusals_areShown_withoutTheToken_andChangeNothing() throws {
        try onEachEngine { engine in
            try setAside(engine, "o-other", user: "bob", reason: "attempts_exhausted", token: token)
            try setAside(engine, "o-1", user: "mallory")
            let base = try start(engine.ledger, actions: true, users: users())
            let csrf = try csrfToken(base, order: "o-1", headers: sam)
            let forged = try post(base, "/orders/o-1/bind", [("token", token), ("note", "n")], headers: sam)
            XCTAssertEqual(forged.status, 403, "no CSRF token, no bind: \(engine.name)")
            let stolen = try post(base, "/orders/o-1/bind", [("csrf", csrf), ("token", token), ("note", "n")],
                                  headers: sam)
            XCTAssertEqual(stolen.status, 409, engine.name)
            XCTAssertTrue(text(stolen).contains("already bound to order o-other, another user"), engine.name)
            XCTAssertFalse(text(stolen).contains(token), "the token is never echoed: \(engine.name)")
            let noNote = try post(base, "/orders/o-1/bind",
                                  [("csrf", csrf), ("token", "0d9c8b7a-6f5e-4d3c-8b2a-19f8e7d6c5b4")], headers: sam)
            XCTAssertEqual(noNote.status, 409, engine.name)
            XCTAssertTrue(text(noNote).contains("a note is required"), engine.name)
            XCTAssertEqual(try engine.ledger.orderRecord("o-1")?.order.state, .needsAttention, engine.name)
            XCTAssertNil(try engine.ledger.orderRecord("o-1")?.order.appAccountToken, engine.name)
        }
    }
}
