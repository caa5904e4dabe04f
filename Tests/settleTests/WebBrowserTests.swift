import Foundation
import SettleBase
import SettleLedger
import XCTest

/// The console in a real browser (headless Debian chromium through chromedriver): what a
/// person sees on the overview, searching an order, on its page, and after an action.
final class WebBrowserTests: WebEndToEndTestCase {
    static let hostile = "<script>document.title='pwned'</script>"

    /// o-1 (waiting for its first pass), o-stuck (needs_attention, hook_refused), and an order
    /// whose id is a script.
    func seed() throws {
        try enqueue("o-1", user: "u-42", receipt: world.receipt("o-1"))
        try enqueue("o-stuck", user: "u-42", receipt: world.receipt("o-stuck"))
        let hostile = try settle(["enqueue", "--order", Self.hostile, "--user", "u-7", "--product", world.coins, "--receipt-file", "-"],
                                 stdin: Data(world.receipt("hostile").utf8))
        XCTAssertEqual(hostile.status, 0, hostile.stderr)
        let database = try SQLiteDatabase(path: world.ledgerPath, mode: .readWrite)
        defer { try? database.close() }
        try database.execute("UPDATE orders SET state = 'needs_attention', reason = 'hook_refused', last_error = 'exit 65' WHERE order_id = 'o-stuck'")
    }

    func browser() throws -> WebDriver {
        do {
            return try WebDriver(folder: world.folder)
        } catch {
            XCTFail("\(error)")
            throw error
        }
    }

    func testAPerson_loadsTheOverview_searchesAnOrder_andReadsItsStory() throws {
        try seed()
        let (_, base) = try startWeb()
        let driver = try browser()
        defer { driver.quit() }

        try driver.open(base + "/")
        XCTAssertEqual(try driver.title, "Overview · settle")
        XCTAssertTrue(try driver.text("#attention").contains("hook_refused"), "the stuck order's reason is on the overview")
        XCTAssertTrue(try driver.text("#attention").contains("your delivery hook refused the grant"))
        XCTAssertTrue(try driver.text("#counts").contains("needs_attention"))
        XCTAssertTrue(try driver.text("#chart-totals").contains("settled 0"))

        try driver.type("header input[name=q]", "u-42")
        try driver.clickAndWaitForNextPage("header button[type=submit]")
        let searched = try driver.currentURL
        XCTAssertTrue(searched.hasSuffix("/search?q=u-42"), searched)
        let results = try driver.text("#result-orders")
        XCTAssertTrue(results.contains("o-1") && results.contains("o-stuck"), results)

        try driver.clickAndWaitForNextPage("#result-orders a[href='/orders/o-stuck']")
        XCTAssertEqual(try driver.title, "Order o-stuck · settle")
        let verdict = try driver.text("#verdict-facts")
        XCTAssertTrue(verdict.contains("delivered\nno") || verdict.contains("delivered no"), verdict)
        XCTAssertTrue(verdict.contains("your delivery hook refused the grant"), verdict)
        XCTAssertTrue(try driver.text("#history-table").contains("enqueued"))
        XCTAssertTrue(try driver.text("#who").contains("read-only"))
    }

    func testAScriptInAnOrderId_isShownAsText_andNeverRuns() throws {
        try seed()
        let (_, base) = try startWeb()
        let driver = try browser()
        defer { driver.quit() }
        try driver.open(base + "/search?q=u-7")
        XCTAssertEqual(try driver.title, "Search · settle", "the script did not run")
        XCTAssertTrue(try driver.text("#result-orders").contains(Self.hostile), "the id is shown as the text it is")
        try driver.clickAndWaitForNextPage("#result-orders a")
        XCTAssertEqual(try driver.text("h1"), "Order " + Self.hostile)
        XCTAssertEqual(try driver.title, "Order \(Self.hostile) · settle")
    }

    func testWithActionsOn_aPersonRetriesAnOrder_andItsHistorySaysWho() throws {
        try seed()
        try world.writeConfig(overrides: [("web", .object([("actions", .bool(true))]))])
        let (_, base) = try startWeb()
        let driver = try browser()
        defer { driver.quit() }
        try driver.open(base + "/orders/o-stuck")
        try driver.type("#retry-form input[name=note]", "ticket 9")
        try driver.clickAndWaitForNextPage("#retry-form button")
        let after = try driver.currentURL
        XCTAssertTrue(after.hasSuffix("/orders/o-stuck?done=retried"), after)
        XCTAssertEqual(try driver.text("#outcome"), "retried: pending, due now")
        XCTAssertTrue(try driver.text("#history-table").contains("by local via web: ticket 9"))
        XCTAssertEqual(try state("o-stuck"), "pending")
    }

}
