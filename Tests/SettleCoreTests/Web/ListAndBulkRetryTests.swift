import Foundation
import SettleTesting
import XCTest
@testable import SettleApp
@testable import SettleBase
@testable import SettleModel
@testable import SettleLedger

/// Issue 36: the console's lists per state and reason, paged, and the bulk retry from them:
/// a confirmation naming the count, a required note, the operator on every order, orders that
/// changed meanwhile skipped; refused without actions, without the form's token, from another
/// site, or over the limit; on both engines.
final class ListAndBulkRetryTests: WebConsoleTestCase {
    /// `n` orders in needs_attention as `reason`, one a second apart (o-<reason>-1 the oldest).
    func setAside(_ engine: Engine, _ n: Int, reason: String, state: String = "needs_attention") throws {
        let now = world.time.unixSeconds
        for i in 1...n {
            let id = "o-\(reason)-\(i)"
            try enqueue(engine.ledger, id, user: "u-\(i)", transaction: "t-\(reason)-\(i)")
            try engine.execute("UPDATE orders SET state = '\(state)', reason = '\(reason)', updated_at = \(now - 1000 + Int64(i)) "
                               + "WHERE order_id = '\(id)'")
        }
    }

    func testTheListOfAReason_isPaged_newestFirst_andCountsEveryOrder_onBothEngines() throws {
        try onEachEngine { engine in
            try setAside(engine, 60, reason: "hook_refused")
            try setAside(engine, 3, reason: "attempts_exhausted")
            let base = try start(engine.ledger)
            let first = text(try get(base, "/orders?state=needs_attention&reason=hook_refused"))
            XCTAssertTrue(first.contains("<p id=\"list-count\">60 orders</p>"), engine.name)
            XCTAssertTrue(first.contains(Verdict.explanation("hook_refused")), engine.name)
            let ids = listed(first)
            XCTAssertEqual(ids.count, ListPage.pageSize, engine.name)
            XCTAssertEqual(ids.first, "o-hook_refused-60", "newest change first: \(engine.name)")
            XCTAssertFalse(ids.contains { $0.hasPrefix("o-attempts") }, engine.name)
            let next = try XCTUnwrap(nextLink(first), engine.name)
            let second = text(try get(base, next))
            XCTAssertEqual(listed(second), (1...10).reversed().map { "o-hook_refused-\($0)" }, engine.name)
            XCTAssertNil(nextLink(second), "the last page has no next: \(engine.name)")
            XCTAssertEqual(Set(ids + listed(second)).count, 60, "every order once: \(engine.name)")
            // Every state has its list; a bad state or page is a 400, not a crash.
            XCTAssertTrue(listed(text(try get(base, "/orders?state=pending"))).isEmpty, engine.name)
            XCTAssertEqual(try get(base, "/orders?state=lost").status, 400, engine.name)
            XCTAssertEqual(try get(base, "/orders?state=needs_attention&after=nonsense").status, 400, engine.name)
            // Read-only: no boxes, no bulk form.
            XCTAssertFalse(first.contains("/bulk/retry"), engine.name)
        }
    }

