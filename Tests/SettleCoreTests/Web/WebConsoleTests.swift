import Foundation
import SettleTesting
import XCTest
@testable import SettleApp
@testable import SettleBase
@testable import SettleModel
@testable import SettleLedger

/// The console's pages over real HTTP: each route, the headers that make them safe, escaping,
/// no secret anywhere, and /api being exactly `settle status --json`.
final class WebConsoleTests: WebConsoleTestCase {
    static let csp = "default-src 'none'; style-src 'self'; img-src 'self'; form-action 'self'; frame-ancestors 'none'"

    func pages(_ seed: WebSeed) -> [String] {
        ["/", "/search", "/search?q=u-1", "/search?q=100", "/orders/o-finished", "/orders/\(HTML.pathSegment(WebSeed.hostile))",
         "/orders/o-play", "/orders/o-signed", "/orders/o-unclaimed", "/notifications/\(WebSeed.notification)", "/static/settle.css",
         "/api/status", "/api/orders/o-finished", "/api/orders/o-play", "/api/orders/o-signed", "/api/notifications/\(WebSeed.notification)"]
    }

    func testEveryRoute_answers200_withTheHeadersThatKeepItSafe() throws {
        let engine = try sqlite()
        let seed = try WebSeed(self, engine)
        let base = try start(engine.ledger)
        for path in pages(seed) {
            let response = try get(base, path)
            XCTAssertEqual(response.status, 200, path)
            XCTAssertEqual(response.header("Content-Security-Policy"), Self.csp, path)
            XCTAssertEqual(response.header("X-Content-Type-Options"), "nosniff", path)
            XCTAssertEqual(response.header("Referrer-Policy"), "no-referrer", path)
            XCTAssertEqual(response.header("Cache-Control"), "no-store", path)
        }
        XCTAssertEqual(try get(base, "/static/settle.css").header("Content-Type"), "text/css; charset=utf-8")
        XCTAssertEqual(try get(base, "/api/status").header("Content-Type"), "application/json")
        XCTAssertEqual(try get(base, "/orders/o-nothing").status, 404)
        XCTAssertEqual(try get(base, "/notifications/nothing").status, 404)
        XCTAssertEqual(try get(base, "/api/orders/o-nothing").status, 404)
        XCTAssertEqual(try get(base, "/elsewhere").status, 404)
        XCTAssertEqual(try get(base, "/api/status?state=lost").status, 400)
        XCTAssertEqual(try client.send(HTTPRequest(method: "DELETE", url: base + "/orders/o-finished")).status, 405)
    }

    func testNoPage_showsASecret_aPurchaseToken_aReceipt_orASignedPayload() throws {
        let engine = try sqlite()
        let seed = try WebSeed(self, engine)
        let base = try start(engine.ledger)
        for path in pages(seed) {
            let body = text(try get(base, path))
            for secret in seed.secrets { XCTAssertFalse(body.contains(secret), "\(path) shows a secret") }
        }
        // The token's fingerprint is what support matches on.
        XCTAssertTrue(text(try get(base, "/orders/o-play")).contains(PurchaseToken(WebSeed.token)!.fingerprint))
    }

    func testAScriptInAnOrderId_orAHookOutput_rendersAsText_onEveryPage() throws {
        let engine = try sqlite()
        let seed = try WebSeed(self, engine)
        let base = try start(engine.ledger)
        for path in pages(seed) where !path.hasPrefix("/api") && !path.hasPrefix("/static") {
            let body = text(try get(base, path))
            XCTAssertFalse(body.lowercased().contains("<script"), "\(path) carries a script element")
            XCTAssertFalse(body.contains("<img"), path)
            XCTAssertFalse(body.contains("<b>"), path)
        }
        let order = text(try get(base, "/orders/\(HTML.pathSegment(WebSeed.hostile))"))
        XCTAssertTrue(order.contains("&lt;script&gt;alert(&quot;order&quot;)&lt;/script&gt;"), "the id is shown as text")
        XCTAssertTrue(order.contains("hook said: &lt;script&gt;document.title=&#39;pwned&#39;&lt;/script&gt;"), "the hook's words are shown as text")
        XCTAssertTrue(order.contains("&lt;img src=x onerror=alert(1)&gt;"))
        XCTAssertTrue(text(try get(base, "/")).contains("href=\"/orders/\(HTML.pathSegment(WebSeed.hostile))\""), "the overview links it, encoded")
    }

