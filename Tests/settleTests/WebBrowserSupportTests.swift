import Foundation
import SettleBase
import SettleLedger
import XCTest

/// Issue 36 in a real browser (headless chromium): a person lists the orders of a reason,
/// retries two of them after confirming the count, opens a customer's page from an order, and
/// sees the banner while settle needs a person.
final class WebBrowserSupportTests: WebEndToEndTestCase {
    /// o-1..o-3 needs_attention as hook_refused for u-42, o-4 finished for u-42.
    func seed() throws {
        for id in ["o-1", "o-2", "o-3", "o-4"] { try enqueue(id, user: "u-42", receipt: world.receipt(id)) }
        let database = try SQLiteDatabase(path: world.ledgerPath, mode: .readWrite)
        defer { try? database.close() }
        try database.execute("""
            UPDATE orders SET state = 'needs_attention', reason = 'hook_refused', last_error = 'exit 65'
                WHERE order_id IN ('o-1', 'o-2', 'o-3');
            UPDATE orders SET state = 'finished', finished_at = updated_at, verified_transaction_id = '2000000000000004',
                original_transaction_id = '2000000000000004', environment = 'Production', quantity = 1 WHERE order_id = 'o-4';
            """)
    }

    func browser() throws -> WebDriver {
        do {
            return try WebDriver(folder: world.folder)
        } catch {
            XCTFail("\(error)")
            throw error
        }
    }

    func testAPerson_listsAReason_retriesTwoAfterConfirmingTheCount_andOpensTheCustomer() throws {
        try seed()
        try world.writeConfig(overrides: [("web", .object([("actions", .bool(true))]))])
        let (_, base) = try startWeb()
        let driver = try browser()
        defer { driver.quit() }

        try driver.open(base + "/")
        try driver.clickAndWaitForNextPage("#attention a.list-link")
        XCTAssertEqual(try driver.title, "Orders: needs_attention · hook_refused · settle")
        XCTAssertEqual(try driver.text("#list-count"), "3 orders")
        try driver.click("#list-orders input[aria-label='select o-1']")
        try driver.click("#list-orders input[aria-label='select o-3']")
        try driver.clickAndWaitForNextPage("#retry-selected")
        XCTAssertEqual(try driver.title, "Retry 2 orders? · settle")
        XCTAssertTrue(try driver.text("#confirm-count").hasPrefix("Retry 2 orders (needs_attention as hook_refused)?"))
        try driver.type("#confirm-form input[name=note]", "INC-4: hook fixed")
        try driver.clickAndWaitForNextPage("#confirm-retry")
        XCTAssertEqual(try driver.text("#outcome"), "retried 2 orders: pending, due now")
        XCTAssertEqual(try state("o-1"), "pending")
        XCTAssertEqual(try state("o-2"), "needs_attention", "not ticked, not retried")
        XCTAssertEqual(try state("o-3"), "pending")
        XCTAssertEqual(try history("o-1").last?["detail"], .string("by local via web: INC-4: hook fixed"))

        try driver.clickAndWaitForNextPage("#retried a[href='/orders/o-1']")
        try driver.clickAndWaitForNextPage("#customer-link a")
        XCTAssertEqual(try driver.title, "Customer u-42 · settle")
        XCTAssertTrue(try driver.text("#customer-summary").hasPrefix("4 orders"))
        XCTAssertTrue(try driver.text("#facts-o-4").contains("bought it; holds it now"))
        XCTAssertTrue(try driver.text("#facts-o-4").contains("\(world.coins) × 1 (grant {\"coins\":100} per the configuration)"))
    }

    func testTheBanner_isOnEveryPage_whileSettleNeedsAPerson() throws {
        try seed()
        let (_, base) = try startWeb()
        let driver = try browser()
        defer { driver.quit() }
        // No daemon has ever run on this ledger: that is a person's to fix.
        for path in ["/", "/orders?state=needs_attention", "/users/u-42", "/orders/o-4"] {
            try driver.open(base + path)
            XCTAssertTrue(try driver.text("#health-banner").contains("daemon: not running (settle run)"), path)
        }
    }
}