    func testBulkRetry_confirmsTheCount_needsANote_andRecordsTheOperatorOnEachOrder_onBothEngines() throws {
        try onEachEngine { engine in
            try setAside(engine, 3, reason: "hook_refused")
            try setAside(engine, 1, reason: "attempts_exhausted")
            let base = try start(engine.ledger, actions: true)
            let list = text(try get(base, "/orders?state=needs_attention&reason=hook_refused"))
            XCTAssertTrue(list.contains("id=\"retry-page\">Retry all 3 on this page…</button>"), engine.name)
            let token = try XCTUnwrap(csrf(list), engine.name)
            let form = [("csrf", token), ("state", "needs_attention"), ("reason", "hook_refused"), ("id.0", "o-hook_refused-1"),
                        ("id.1", "o-hook_refused-3")]
            // First the confirmation: nothing changes yet.
            let confirm = try post(base, "/bulk/retry", form)
            XCTAssertEqual(confirm.status, 200, engine.name)
            XCTAssertTrue(text(confirm).contains("Retry <strong>2 orders</strong> (needs_attention as hook_refused)?"), engine.name)
            XCTAssertEqual(try engine.ledger.orderRecord("o-hook_refused-1")?.order.state, .needsAttention, engine.name)
            // Confirmed without a note: refused, nothing changes.
            let noNote = text(try post(base, "/bulk/retry", form + [("confirm", "yes")]))
            XCTAssertTrue(noNote.contains("refused: a note is required"), engine.name)
            XCTAssertEqual(try engine.ledger.orderRecord("o-hook_refused-1")?.order.state, .needsAttention, engine.name)
            // A person resolves one in the meantime (wont_grant: rejected, which a plain retry would take):
            // it is skipped and named, never retried against their decision; the other goes on.
            try engine.ledger.resolve(orderIds: ["o-hook_refused-3"], as: .wontGrant, note: "refunded by hand")
            let done = text(try post(base, "/bulk/retry", form + [("confirm", "yes"), ("note", "INC-9")]))
            XCTAssertTrue(done.contains("retried 1 order: pending, due now"), engine.name)
            XCTAssertTrue(done.contains("id=\"skipped-orders\""), engine.name)
            XCTAssertTrue(done.contains("now rejected (wont_grant), not needs_attention (hook_refused) as it was listed"), engine.name)
            XCTAssertEqual(try engine.ledger.orderRecord("o-hook_refused-3")?.order.reason, "wont_grant", engine.name)
            let retried = try XCTUnwrap(engine.ledger.orderRecord("o-hook_refused-1"))
            XCTAssertEqual(retried.order.state, .pending, engine.name)
            XCTAssertEqual(retried.history.last?.detail, "by local via web: INC-9", engine.name)
            XCTAssertEqual(try engine.ledger.orderRecord("o-hook_refused-2")?.order.state, .needsAttention, "not sent: \(engine.name)")
            XCTAssertEqual(try engine.ledger.orderRecord("o-attempts_exhausted-1")?.order.state, .needsAttention, engine.name)
        }
    }

    func testBulkRetry_isRefused_withoutActions_token_sameSite_orOverTheLimit_andAHostileIdStaysText() throws {
        let engine = try sqlite()
        try setAside(engine, 2, reason: "hook_refused")
        let readOnly = try start(engine.ledger)
        XCTAssertEqual(try post(readOnly, "/bulk/retry", [("csrf", "x"), ("id.0", "o-hook_refused-1")]).status, 403)
        let base = try start(engine.ledger, actions: true)
        let token = try XCTUnwrap(csrf(text(try get(base, "/orders?state=needs_attention"))))
        let form = [("id.0", "o-hook_refused-1"), ("confirm", "yes"), ("note", "x"), ("state", "needs_attention")]
        XCTAssertEqual(try post(base, "/bulk/retry", form + [("csrf", "1.forged")]).status, 403)
        XCTAssertEqual(try post(base, "/bulk/retry", form + [("csrf", token)], headers: [HTTPHeader("Sec-Fetch-Site", "cross-site")]).status, 403)
        XCTAssertEqual(try post(base, "/bulk/retry", [("csrf", token), ("state", "needs_attention")]).status, 400, "nothing selected")
        XCTAssertEqual(try post(base, "/bulk/retry", form + [("csrf", token), ("state", "finished")]).status, 200,
                       "the first state named counts: needs_attention")
        XCTAssertEqual(try post(base, "/bulk/retry", [("csrf", token), ("id.0", "o-hook_refused-2"), ("confirm", "yes"), ("note", "x"),
                                                      ("state", "finished")]).status, 400, "only needs_attention or rejected lists")
        let tooMany = (0...BulkRetryPage.limit).map { ("id.\($0)", "o-\($0)") }
        XCTAssertEqual(try post(base, "/bulk/retry", tooMany + [("csrf", token), ("state", "needs_attention")]).status, 413)
        XCTAssertEqual(try engine.ledger.orderRecord("o-hook_refused-1")?.order.state, .pending, "the one allowed post retried it")
        XCTAssertEqual(try engine.ledger.orderRecord("o-hook_refused-2")?.order.state, .needsAttention)
        // An id that is a script, sent back in the form, is shown as text and names no order.
        let hostile = "<script>alert(1)</script>"
        let page = text(try post(base, "/bulk/retry", [("csrf", token), ("state", "needs_attention"), ("id.0", HTML.pathSegment(hostile))]))
        XCTAssertFalse(page.contains(hostile))
        XCTAssertTrue(page.contains("&lt;script&gt;alert(1)&lt;/script&gt;"))
        let skipped = text(try post(base, "/bulk/retry", [("csrf", token), ("id.0", HTML.pathSegment(hostile)), ("confirm", "yes"),
                                                          ("note", "x"), ("state", "needs_attention")]))
        XCTAssertTrue(skipped.contains("retried 0 orders"), skipped)
        XCTAssertTrue(skipped.contains("id=\"skipped-orders\""))
    }

