import Foundation
import SettleTesting
import XCTest
@testable import SettleApp
@testable import SettleBase
@testable import SettleModel
@testable import SettleLedger

/// Issue 36: the customer view (`settle status --user U`, `/users/U`, `/api/users/U`) survives
/// transfers: the orders U bought, holds, gave away and received, each with its goods as the
/// hook is told them, a subscription's state, its refund and the support actions on it.
final class CustomerViewTests: WebConsoleTestCase {
    /// u-1: o-coins (finished), o-refunded (refunded), o-gave (transferred to u-2), o-got (from u-3),
    /// o-sub (a subscription active for a day); u-9 owns o-other.
    private func seed(_ engine: Engine) throws {
        let now = world.time.unixSeconds
        for (id, user) in [("o-coins", "u-1"), ("o-refunded", "u-1"), ("o-gave", "u-2"), ("o-got", "u-1"), ("o-sub", "u-1"),
                           ("o-other", "u-9")] {
            try enqueue(engine.ledger, id, user: user, transaction: "t-\(id)")
        }
        var sql = ""
        for id in ["o-coins", "o-refunded", "o-gave", "o-got", "o-sub", "o-other"] {
            sql += """
                UPDATE orders SET state = 'finished', finished_at = \(now - 600), updated_at = \(now - 600), attempts = 1,
                    verified_transaction_id = 't-\(id)', original_transaction_id = 't-\(id)', environment = 'Production', quantity = 1
                    WHERE order_id = '\(id)';

                """
        }
        sql += """
            UPDATE orders SET refunded_at = \(now - 300), refund_kind = 'REFUND' WHERE order_id = 'o-refunded';
            UPDATE orders SET expires_date_ms = \((now + 86_400) * 1000) WHERE order_id = 'o-sub';
            INSERT INTO support_actions(order_id, kind, number, state, step, from_user, to_user, note, requested_by, requested_at,
                                        next_attempt_at, updated_at, done_at)
                VALUES ('o-gave', 'transfer', 1, 'done', 'done', 'u-1', 'u-2', 'T-1', 'alice via web', \(now - 500), \(now - 500),
                        \(now - 400), \(now - 400)),
                       ('o-got', 'transfer', 1, 'done', 'done', 'u-3', 'u-1', 'T-2', 'bob via cli', \(now - 500), \(now - 500),
                        \(now - 400), \(now - 400));
            """
        try engine.execute(sql)
    }

    func testTheCustomersOrders_boughtHeldGivenAndReceived_withGoodsSubscriptionAndRefund_onBothEngines() throws {
        try onEachEngine { engine in
            try seed(engine)
            let now = world.time.unixSeconds
            let report = try CustomerReport.read(engine.ledger, userId: "u-1", configuration: try world.configuration(), now: now)
            let byId = Dictionary(uniqueKeysWithValues: report.entries.map { ($0.order.orderId, $0) })
            XCTAssertEqual(Set(byId.keys), ["o-coins", "o-refunded", "o-gave", "o-got", "o-sub"], engine.name)
            XCTAssertEqual(byId["o-coins"]?.relation, "bought it; holds it now", engine.name)
            XCTAssertEqual(byId["o-gave"]?.relation, "bought it; transferred it to u-2; holder now: u-2", engine.name)
            XCTAssertEqual(byId["o-got"]?.relation, "received it from u-3 by transfer; holds it now", engine.name)
            XCTAssertEqual(byId["o-coins"]?.goods, "\(world.coins) × 1 (grant {\"coins\":100} per the configuration)", engine.name)
            XCTAssertEqual(byId["o-refunded"]?.refund?.hasPrefix("REFUND at "), true, engine.name)
            XCTAssertEqual(byId["o-sub"]?.subscription, "active until \(Timestamp.relative(now + 86_400, now: now))", engine.name)
            XCTAssertNil(byId["o-coins"]?.subscription, engine.name)
            XCTAssertEqual(byId["o-gave"]?.supportActions.count, 1, engine.name)

            let text = report.text(now: now)
            XCTAssertTrue(text.hasPrefix("customer u-1: 5 orders\n"), text)
            XCTAssertTrue(text.contains("    support: transfer 1 from u-1 to u-2: done "), text)
            // The console's page and its JSON tell the same.
            let base = try start(engine.ledger)
            let page = self.text(try get(base, "/users/u-1"))
            XCTAssertTrue(page.contains("<title>Customer u-1 · settle</title>"), engine.name)
            XCTAssertTrue(page.contains("<dt>how</dt><dd>bought it; transferred it to u-2; holder now: u-2</dd>"), engine.name)
            XCTAssertTrue(page.contains("<dt>subscription</dt><dd>active until "), engine.name)
            XCTAssertFalse(page.contains("o-other"), "another customer's order: \(engine.name)")
            let json = try JSONValue.parse(self.text(try get(base, "/api/users/u-1")))
            XCTAssertEqual(json["orders_total"], .number(5), engine.name)
            XCTAssertEqual(try get(base, "/users/u-404").status, 404, engine.name)
            // The order page links its customer.
            XCTAssertTrue(self.text(try get(base, "/orders/o-coins")).contains("customer: <a href=\"/users/u-1\">u-1</a>"), engine.name)
        }
    }

    func testAHostileUserId_isText_andItsLinkNamesThatUser() throws {
        let engine = try sqlite()
        let hostile = "<img src=x onerror=alert(1)>/../u"
        try enqueue(engine.ledger, "o-h", user: hostile, transaction: "t-h")
        let base = try start(engine.ledger)
        let page = text(try get(base, "/users/\(HTML.pathSegment(hostile))"))
        XCTAssertFalse(page.contains("<img"), page)
        XCTAssertTrue(page.contains("&lt;img src=x onerror=alert(1)&gt;/../u"))
        XCTAssertTrue(text(try get(base, "/orders/o-h")).contains("href=\"/users/\(HTML.pathSegment(hostile))\""))
    }
}