    func testOverview_countsByStore_attentionByReasonWithWhatToDo_refundClocks_andTheChart_onBothEngines() throws {
        try onEachEngine { engine in
            _ = try WebSeed(self, engine)
            let base = try start(engine.ledger)
            let page = text(try get(base, "/"))
            XCTAssertTrue(page.contains("<th class=\"num\">google_play</th>"), engine.name)
            XCTAssertTrue(page.contains("<strong>hook_refused</strong> <span class=\"state needs_attention\">1</span>"), engine.name)
            XCTAssertTrue(page.contains(Verdict.explanation("hook_refused")), engine.name)
            XCTAssertTrue(page.contains("<strong>unclaimed_purchase</strong>"), engine.name)
            XCTAssertTrue(page.contains("what to do: find the buyer, then settle assign o-unclaimed --user"), engine.name)
            XCTAssertTrue(page.contains("id=\"deadlines\""), "o-play's refund clock: \(engine.name)")
            XCTAssertTrue(page.contains("Google refunds it in"), engine.name)
            XCTAssertTrue(page.contains("<svg class=\"chart\""), engine.name)
            // o-finished (an hour ago) recovered; o-rejected (two hours ago) settled only.
            XCTAssertTrue(page.contains("settled 2<span class=\"swatch recovered\"></span>recovered 1"), engine.name)
            XCTAssertTrue(page.contains("newest notification</dt><dd>"), engine.name)
        }
    }

    func testOrderPage_isTheStatusStory_verdictHistoryAndNotifications() throws {
        let engine = try sqlite()
        _ = try WebSeed(self, engine)
        let base = try start(engine.ledger)
        let page = text(try get(base, "/orders/o-finished"))
        let verdict = Verdict(try XCTUnwrap(engine.ledger.orderRecord("o-finished")).order, now: world.time.unixSeconds)
        XCTAssertTrue(page.contains("<dt>delivered</dt><dd>\(HTML.escape(verdict.delivered))</dd>"))
        XCTAssertTrue(page.contains("<td>enqueue</td><td>enqueued</td>"))
        XCTAssertTrue(page.contains("href=\"/notifications/\(WebSeed.notification)\""))
        let note = text(try get(base, "/notifications/\(WebSeed.notification)"))
        XCTAssertTrue(note.contains("<dt>type</dt><dd>REFUND</dd>"))
        XCTAssertTrue(note.contains("refund of &lt;b&gt;100&lt;/b&gt;"))
        XCTAssertTrue(note.contains("href=\"/orders/o-finished\""))
        XCTAssertFalse(page.contains("id=\"actions\""), "a read-only console offers no action")
    }

    func testAPI_isExactlyTheJSONOfStatus() throws {
        let engine = try sqlite()
        _ = try WebSeed(self, engine)
        let base = try start(engine.ledger)
        let configuration = try world.configuration()
        XCTAssertEqual(text(try get(base, "/api/status")),
                       try StatusReport.read(engine.ledger, filter: OrderFilter(limit: 50), configuration: configuration, time: world.time)
                           .json.serialized(pretty: true) + "\n")
        XCTAssertEqual(text(try get(base, "/api/status?user=u-1&limit=1")),
                       try StatusReport.read(engine.ledger, filter: OrderFilter(userId: "u-1", limit: 1), configuration: configuration,
                                             time: world.time).json.serialized(pretty: true) + "\n")
        XCTAssertEqual(text(try get(base, "/api/orders/o-finished")),
                       try XCTUnwrap(OrderReport.read(engine.ledger, orderId: "o-finished")).json(now: world.time.unixSeconds).serialized(pretty: true) + "\n")
        XCTAssertEqual(text(try get(base, "/api/notifications/\(WebSeed.notification)")),
                       StatusView.json(try XCTUnwrap(engine.ledger.notification(uuid: WebSeed.notification))).serialized(pretty: true) + "\n")
    }

