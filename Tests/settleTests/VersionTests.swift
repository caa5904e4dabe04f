import XCTest

final class VersionTests: XCTestCase {
    func testVersion_printsVersionAndExitsZero() throws {
        let result = try SettleBinary.run(["--version"])
        XCTAssertEqual(result.status, 0)
        XCTAssertTrue(result.stdout.hasPrefix("settle "), result.stdout)
    }
}
