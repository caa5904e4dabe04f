import Foundation
import SettleApp
import XCTest

/// `settle demo` works on a fresh machine and leaves nothing behind (SPEC section 1).
final class DemoTests: EndToEndTestCase {
    func testDemo_exits0PrintsAStatusTableAndLeavesNoFolderBehind() throws {
        let tmp = world.folder + "/tmp"
        try FileManager.default.createDirectory(atPath: tmp, withIntermediateDirectories: false)
        let result = try settleWithoutConfig(["demo"], environment: ["TMPDIR": tmp], workingDirectory: tmp)
        XCTAssertEqual(result.status, 0, "stdout: \(result.stdout)\nstderr: \(result.stderr)")
        let table = lines(result.stdout)
        let header = try XCTUnwrap(table.first { $0.hasPrefix("ORDER") && $0.contains("STATE") }, "no status table:\n\(result.stdout)")
        XCTAssertTrue(header.contains("REASON"), header)
        XCTAssertTrue(table.contains { $0.hasPrefix("o-") && $0.contains(" finished ") }, "no finished order:\n\(result.stdout)")
        XCTAssertTrue(table.contains { $0.hasPrefix("o-") && $0.contains(" rejected ") }, "no rejected order:\n\(result.stdout)")
        XCTAssertTrue(result.stdout.contains("refunded"), result.stdout)
        XCTAssertTrue(result.stdout.contains("already_granted"), result.stdout)
        XCTAssertTrue(result.stdout.contains("pass 1: reconciled"), result.stdout)
        // Apple tells settle: a purchase nobody enqueued delivered, a refund revoked, a refund request answered.
        XCTAssertTrue(table.contains { $0.hasPrefix("origin") && $0.contains("apple_notification") }, result.stdout)
        XCTAssertTrue(result.stdout.contains("2000000300000001 apple-2000000300000001") || result.stdout.contains("idempotency_key\":\"2000000300000001"), result.stdout)
        XCTAssertTrue(table.contains("revoke:2000000100000001 o-1001 REFUND_PRORATED 50000"), "a prorated refund, half taken back\n\(result.stdout)")
        // Apple is told each delivered App Store transaction is finished.
        let finishLine = try XCTUnwrap(table.first { $0.hasPrefix("Finish Transaction told Apple") }, result.stdout)
        XCTAssertTrue(finishLine.contains("2000000100000001"), finishLine)
        XCTAssertTrue(result.stdout.contains("1 refund requests answered"), result.stdout)
        // A family member's shared purchase, bound to the member by their linked appTransactionId.
        XCTAssertTrue(result.stdout.contains("apple-2000000400000001: finished for user u-77 (the member, never the buyer)"), result.stdout)

        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: tmp), [],
                       "settle demo left files behind in $TMPDIR")
        XCTAssertNil(result.stdout.range(of: #"demo-shared-secret-\d+"#, options: .regularExpression),
                     "the demo printed its shared secret")
    }

    func testDemoKeep_keepsTheFolderItNames() throws {
        let tmp = world.folder + "/tmp"
        try FileManager.default.createDirectory(atPath: tmp, withIntermediateDirectories: false)
        let result = try settleWithoutConfig(["demo", "--keep"], environment: ["TMPDIR": tmp], workingDirectory: tmp)
        XCTAssertEqual(result.status, 0, result.stderr)
        let kept = try FileManager.default.contentsOfDirectory(atPath: tmp)
        XCTAssertEqual(kept.count, 1)
        XCTAssertTrue(kept.first?.hasPrefix("settle-demo-") ?? false)
        XCTAssertTrue(result.stdout.contains(tmp + "/" + (kept.first ?? "?")), result.stdout)
    }
}
