import Foundation
import SettleTesting
import XCTest
@testable import SettleApp
@testable import SettleBase
@testable import SettleModel
@testable import SettleLedger
@testable import SettleConfig

/// The actions: only with `web.actions`, only with a valid CSRF token from this console, never
/// from another site; the same ledger calls as the commands, naming the operator, on both engines.
final class WebActionTests: WebConsoleTestCase {
    let alice = [WebConsoleTestCase.basic("alice", "pw")]

    func users() -> WebUsers {
        WebUsers(hashes: ["alice": WebPasswordHash.make("pw", iterations: 1000), "bob": WebPasswordHash.make("pw2", iterations: 1000)])
    }

    func needsAttention(_ engine: Engine, _ id: String, reason: String = "attempts_exhausted", user: String = "u-1") throws {
        try enqueue(engine.ledger, id, user: user, transaction: "t-\(id)")
        try engine.execute("UPDATE orders SET state = 'needs_attention', reason = '\(reason)'"
                           + (user.isEmpty ? ", user_id = ''" : "") + " WHERE order_id = '\(id)'")
    }

    func testActionsOff_everyActionIsRefused_andTheLedgerIsNotWritten() throws {
        let engine = try sqlite()
        try needsAttention(engine, "o-1")
        let base = try start(engine.ledger)
        XCTAssertFalse(text(try get(base, "/orders/o-1")).contains("<form method=\"post\" action=\"/orders/"), "no action form")
        let before = ledgerBytes(try XCTUnwrap(engine.path))
        for action in ["retry", "assign", "resolve"] {
            let response = try post(base, "/orders/o-1/\(action)", [("csrf", "x"), ("note", "n"), ("as", "wont_grant"), ("user", "u")])
            XCTAssertEqual(response.status, 403, action)
            XCTAssertTrue(text(response).contains("read-only"), action)
        }
        XCTAssertEqual(ledgerBytes(try XCTUnwrap(engine.path)), before, "not a byte of the ledger changed")
        XCTAssertEqual(try engine.ledger.orderRecord("o-1")?.order.state, .needsAttention)
    }

    func testActionsOff_onPostgreSQL_writeNoRow() throws {
        let engine = try postgres()
        try needsAttention(engine, "o-1")
        let base = try start(engine.ledger)
        let before = try engine.ledger.orderRecord("o-1")
        XCTAssertEqual(try post(base, "/orders/o-1/retry", [("csrf", "x")]).status, 403)
        let after = try engine.ledger.orderRecord("o-1")
        XCTAssertEqual(after?.order.state, before?.order.state)
        XCTAssertEqual(after?.history.count, before?.history.count)
    }

    /// Read-only on PostgreSQL is the database's, not only a code path's: the console without
    /// actions opens the ledger as `settle web` does, and a write through its sessions fails.
    func testActionsOff_onPostgreSQL_theConsolesSessionsAreReadOnlyInTheDatabase() throws {
        let fresh = try TestPostgres.freshSchema()
        schemas.append(fresh.schema)
        let writer = try PostgresLedger(url: fresh.url, time: world.time)
        try enqueue(writer, "o-1")
        var configuration = try world.configuration()
        configuration.postgresLedger = PostgresLedgerConfiguration(url: Secret(fresh.url), passwordFile: nil)
        let console = try configuration.openLedger(.readOnly, time: world.time)
        XCTAssertEqual(try console.orderRecord("o-1")?.order.state, .pending, "it reads")
        XCTAssertThrowsError(try console.retry(orderIds: ["o-1"], note: "n", proof: nil, by: Operator(name: "m", channel: .web))) {
            XCTAssertTrue("\($0)".contains("read-only transaction"), "\($0)")
        }
        let ledger = try XCTUnwrap(console as? PostgresLedger)
        XCTAssertThrowsError(try ledger.write { try $0.execute("DELETE FROM orders") }) {
            XCTAssertTrue("\($0)".contains("read-only transaction"), "\($0)")
        }
        XCTAssertNotNil(try writer.orderRecord("o-1"), "nothing was deleted")
        let base = try start(console)
        XCTAssertEqual(try get(base, "/orders/o-1").status, 200, "the console reads through those sessions")
    }

