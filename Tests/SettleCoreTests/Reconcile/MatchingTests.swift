import SettleTesting
import Synchronization
import XCTest
@testable import SettleApp
@testable import SettleModel
@testable import SettleLedger
@testable import SettleEngine
@testable import SettleAppStoreSimulator

/// Which purchase an order gets is chosen in the same write that reserves it: concurrent
/// workers, and concurrent processes, never pick the same one, and a race never rejects an order.
/// Purchases granted outside settle are recorded and skipped.
final class MatchingTests: XCTestCase {
    var world: TestWorld!
    var ledger: SQLiteLedger!

    override func setUpWithError() throws {
        world = try TestWorld()
        try world.writeConfig(schedule: [("concurrency", .number(8))])
        ledger = try world.ledger()
    }

    override func tearDown() {
        ledger = nil
        world = nil
    }

    func order(_ id: String) throws -> Order { try XCTUnwrap(try ledger.orderRecord(id)?.order) }

    /// One receipt holding `count` purchases of coins, and `count` orders naming none of them.
    func receiptWith(_ count: Int, ids: (Int) -> String, orders prefix: String) throws {
        let transactions = (0..<count).map {
            SimulatedTransaction(productId: world.coins, transactionId: ids($0), purchaseDateMs: Int64(1_000 + $0))
        }
        let receipt = world.scriptReceipt("shared", transactions)
        for i in 0..<count {
            _ = try ledger.enqueue(NewOrder(orderId: "\(prefix)-\(i)", userId: "u-1", productId: world.coins, receipt: receipt))
        }
    }

    func keys() -> [String] { world.deliveries.map { String($0.split(separator: " ")[0]) } }

    func testTwentyFourOrdersOverOneReceipt_atConcurrency8_allFinishWith24DistinctKeys() throws {
        try receiptWith(24, ids: { String(2_000_000_700_000_000 + $0) }, orders: "o")
        let report = try world.reconciler(ledger: ledger).runPass()
        XCTAssertEqual(report.finished, 24, "\(report)")
        XCTAssertEqual(report.rejected, 0)
        XCTAssertEqual(Set(keys()).count, 24)
        XCTAssertEqual(keys().count, 24)
        for i in 0..<24 { XCTAssertEqual(try order("o-\(i)").state, .finished) }
    }

    func testTwoProcessesOverOneReceipt_eachWithItsOwnConnection_neverPickTheSamePurchase() throws {
        try receiptWith(24, ids: { String(2_000_000_710_000_000 + $0) }, orders: "o")
        // A second connection and another owner: what a one-shot `settle reconcile` is beside the daemon.
        let other = try world.ledger()
        let otherOwner = LeaseOwner(host: LeaseOwner.current.host, pid: LeaseOwner.current.pid, startTime: "other-process")
        let first = try world.reconciler(ledger: ledger)
        let configured = try world.reconciler(ledger: other)
        let second = Reconciler(configuration: configured.configuration, ledger: other, verifier: configured.verifier,
                                deliverer: configured.deliverer, policy: configured.policy, owner: otherOwner, log: configured.log)
        let group = DispatchGroup()
        let reports = Mutex<[PassReport]>([])
        for reconciler in [first, second] {
            DispatchQueue.global().async(group: group) {
                if let report = try? reconciler.runPass() { reports.withLock { $0.append(report) } }
            }
        }
        group.wait()
        let all = reports.withLock { $0 }
        XCTAssertEqual(all.count, 2)
        XCTAssertEqual(all.map(\.finished).reduce(0, +), 24, "\(all)")
        XCTAssertEqual(all.map(\.rejected).reduce(0, +), 0)
        XCTAssertEqual(Set(keys()).count, 24)
        XCTAssertEqual(keys().count, 24)
    }

    func testMoreOrdersThanPurchases_theRestAreAlreadyGranted_notLost() throws {
        let receipt = world.scriptReceipt("two", [SimulatedTransaction(productId: world.coins, transactionId: "100", purchaseDateMs: 1),
                                                  SimulatedTransaction(productId: world.coins, transactionId: "200", purchaseDateMs: 2)])
        for i in 0..<3 { _ = try ledger.enqueue(NewOrder(orderId: "o-\(i)", userId: "u", productId: world.coins, receipt: receipt)) }
        let report = try world.reconciler(ledger: ledger).runPass()
        XCTAssertEqual(report.finished, 2)
        XCTAssertEqual(report.rejected, 1)
        XCTAssertEqual(Set(keys()), ["100", "200"])
    }