    func testSearch_byOrderUserAndTransaction_andByPurchaseTokenOnlyThroughAPost() throws {
        let engine = try sqlite()
        _ = try WebSeed(self, engine)
        let base = try start(engine.ledger)
        func found(_ body: String) -> [String] {
            body.components(separatedBy: "<tr><td><a href=\"/orders/").dropFirst().map { String($0.prefix { $0 != "\"" }) }
        }
        XCTAssertEqual(found(text(try get(base, "/search?q=o-rejected"))), ["o-rejected"])
        XCTAssertEqual(Set(found(text(try get(base, "/search?q=u-1")))), ["o-finished", "o-rejected"])
        XCTAssertEqual(found(text(try get(base, "/search?q=102"))), ["o-rejected"])
        XCTAssertEqual(found(text(try get(base, "/search?q=GPA.1234-5678-9012-34567"))), ["o-play"], "a Google order id, matched locally")
        XCTAssertEqual(found(text(try get(base, "/search?q=\(WebSeed.token)"))), [], "a token in a URL is not searched")
        let byToken = try post(base, "/search", [("purchase_token", WebSeed.token)])
        XCTAssertEqual(byToken.status, 200)
        XCTAssertEqual(found(text(byToken)), ["o-play"])
        XCTAssertFalse(text(byToken).contains(WebSeed.token), "the token is not echoed")
        XCTAssertEqual(try post(base, "/search", [("purchase_token", "")]).status, 400)
    }

    func testChartReads_onlyTheLastSevenDays_perHour_onBothEngines() throws {
        try onEachEngine { engine in
            let now = world.time.unixSeconds
            for (id, state, age) in [("a", "finished", 3600), ("b", "finished", 3700), ("c", "rejected", 3650), ("d", "finished", 8 * 86400)] {
                try enqueue(engine.ledger, id, transaction: "t-\(id)")
                try engine.execute("UPDATE orders SET state = '\(state)', updated_at = \(now - Int64(age))"
                                   + (state == "finished" ? ", finished_at = \(now - Int64(age)), verified_transaction_id = 't-\(id)'" : "") + " WHERE order_id = '\(id)'")
            }
            let hours = try engine.ledger.settlementsPerHour(since: now - 7 * 86400)
            XCTAssertEqual(hours.map(\.settled).reduce(0, +), 3, engine.name)
            XCTAssertEqual(hours.map(\.recovered).reduce(0, +), 2, engine.name)
            XCTAssertTrue(hours.allSatisfy { $0.hour % 3600 == 0 && $0.hour >= now - 7 * 86400 - 3600 }, engine.name)
            XCTAssertEqual(try engine.ledger.attentionByReason(), AttentionSummary(groups: [], read: 0, complete: true), engine.name)
            for id in ["n-1", "n-2", "n-3"] {
                try enqueue(engine.ledger, id, transaction: "t-\(id)")
                try engine.execute("UPDATE orders SET state = 'needs_attention', reason = '\(id == "n-2" ? "hook_refused" : "attempts_exhausted")', "
                                   + "updated_at = \(now - Int64(id.suffix(1))!) WHERE order_id = '\(id)'")
            }
            XCTAssertEqual(try engine.ledger.attentionByReason(examples: 1), AttentionSummary(groups: [
                AttentionGroup(reason: "attempts_exhausted", count: 2, orderIds: ["n-1"]),
                AttentionGroup(reason: "hook_refused", count: 1, orderIds: ["n-2"]),
            ], read: 3, complete: true), engine.name)
            XCTAssertEqual(try engine.ledger.attentionByReason(scan: 2).complete, false, "a bounded read says so: \(engine.name)")
        }
    }
}
