import SettleTesting
import XCTest
@testable import SettleApp
@testable import SettleBase
@testable import SettleConfig

/// `refunds` (issue 37): absent, nobody is held and the overview flags from 3; each threshold a
/// whole number from 1 to 10,000, named when it is not; `flag_after` never above `hold_after`.
final class RefundsConfigurationTests: XCTestCase {
    var world: TestWorld!

    override func setUpWithError() throws { world = try TestWorld() }
    override func tearDown() { world = nil }

    private func load(_ refunds: JSONValue) throws -> Configuration {
        try world.writeConfig(overrides: [("refunds", refunds)])
        return try world.configuration()
    }

    private func error(_ refunds: JSONValue) -> String {
        do {
            _ = try load(refunds)
            return "no error"
        } catch {
            return "\(error)"
        }
    }

    func testAbsent_holdsNobody_andFlagsFromThree() throws {
        try world.writeConfig()
        let c = try world.configuration()
        XCTAssertNil(c.refunds.holdAfter)
        XCTAssertEqual(c.refunds.flagAfter, 3)
    }

    func testHoldAfter_alsoFlags_unlessFlagAfterSaysLower() throws {
        XCTAssertEqual(try load(.object([("hold_after", .number(5))])).refunds,
                       Configuration.Refunds(holdAfter: 5, flagAfter: 5))
        XCTAssertEqual(try load(.object([("hold_after", .number(5)), ("flag_after", .number(2))])).refunds,
                       Configuration.Refunds(holdAfter: 5, flagAfter: 2))
        XCTAssertEqual(try load(.object([("flag_after", .number(7))])).refunds,
                       Configuration.Refunds(holdAfter: nil, flagAfter: 7))
    }

    func testZeroNegativeHugeOrNotANumber_isAnErrorNamingTheKey() {
        let bads: [JSONValue] = [.number(0), .number(-1), .number(10_001), .number("99999999999999999999999"),
                                 .number(2.5), .string("3"), .bool(true)]
        for bad in bads {
            let message = error(.object([("hold_after", bad)]))
            XCTAssertTrue(message.contains("refunds.hold_after:"), "\(bad): \(message)")
        }
        let zero = error(.object([("flag_after", .number(0))]))
        XCTAssertTrue(zero.contains("refunds.flag_after: 0 is out of range (1...10000)"), zero)
        XCTAssertTrue(error(.string("yes")).contains("refunds"), error(.string("yes")))
    }

    func testFlagAfterOverHoldAfter_andAMistypedKey_areNamedTogether() {
        let message = error(.object([("hold_after", .number(2)), ("flag_after", .number(4)),
                                     ("hold_afterr", .number(1))]))
        XCTAssertTrue(message.contains("refunds.flag_after: 4 is over hold_after (2)"), message)
        XCTAssertTrue(message.contains("refunds.hold_afterr: unknown key"), message)
        let both = error(.object([("hold_after", .number(0)), ("holdafter", .number(1))]))
        XCTAssertTrue(both.contains("refunds.hold_after: 0 is out of range"), both)
        XCTAssertTrue(both.contains("refunds.holdafter: unknown key"), both)
    }
}