    func testAMissingOrWrongCSRFToken_isRefused_andNothingIsWritten() throws {
        let engine = try sqlite()
        try needsAttention(engine, "o-1")
        let base = try start(engine.ledger, actions: true, users: users())
        let good = try csrfToken(base, order: "o-1", headers: alice)
        let before = try engine.ledger.orderRecord("o-1")?.history.count
        XCTAssertEqual(try post(base, "/orders/o-1/retry", [], headers: alice).status, 403)
        XCTAssertEqual(try post(base, "/orders/o-1/retry", [("csrf", good + "0")], headers: alice).status, 403)
        XCTAssertEqual(try post(base, "/orders/o-1/retry", [("csrf", "1.abc")], headers: alice).status, 403)
        // bob cannot use alice's form.
        XCTAssertEqual(try post(base, "/orders/o-1/retry", [("csrf", good)], headers: [Self.basic("bob", "pw2")]).status, 403)
        // A form expires 4 h after the page made it.
        world.time.advance(by: 4 * 3600 + 1)
        XCTAssertEqual(try post(base, "/orders/o-1/retry", [("csrf", good)], headers: alice).status, 403)
        XCTAssertEqual(try engine.ledger.orderRecord("o-1")?.history.count, before)
        XCTAssertEqual(try engine.ledger.orderRecord("o-1")?.order.state, .needsAttention)
    }

    func testAPostFromAnotherSite_isRefused_evenWithAValidToken() throws {
        let engine = try sqlite()
        try needsAttention(engine, "o-1")
        let base = try start(engine.ledger, actions: true)
        let token = try csrfToken(base, order: "o-1")
        XCTAssertEqual(try post(base, "/orders/o-1/retry", [("csrf", token)], headers: [HTTPHeader("Sec-Fetch-Site", "cross-site")]).status, 403)
        XCTAssertEqual(try post(base, "/orders/o-1/retry", [("csrf", token)], headers: [HTTPHeader("Origin", "https://evil.example")]).status, 403)
        XCTAssertEqual(try post(base, "/orders/o-1/retry", [("csrf", token)], headers: [HTTPHeader("Origin", "null")]).status, 403)
        XCTAssertEqual(try engine.ledger.orderRecord("o-1")?.order.state, .needsAttention)
        let same = try post(base, "/orders/o-1/retry", [("csrf", token)],
                            headers: [HTTPHeader("Sec-Fetch-Site", "same-origin"), HTTPHeader("Origin", base)])
        XCTAssertEqual(same.status, 303)
        XCTAssertEqual(try engine.ledger.orderRecord("o-1")?.order.state, .pending)
    }