    /// Bulk retry is an admin's: a support user's list has no boxes, their POST is 403 and
    /// audited as refused; an admin's retry leaves an audit row per order, naming them.
    func testBulkRetry_isAnAdmins_andEveryOrderItRetriesIsInTheAuditLog_onBothEngines() throws {
        try onEachEngine { engine in
            try setAside(engine, 2, reason: "hook_refused")
            let users = WebUsers(hashes: ["sam": WebPasswordHash.make("pw", iterations: 1000),
                                          "ann": WebPasswordHash.make("pw2", iterations: 1000)],
                                 roles: ["sam": .support, "ann": .admin])
            let base = try start(engine.ledger, actions: true, users: users)
            let sam = [Self.basic("sam", "pw")], ann = [Self.basic("ann", "pw2")]
            let samList = text(try get(base, "/orders?state=needs_attention", headers: sam))
            XCTAssertFalse(samList.contains("/bulk/retry"), "no bulk form for a support user: \(engine.name)")
            let samToken = try XCTUnwrap(csrf(text(try get(base, "/orders/o-hook_refused-1", headers: sam))), engine.name)
            let form = [("state", "needs_attention"), ("id.0", "o-hook_refused-1"), ("id.1", "o-hook_refused-2"), ("confirm", "yes"),
                        ("note", "INC-3")]
            XCTAssertEqual(try post(base, "/bulk/retry", form + [("csrf", samToken)], headers: sam).status, 403, engine.name)
            XCTAssertEqual(try engine.ledger.orderRecord("o-hook_refused-1")?.order.state, .needsAttention, engine.name)
            let refused = try engine.ledger.auditEntries(actor: "sam").filter { $0.action != "sign_in" }
            XCTAssertEqual(refused.map(\.action), ["retry_bulk"], engine.name)
            XCTAssertEqual(refused.first?.outcome, .refused, engine.name)
            let annToken = try XCTUnwrap(csrf(text(try get(base, "/orders?state=needs_attention", headers: ann))), engine.name)
            XCTAssertTrue(text(try post(base, "/bulk/retry", form + [("csrf", annToken)], headers: ann)).contains("retried 2 orders"),
                          engine.name)
            let rows = try engine.ledger.auditEntries(actor: "ann").filter { $0.action == "retry" }
            XCTAssertEqual(Set(rows.map(\.subject)), ["o-hook_refused-1", "o-hook_refused-2"], engine.name)
            XCTAssertTrue(rows.allSatisfy { $0.channel == .web && $0.role == .admin && $0.detail.hasPrefix("INC-3") }, engine.name)
        }
    }

    private func listed(_ page: String) -> [String] {
        guard let table = page.range(of: "id=\"list-orders\"") else { return [] }
        return page[table.upperBound...].components(separatedBy: "<td><a href=\"/orders/").dropFirst()
            .map { String($0.prefix { $0 != "\"" }) }
    }

    private func nextLink(_ page: String) -> String? {
        guard let start = page.range(of: "id=\"next-page\" href=\""), let end = page[start.upperBound...].firstIndex(of: "\"") else { return nil }
        return String(page[start.upperBound..<end]).replacingOccurrences(of: "&amp;", with: "&")
    }

    private func csrf(_ page: String) -> String? {
        guard let start = page.range(of: "name=\"csrf\" value=\""), let end = page[start.upperBound...].firstIndex(of: "\"") else { return nil }
        return String(page[start.upperBound..<end])
    }
}
