import Foundation
import SettleTesting
import XCTest
@testable import SettleApp
@testable import SettleBase
@testable import SettleModel
@testable import SettleLedger
@testable import SettleEngine

/// Issue 37: a customer's refunds in `settle status --user U` (text and JSON), `/users/U`,
/// `/api/users/U`; the customers with ≥ `refunds.flag_after` refunds on the overview and in
/// `settle status`; the refund rate in the metrics. A user id holding HTML and SQL stays text.
final class RefundHistoryViewTests: WebConsoleTestCase {
    /// Quotes, a comment, a tag: what a hostile app could put in a user id.
    private let hostile = "u'; DROP TABLE orders; --<script>alert(1)</script>"

    /// The hostile user: three refunds and a Family Sharing revoke; u-calm: one refund.
    private func seed(_ engine: Engine) throws {
        let now = world.time.unixSeconds
        let orders = [("r-1", hostile), ("r-2", hostile), ("r-3", hostile), ("r-family", hostile), ("r-kept", hostile),
                      ("c-1", "u-calm")]
        for (id, user) in orders { try enqueue(engine.ledger, id, user: user, transaction: "t-\(id)") }
        var sql = ""
        for (id, _) in orders {
            let kind = id == "r-family" ? "REVOKE" : "REFUND"
            let refunded = id == "r-kept" ? "" : ", refunded_at = \(now - 120), refund_kind = '\(kind)'"
            sql += """
                UPDATE orders SET state = 'rejected', reason = 'refunded',
                    updated_at = \(now - 60)\(refunded) WHERE order_id = '\(id)';

                """
        }
        try engine.execute(sql)
    }

    func testAHostileCustomersRefunds_areCountedAndShownAsText_everywhere_onBothEngines() throws {
        try onEachEngine { engine in
            try seed(engine)
            let now = world.time.unixSeconds
            let configuration = try world.configuration()
            let report = try CustomerReport.read(engine.ledger, userId: hostile, configuration: configuration, now: now)
            XCTAssertEqual(report.refunds?.count, 3, "\(engine.name): the family revoke is not theirs")
            let customerText = report.text(now: now)
            XCTAssertTrue(customerText.contains("  refunds in 90 days: 3 (app_store 3): "), customerText)
            XCTAssertEqual(report.json["refunds_90d"]?["count"], .number(3), engine.name)
            let calm = try CustomerReport.read(engine.ledger, userId: "u-calm", configuration: configuration, now: now)
            XCTAssertEqual(calm.refunds?.count, 1, engine.name)

            let status = try StatusReport.read(engine.ledger, filter: OrderFilter(limit: 5),
                                               configuration: configuration, time: world.time, lookups: .localOnly)
            let statusText = status.text(now: now)
            XCTAssertTrue(statusText.contains("refunds: 1 customer with >= 3 refunds in 90 days (\(hostile) 3)\n"),
                          statusText)
            XCTAssertEqual(status.json["refunders"]?["customers_total"], .number(1), engine.name)
            let first = status.json["refunders"]?["customers"]?.arrayValue?.first
            XCTAssertEqual(first?["user_id"], .string(hostile), engine.name)
            let filtered = try StatusReport.read(engine.ledger, filter: OrderFilter(userId: "u-calm", limit: 5),
                                                 configuration: configuration, time: world.time, lookups: .localOnly)
            XCTAssertNil(filtered.refunders, "\(engine.name): one customer's status names no other customer")

            let base = try start(engine.ledger)
            let page = text(try get(base, "/users/\(HTML.pathSegment(hostile))"))
            XCTAssertFalse(page.contains("<script>alert"), page)
            XCTAssertTrue(page.contains("id=\"refunds-90d\"><strong class=\"bad\">3</strong>"), page)
            let table = try XCTUnwrap(page.components(separatedBy: "id=\"refund-orders\"").last?
                .components(separatedBy: "</table>").first)
            XCTAssertTrue(table.contains("/orders/r-3") && table.contains("/orders/r-1"), table)
            XCTAssertFalse(table.contains("r-family"), "\(engine.name): a family revoke is not listed as theirs")
            let api = try JSONValue.parse(text(try get(base, "/api/users/\(HTML.pathSegment(hostile))")))
            XCTAssertEqual(api["refunds_90d"]?["count"], .number(3), engine.name)
            let overview = text(try get(base, "/"))
            XCTAssertTrue(overview.contains("Customers with ≥ 3 refunds in 90 days"), overview)
            XCTAssertTrue(overview.contains("href=\"/users/\(HTML.escape(HTML.pathSegment(hostile)))\""), overview)
            XCTAssertFalse(overview.contains("<script>alert"), "\(engine.name): the id is text")
            let card = try XCTUnwrap(overview.components(separatedBy: "id=\"refunders-table\"").last?
                .components(separatedBy: "</table>").first)
            XCTAssertTrue(card.contains("<td class=\"num\">3</td>"), card)
            XCTAssertFalse(card.contains("/users/u-calm"), "\(engine.name): one refund is not flagged")
            // The ledger is whole: the id was a value, never SQL.
            XCTAssertEqual(try engine.ledger.summary(OrderFilter(limit: 0)).counts[.rejected], 6, engine.name)

            let metrics = Metrics().render(summary: try engine.ledger.summary(OrderFilter(limit: 0)), bundleId: "b",
                                           now: now)
            XCTAssertTrue(metrics.contains("settle_refunds_last_hour{bundle_id=\"b\",store=\"app_store\"} 4\n"),
                          metrics)
            XCTAssertTrue(metrics.contains("settle_refunds_last_hour{bundle_id=\"b\",store=\"bogus\"} 0\n"), metrics)
        }
    }
}