    func testRetryAssignAndResolve_areTheCommandsLedgerCalls_namingTheOperator_onBothEngines() throws {
        try onEachEngine { engine in
            try needsAttention(engine, "o-retry")
            try needsAttention(engine, "o-assign", reason: "unclaimed_purchase", user: "")
            try needsAttention(engine, "o-resolve")
            let base = try start(engine.ledger, actions: true, users: users())

            let retried = try post(base, "/orders/o-retry/retry", [("csrf", try csrfToken(base, order: "o-retry", headers: alice)),
                                                                   ("note", "ticket 1")], headers: alice)
            XCTAssertEqual(retried.status, 303, engine.name)
            XCTAssertEqual(retried.header("Location"), "/orders/o-retry?done=retried", engine.name)
            let retry = try XCTUnwrap(engine.ledger.orderRecord("o-retry"), engine.name)
            XCTAssertEqual(retry.order.state, .pending, engine.name)
            XCTAssertEqual(retry.history.last?.detail, "by alice via web: ticket 1", engine.name)

            let assigned = try post(base, "/orders/o-assign/assign", [("csrf", try csrfToken(base, order: "o-assign", headers: alice)),
                                                                      ("user", "u-9"), ("note", "ticket 2")], headers: alice)
            XCTAssertEqual(assigned.status, 303, engine.name)
            let assign = try XCTUnwrap(engine.ledger.orderRecord("o-assign"), engine.name)
            XCTAssertEqual(assign.order.userId, "u-9", engine.name)
            XCTAssertEqual(assign.history.last?.detail, "by alice via web: to user u-9: ticket 2", engine.name)

            let resolved = try post(base, "/orders/o-resolve/resolve", [("csrf", try csrfToken(base, order: "o-resolve", headers: alice)),
                                                                        ("as", "wont_grant"), ("note", "ticket 3")], headers: alice)
            XCTAssertEqual(resolved.status, 303, engine.name)
            let resolve = try XCTUnwrap(engine.ledger.orderRecord("o-resolve"), engine.name)
            XCTAssertEqual(resolve.order.state, .rejected, engine.name)
            XCTAssertEqual(resolve.history.last?.detail, "by alice via web: from needs_attention (attempts_exhausted): ticket 3", engine.name)

            // Issue 36, bug 7: no Retry is offered for an order with no buyer, and no resolution is preselected.
            try needsAttention(engine, "o-nobody", reason: "unclaimed_purchase", user: "")
            let nobody = text(try get(base, "/orders/o-nobody", headers: alice))
            XCTAssertFalse(nobody.contains("id=\"retry-form\""), engine.name)
            XCTAssertTrue(nobody.contains("id=\"assign-form\""), engine.name)
            XCTAssertTrue(nobody.contains("<option value=\"\" selected disabled>"), engine.name)
            XCTAssertFalse(nobody.contains("<option value=\"granted_by_hand\" selected"), engine.name)
            let page = text(try get(base, "/orders/o-retry?done=retried", headers: alice))
            XCTAssertTrue(page.contains("<p class=\"notice\" id=\"outcome\">retried: pending, due now</p>"), engine.name)
            XCTAssertTrue(page.contains("by alice via web: ticket 1"), "the history names who: \(engine.name)")
        }
    }

    func testARefusedAction_isShownAsText_andChangesNothing() throws {
        let engine = try sqlite()
        try enqueue(engine.ledger, "o-pending")
        try needsAttention(engine, "o-1")
        let base = try start(engine.ledger, actions: true)
        let token = try csrfToken(base, order: "o-1")
        let refused = try post(base, "/orders/o-pending/retry", [("csrf", token)])
        XCTAssertEqual(refused.status, 409)
        XCTAssertTrue(text(refused).contains("refused: order o-pending is pending; only needs_attention or rejected orders can be retried"))
        let noNote = try post(base, "/orders/o-1/resolve", [("csrf", token), ("as", "wont_grant"), ("note", " ")])
        XCTAssertEqual(noNote.status, 409)
        XCTAssertTrue(text(noNote).contains("a note is required"))
        XCTAssertEqual(try engine.ledger.orderRecord("o-1")?.order.state, .needsAttention)
        XCTAssertEqual(try engine.ledger.orderRecord("o-pending")?.history.count, 1)
        XCTAssertTrue(text(try get(base, "/orders/o-1")).contains("<span class=\"who\" id=\"who\">local · actions on</span>"))
    }

    /// An order settle granted through the hook: finished, its grant row, a delivered history row.
    func granted(_ engine: Engine, _ id: String) throws {
        try enqueue(engine.ledger, id, user: "u-1", transaction: "t-\(id)")
        let now = world.time.unixSeconds
        try engine.execute("""
            UPDATE orders SET state = 'finished', finished_at = \(now), verified_transaction_id = 't-\(id)',
                   original_transaction_id = 't-\(id)', environment = 'Production' WHERE order_id = '\(id)';
            INSERT INTO grants(grant_key, transaction_id, order_id, source, granted_at) VALUES ('t-\(id)', 't-\(id)', '\(id)', 'settle', \(now));
            INSERT INTO history(order_id, at, kind, outcome, hook_exit) VALUES ('\(id)', \(now), 'delivery', 'delivered', 0);
            """)
    }

