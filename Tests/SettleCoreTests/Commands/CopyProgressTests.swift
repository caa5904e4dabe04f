import Synchronization
import XCTest
@testable import SettleApp

/// The progress line of `settle ledger copy`: one line rewritten in place, cleared once at the end.
final class CopyProgressTests: XCTestCase {
    func testEachUpdateRewritesTheLine_namingTheTableAndItsRows_andTheEndClearsItOnce() {
        let written = Mutex<[String]>([])
        let progress = CopyProgress { text in written.withLock { $0.append(text) } }
        progress.update(table: "orders", rows: 10_000)
        progress.update(table: "orders", rows: 1_000_000)
        progress.update(table: "history", rows: 20_000)
        progress.end()
        progress.end()
        let lines = written.withLock { $0 }
        XCTAssertEqual(lines.count, 4, "\(lines)")
        XCTAssertTrue(lines.allSatisfy { $0.hasPrefix("\r\u{1B}[K") && !$0.contains("\n") }, "\(lines)")
        XCTAssertTrue(lines[1].contains("orders: 1,000,000 rows, ") && lines[1].hasSuffix(" a second"), lines[1])
        XCTAssertTrue(lines[2].contains("history: 20,000 rows"), lines[2])
        XCTAssertEqual(lines[3], "\r\u{1B}[K")
    }

    func testNothingShown_nothingCleared() {
        let written = Mutex<[String]>([])
        CopyProgress { text in written.withLock { $0.append(text) } }.end()
        XCTAssertEqual(written.withLock { $0 }, [])
    }
}
