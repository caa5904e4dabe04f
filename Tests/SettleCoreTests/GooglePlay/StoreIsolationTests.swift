import Foundation
import SettleTesting
import Synchronization
import XCTest
@testable import SettleBase
@testable import SettleModel
@testable import SettleLedger
@testable import SettleEngine
@testable import SettleGooglePlayModule

/// One store's slowness never holds the other store's orders (issue 32, item 21): each store has
/// its own share of the pass's workers. Google's answers are held open for as long as the test
/// needs (no clock, no sleep decides it); the App Store orders finish meanwhile.
extension GooglePlayReconcileTests {
    func testASlowGoogle_holdsOnlyItsOwnWorkers_andAppStoreOrdersFinishWhileItsAnswersAreHeld() throws {
        // Google's calls may take 30 s here, so none gives up (3 s in the world's configuration)
        // while the test holds its answers: what finishes meanwhile did not wait for Google.
        var config = try JSONValue.parse(Data(contentsOf: URL(fileURLWithPath: world.configPath)))
        if case var .object(members) = config {
            members = members.map { $0.0 == "http" ? ($0.0, .object([("connect_timeout_seconds", .number(2)), ("timeout_seconds", .number(30))])) : $0 }
            config = .object(members)
        }
        try world.write("settle.json", config.serialized(pretty: true))
        let ledger = try makeLedger()
        try ledger.savePlayVoidedCursor(PlayVoidedCursor(polledAt: world.time.unixSeconds))
        // Google's orders are the oldest: claimed as one queue, they would take every worker.
        for i in 0..<6 {
            try enqueue(ledger, "p-\(i)", user: "u-1", token: product("slow-\(i)", orderId: "GPA.SLOW-\(i)", account: "u-1"))
        }
        world.time.advance(by: 1)
        try enqueueAppStore(ledger, ["a-0", "a-1", "a-2"])
        fake.hold.hold()
        defer { fake.hold.release() }
        let reconciler = try world.reconciler(ledger: ledger)
        let report = Mutex<PassReport?>(nil)
        let done = DispatchSemaphore(value: 0)
        Thread {
            report.withLock { $0 = try? reconciler.runPass() }
            done.signal()
        }.start()
        let apple = ["a-0", "a-1", "a-2"]
        func appleFinished() -> Bool { apple.allSatisfy { (try? self.order(ledger, $0)?.state) == .finished } }
        let until = Date().addingTimeInterval(15)
        while !appleFinished() && Date() < until { usleep(20_000) }
        XCTAssertTrue(appleFinished(), "every App Store order finished while Google held its answers: "
                      + "\(apple.map { "\($0): \((try? self.order(ledger, $0)?.state.rawValue) ?? "?")" })")
        XCTAssertGreaterThan(fake.hold.held, 0, "Google's answers were still held")
        XCTAssertTrue((0..<6).allSatisfy { (try? self.order(ledger, "p-\($0)")?.state) != .finished }, "no Play order was answered yet")
        XCTAssertTrue((0..<6).allSatisfy { (try? self.order(ledger, "p-\($0)")?.lastError) == nil }, "nor had any given up on Google")
        fake.hold.release()
        XCTAssertEqual(done.wait(timeout: .now() + 60), .success)
        XCTAssertNotNil(report.withLock { $0 })
        for i in 0..<6 { XCTAssertEqual(try order(ledger, "p-\(i)")?.state, .finished, "p-\(i) once Google answered") }
    }
}
