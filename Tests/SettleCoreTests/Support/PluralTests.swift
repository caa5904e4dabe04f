import XCTest
import SettleBase

/// Counts read as people say them: "1 order", "2 orders" (issue 36: "1 orders" in outputs).
final class PluralTests: XCTestCase {
    func testOne_isSingular_andTwoOrNone_arePlural() {
        XCTAssertEqual(Plural.count(1, "order"), "1 order")
        XCTAssertEqual(Plural.count(2, "order"), "2 orders")
        XCTAssertEqual(Plural.count(0, "order"), "0 orders")
        XCTAssertEqual(Plural.count(Int64(1), "history row"), "1 history row")
        XCTAssertEqual(Plural.count(2, "entry", "entries"), "2 entries")
        XCTAssertEqual(Plural.count(1, "entry", "entries"), "1 entry")
        XCTAssertEqual(Plural.verb(1, "waits", "wait"), "waits")
        XCTAssertEqual(Plural.verb(2, "waits", "wait"), "wait")
    }
}