    // MARK: - Granted outside settle

    /// A hook that answers "already granted" (exit 80) for the keys in `granted`.
    func hookGrantedBefore(_ granted: [String]) throws {
        let cases = granted.map { "\"\($0)\"" }.joined(separator: "|")
        let hook = try world.hook("idempotent.sh", exit: 0, extra: """
            case "$SETTLE_IDEMPOTENCY_KEY" in \(cases)) echo "already had it"; exit $SETTLE_EXIT_ALREADY_GRANTED;; esac
            """)
        try world.writeConfig(hook: hook)
    }

    func testOldPurchaseGrantedByTheApp_isRecordedAndSkipped_andTheLostOneIsDelivered() throws {
        // T-old was granted long ago by the app's own flow; T-new is the lost purchase.
        try hookGrantedBefore(["T-old"])
        let receipt = world.scriptReceipt("old-and-new", [
            SimulatedTransaction(productId: world.coins, transactionId: "T-old", purchaseDateMs: 1),
            SimulatedTransaction(productId: world.coins, transactionId: "T-new", purchaseDateMs: 2)])
        _ = try ledger.enqueue(NewOrder(orderId: "o-1", userId: "u", productId: world.coins, receipt: receipt))
        let report = try world.reconciler(ledger: ledger).runPass()
        XCTAssertEqual(report.finished, 1)
        XCTAssertEqual(world.deliveries, ["T-old o-1", "T-new o-1"], "T-old was answered 'already granted', then T-new delivered")
        let o = try order("o-1")
        XCTAssertEqual(o.state, .finished)
        XCTAssertEqual(o.verified?.transactionId, "T-new")
        XCTAssertEqual(o.attempts, 0, "no attempt used")
        guard case .outside = try ledger.grantHolder(of: VerifiedPurchase(
            transactionId: "T-old", originalTransactionId: "T-old", productId: world.coins, environment: "Production",
            quantity: 1, purchaseDateMs: nil, expiresDateMs: nil)) else { return XCTFail("T-old is recorded as granted outside settle") }
        // The next order over the same receipt does not ask the hook about T-old again: every
        // purchase is taken, one of them outside settle, so that one is taken to be this order's.
        _ = try ledger.enqueue(NewOrder(orderId: "o-2", userId: "u", productId: world.coins, receipt: receipt))
        _ = try world.reconciler(ledger: ledger).runPass()
        XCTAssertEqual(try order("o-2").state, .finished)
        XCTAssertEqual(try order("o-2").reason, "already_delivered")
        XCTAssertEqual(world.deliveries.count, 2)
    }

    func testOrderNamingItsTransaction_grantedBefore_finishesAsAlreadyDelivered() throws {
        try hookGrantedBefore(["T-1"])
        let receipt = world.scriptReceipt("one", [SimulatedTransaction(productId: world.coins, transactionId: "T-1")])
        _ = try ledger.enqueue(NewOrder(orderId: "o-1", userId: "u", productId: world.coins, transactionId: "T-1", receipt: receipt))
        XCTAssertEqual(try world.reconciler(ledger: ledger).runPass().finished, 1)
        let o = try order("o-1")
        XCTAssertEqual(o.state, .finished)
        XCTAssertEqual(o.reason, "already_delivered")
        XCTAssertEqual(try ledger.orderRecord("o-1")?.history.last?.outcome, "already_granted")
    }

    func testGrantRecordedByTheBackend_isNeverDeliveredAgain() throws {
        XCTAssertEqual(try ledger.recordOutsideGrant(transactionId: "T-1", grantKey: "T-1", note: "granted by the shop"), .recorded)
        XCTAssertEqual(try ledger.recordOutsideGrant(transactionId: "T-1", grantKey: "T-1", note: nil), .alreadyRecorded)
        let receipt = world.scriptReceipt("one", [SimulatedTransaction(productId: world.coins, transactionId: "T-1")])
        _ = try ledger.enqueue(NewOrder(orderId: "o-1", userId: "u", productId: world.coins, transactionId: "T-1", receipt: receipt))
        _ = try world.reconciler(ledger: ledger).runPass()
        XCTAssertEqual(try order("o-1").reason, "already_delivered")
        XCTAssertTrue(world.deliveries.isEmpty, "the hook is not called for a purchase the backend granted")
        XCTAssertEqual(try ledger.recordOutsideGrant(transactionId: "T-2", grantKey: "T-2", note: nil), .recorded)
    }
}
