import Foundation
import SettleTesting
import XCTest
@testable import SettleApp
@testable import SettleBase
@testable import SettleModel
@testable import SettleLedger

/// Issue 36: one verdict, built once, shown the same in `settle status ORDER`, its `--json`,
/// `/api/orders/ID` and the order page, naming what the order's row cannot: its store's open
/// breaker, the hook's last words.
final class VerdictEverywhereTests: WebConsoleTestCase {
    func testAnOpenBreaker_isTheVerdictOfAWaitingOrder_inTextJSONAPIAndPage_onBothEngines() throws {
        try onEachEngine { engine in
            _ = try WebSeed(self, engine)
            let now = world.time.unixSeconds
            try enqueue(engine.ledger, "o-waiting", user: "u-9", transaction: "190")
            try engine.execute("UPDATE orders SET attempts = 2, last_error = 'HTTP 503', next_attempt_at = \(now + 30) WHERE order_id = 'o-waiting'")
            try engine.ledger.saveBreaker(StoreBreaker(state: .open, consecutiveFailures: 5, cooldownSeconds: 120, retryAt: now + 60,
                                                       lastError: "HTTP 503 from buy.itunes.apple.com", lastErrorAt: now - 60),
                                          of: .ofUnnamedOrders)
            let report = try XCTUnwrap(OrderReport.read(engine.ledger, orderId: "o-waiting"))
            let verdict = report.verdict(now: now)
            let owner = Store.ofUnnamedOrders.owner
            XCTAssertEqual(verdict.why, "\(owner) unavailable since \(Timestamp.relative(now - 60, now: now)): HTTP 503 from "
                           + "buy.itunes.apple.com; settle uses no attempt of this order while \(owner) is not answering", engine.name)
            XCTAssertTrue(verdict.next?.hasPrefix("nothing: settle probes \(owner) at \(Timestamp.relative(now + 60, now: now))") == true,
                          engine.name)
            // The text.
            let text = report.text(now: now)
            for (label, value) in verdict.lines { XCTAssertTrue(text.contains("\(label):") && text.contains(value), "\(engine.name) \(label)") }
            // The JSON, and the API, which is exactly it.
            let json = report.json(now: now)
            guard case let .object(members) = json, case let .object(v)? = members.first(where: { $0.0 == "verdict" })?.1 else {
                return XCTFail("no verdict in the JSON: \(engine.name)")
            }
            XCTAssertEqual(v.map(\.0), verdict.lines.map(\.0), engine.name)
            XCTAssertEqual(v.map(\.1), verdict.lines.map { JSONValue.string($0.1) }, engine.name)
            let base = try start(engine.ledger)
            XCTAssertEqual(self.text(try get(base, "/api/orders/o-waiting")), json.serialized(pretty: true) + "\n", engine.name)
            // The page.
            let page = self.text(try get(base, "/orders/o-waiting"))
            XCTAssertTrue(page.contains("<dt>why</dt><dd>\(HTML.escape(verdict.why ?? ""))</dd>"), engine.name)
            XCTAssertTrue(page.contains("<dt>next</dt><dd>\(HTML.escape(verdict.next ?? ""))</dd>"), engine.name)
            // A closed breaker leaves the order's own story.
            try engine.ledger.saveBreaker(StoreBreaker(), of: .ofUnnamedOrders)
            let closed = try XCTUnwrap(OrderReport.read(engine.ledger, orderId: "o-waiting")).verdict(now: now)
            XCTAssertEqual(closed.why, "the last attempt failed (HTTP 503); settle retries by itself", engine.name)
        }
    }

    func testTheHooksLastWords_areInTheVerdictOfAnOrderItRefused() throws {
        let engine = try sqlite()
        _ = try WebSeed(self, engine)
        let now = world.time.unixSeconds
        try engine.execute("""
            UPDATE orders SET verified_transaction_id = '101', original_transaction_id = '101', environment = 'Production'
                WHERE order_id = '\(WebSeed.hostile.replacingOccurrences(of: "'", with: "''"))'
            """)
        let verdict = try XCTUnwrap(OrderReport.read(engine.ledger, orderId: WebSeed.hostile)).verdict(now: now)
        XCTAssertTrue(verdict.why?.hasSuffix("; the hook said: \"\(WebSeed.hookOutput)\"") == true, verdict.why ?? "")
        let page = text(try get(try start(engine.ledger), "/orders/\(HTML.pathSegment(WebSeed.hostile))"))
        XCTAssertFalse(page.contains(WebSeed.hookOutput), "escaped on the page")
    }
}
