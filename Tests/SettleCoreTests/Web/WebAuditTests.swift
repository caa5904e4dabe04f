import Foundation
import SettleTesting
import XCTest
@testable import SettleApp
@testable import SettleBase
@testable import SettleModel
@testable import SettleLedger

/// The console's audit log (issue 36), over real HTTP on both engines: an action done in the
/// console is on `/audit` and `/api/audit` with who, channel web, role and the client's address;
/// the page pages by `?before=ID` and filters by actor.
final class WebAuditTests: WebConsoleTestCase {
    let alice = [WebConsoleTestCase.basic("alice", "pw")]

    func users() -> WebUsers {
        WebUsers(hashes: ["alice": WebPasswordHash.make("pw", iterations: 1000)])
    }

    func testAConsoleRetry_isOnTheAuditPageAndAPI_withWhoChannelRoleAndSource_onBothEngines() throws {
        try onEachEngine { engine in
            for id in ["o-1", "o-2", "o-3"] {
                try enqueue(engine.ledger, id, transaction: "t-\(id)")
            }
            try engine.execute("UPDATE orders SET state = 'needs_attention', reason = 'attempts_exhausted'")
            let base = try start(engine.ledger, actions: true, users: users())
            for id in ["o-1", "o-2", "o-3"] {
                let token = try csrfToken(base, order: id, headers: alice)
                let retried = try post(base, "/orders/\(id)/retry", [("csrf", token), ("note", "ticket \(id)")],
                                       headers: alice)
                XCTAssertEqual(retried.status, 303, engine.name)
            }
            let entries = try engine.ledger.auditEntries()
            XCTAssertEqual(entries.map(\.action), ["retry", "retry", "retry", "sign_in"], engine.name)
            let retry = entries[0]
            let said = "\(retry.actor) \(retry.channel) \(retry.role?.rawValue ?? "-") \(retry.source) \(retry.subject)"
            XCTAssertEqual(said, "alice web admin 127.0.0.1 o-3", engine.name)
            XCTAssertEqual(entries[3].subject, "alice", "one sign-in for the credentials, not one a request")

            let page = text(try get(base, "/audit", headers: alice))
            XCTAssertTrue(page.contains("<a href=\"/audit\">Audit</a>"), "linked from the nav (\(engine.name))")
            XCTAssertTrue(page.contains("id=\"audit-entries\"") && page.contains("ticket o-2"), engine.name)
            let older = text(try get(base, "/audit?before=\(entries[1].id)", headers: alice))
            XCTAssertFalse(older.contains("ticket o-3") || older.contains("ticket o-2"), engine.name)
            XCTAssertTrue(older.contains("ticket o-1"), engine.name)
            let nobody = text(try get(base, "/audit?actor=nobody", headers: alice))
            XCTAssertTrue(nobody.contains("no audit entries"), engine.name)
            XCTAssertEqual(try get(base, "/audit?before=x", headers: alice).status, 400, engine.name)

            let api = try JSONValue.parse(text(try get(base, "/api/audit?limit=2", headers: alice)))
            let objects = try XCTUnwrap(api.arrayValue, engine.name)
            XCTAssertEqual(objects.count, 2, engine.name)
            XCTAssertEqual(objects.first?["subject"], .string("o-3"), "newest first (\(engine.name))")
            XCTAssertEqual(objects.first?["channel"], .string("web"), engine.name)
            XCTAssertEqual(objects.first?["source"], .string("127.0.0.1"), engine.name)
            XCTAssertFalse(text(try get(base, "/api/audit", headers: alice)).contains("pw"), "no password")
        }
    }
}