    func testTransferAndRedeliver_recordSupportsRequest_byTheOperator_onBothEngines() throws {
        try onEachEngine { engine in
            try granted(engine, "o-move")
            try granted(engine, "o-again")
            try needsAttention(engine, "o-never")
            let base = try start(engine.ledger, actions: true, users: users())
            let page = text(try get(base, "/orders/o-move", headers: alice))
            XCTAssertTrue(page.contains("id=\"transfer-form\""), engine.name)
            XCTAssertTrue(page.contains("id=\"redeliver-form\""), engine.name)

            let moved = try post(base, "/orders/o-move/transfer", [("csrf", try csrfToken(base, order: "o-move", headers: alice)),
                                                                   ("to_user", "u-2"), ("note", "ticket 4")], headers: alice)
            XCTAssertEqual(moved.status, 303, "\(engine.name): \(text(moved))")
            XCTAssertEqual(moved.header("Location"), "/orders/o-move?done=transferred", engine.name)
            let transfer = try XCTUnwrap(engine.ledger.orderRecord("o-move"), engine.name)
            XCTAssertEqual(transfer.history.last?.outcome, "transfer_requested", engine.name)
            XCTAssertEqual(transfer.history.last?.detail, "transfer 1 to u-2 (from u-1) requested by alice via web: ticket 4", engine.name)
            XCTAssertEqual(try engine.ledger.supportActions(orderId: "o-move").count, 1, engine.name)

            // Without the confirmation that the receiver is idempotent on the key: refused, nothing recorded.
            let unconfirmed = try post(base, "/orders/o-again/redeliver", [("csrf", try csrfToken(base, order: "o-again", headers: alice)),
                                                                           ("note", "ticket 5")], headers: alice)
            XCTAssertEqual(unconfirmed.status, 409, engine.name)
            XCTAssertTrue(text(unconfirmed).contains("a receiver that does not ignore a key it has already acted on grants twice"), engine.name)
            XCTAssertEqual(try engine.ledger.supportActions(orderId: "o-again").count, 0, engine.name)
            XCTAssertTrue(page.contains("name=\"receiver_is_idempotent\" value=\"yes\" required"), engine.name)
            let again = try post(base, "/orders/o-again/redeliver", [("csrf", try csrfToken(base, order: "o-again", headers: alice)),
                                                                     ("note", "ticket 5"), ("receiver_is_idempotent", "yes")],
                                 headers: alice)
            XCTAssertEqual(again.status, 303, "\(engine.name): \(text(again))")
            let redelivery = try XCTUnwrap(engine.ledger.orderRecord("o-again"), engine.name)
            XCTAssertEqual(redelivery.history.last?.outcome, "redeliver_requested", engine.name)
            XCTAssertTrue(redelivery.history.last?.detail?.contains("alice via web") == true, "\(engine.name): \(String(describing: redelivery.history.last))")

            let never = try post(base, "/orders/o-never/redeliver", [("csrf", try csrfToken(base, order: "o-again", headers: alice)),
                                                                     ("note", "ticket 6"), ("receiver_is_idempotent", "yes")],
                                 headers: alice)
            XCTAssertEqual(never.status, 409, engine.name)
            XCTAssertTrue(text(never).contains("was never granted"), engine.name)
            XCTAssertEqual(try engine.ledger.supportActions(orderId: "o-never").count, 0, engine.name)
            XCTAssertTrue(text(try get(base, "/orders/o-move", headers: alice)).contains("id=\"support-actions\""), engine.name)
            // A transfer the hook refused waits for a person: the overview says so, and links it.
            try engine.execute("UPDATE support_actions SET state = 'waiting' WHERE order_id = 'o-move'")
            XCTAssertTrue(text(try get(base, "/", headers: alice)).contains(
                "<p id=\"support-actions-waiting\"><strong>1 support actions waiting</strong>"), engine.name)
            XCTAssertTrue(text(try get(base, "/", headers: alice)).contains("href=\"/orders/o-move\""), engine.name)
        }
    }
}
