import SettleTesting
import Synchronization
import XCTest
@testable import SettleApp
@testable import SettleBase
@testable import SettleModel
@testable import SettleLedger
@testable import SettleEngine
@testable import SettleAppStoreSimulator

/// A delivery keeps its claim while the hook runs, and a transition refused because the claim
/// was lost is said out loud.
final class LeaseTests: XCTestCase {
    var world: TestWorld!
    var ledger: SQLiteLedger!
    let logLines = LineCollector()

    override func setUpWithError() throws {
        world = try TestWorld()
        ledger = try world.ledger()
    }

    override func tearDown() {
        ledger = nil
        world = nil
    }

    /// A hook that blocks until the test writes to its fifo.
    func blockingHook() throws -> String {
        let fifo = world.folder + "/release"
        XCTAssertEqual(mkfifo(fifo, 0o600), 0)
        let hook = try world.hook("blocking.sh", exit: 0, extra: "touch \(world.folder)/started; read line < \(fifo)")
        try world.writeConfig(hook: hook)
        return fifo
    }

    func release(_ fifo: String) {
        let fd = open(fifo, O_WRONLY)
        _ = write(fd, "go\n", 3)
        close(fd)
    }

    func eventually(_ condition: () throws -> Bool) rethrows -> Bool {
        let deadline = Date().addingTimeInterval(20)
        while Date() < deadline {
            if try condition() { return true }
            usleep(10_000)
        }
        return false
    }

    func startPass(_ reconciler: Reconciler) -> DispatchGroup {
        let group = DispatchGroup()
        DispatchQueue.global().async(group: group) { _ = try? reconciler.runPass() }
        return group
    }

    func reconciler() throws -> Reconciler {
        let lines = logLines
        return try world.reconciler(ledger: ledger, log: Log(environment: [:], time: world.time, sink: { lines.append($0) }))
    }

    func enqueue(_ id: String, txn: String) throws {
        let receipt = world.scriptReceipt(id, [SimulatedTransaction(productId: world.coins, transactionId: txn)])
        _ = try ledger.enqueue(NewOrder(orderId: id, userId: "u", productId: world.coins, transactionId: txn, receipt: receipt))
    }

    func testLease_isRenewedWhileTheHookRuns() throws {
        let fifo = try blockingHook()
        try enqueue("o-1", txn: "100")
        let reconciler = try reconciler()
        reconciler.renewLeases(everyFractionOf: 0.0001)
        let pass = startPass(reconciler)
        XCTAssertTrue(eventually { FileManager.default.fileExists(atPath: world.folder + "/started") })
        let before = try XCTUnwrap(try ledger.orderRecord("o-1")?.order.lease?.expiresAt)
        world.time.advance(by: 500)
        XCTAssertTrue(try eventually { (try ledger.orderRecord("o-1")?.order.lease?.expiresAt ?? 0) >= before + 500 },
                      "the lease moved with the clock while the hook ran")
        release(fifo)
        pass.wait()
        XCTAssertEqual(try ledger.orderRecord("o-1")?.order.state, .finished)
    }

    func testDeliveredButTheClaimWasTakenOver_theRefusedFinishIsLoggedAsAWarning() throws {
        let fifo = try blockingHook()
        try enqueue("o-1", txn: "100")
        let pass = startPass(try reconciler())
        XCTAssertTrue(eventually { FileManager.default.fileExists(atPath: world.folder + "/started") })
        // Another process took the order over (its lease had expired, say).
        let other = try SQLiteDatabase(path: world.ledgerPath, mode: .readWrite)
        try other.execute("UPDATE orders SET lease_host = 'elsewhere' WHERE order_id = 'o-1'")
        try other.close()
        release(fifo)
        pass.wait()
        XCTAssertEqual(try ledger.orderRecord("o-1")?.order.state, .delivering, "the other owner finishes it, with the same key")
        let warning = logLines.lines.first { $0.contains("order.lease_lost") && $0.contains("refused=finished") }
        XCTAssertNotNil(warning, logLines.lines.joined(separator: "\n"))
        XCTAssertTrue(warning?.contains("warning") ?? false)
    }

    func testRedeliveryAfterATakeover_answeredAlreadyGranted_isNotMatchedToTheCustomersNextPurchase() throws {
        // An idempotent receiver: a key it has seen is answered "already granted".
        let seen = world.folder + "/seen"
        let hook = try world.hook("idempotent.sh", exit: 0, extra: """
            grep -qx "$SETTLE_IDEMPOTENCY_KEY" \(seen) 2>/dev/null && exit $SETTLE_EXIT_ALREADY_GRANTED
            echo "$SETTLE_IDEMPOTENCY_KEY" >> \(seen)
            """)
        try world.writeConfig(hook: hook)
        let receipt = world.scriptReceipt("two", [
            SimulatedTransaction(productId: world.coins, transactionId: "T-1", purchaseDateMs: 1),
            SimulatedTransaction(productId: world.coins, transactionId: "T-2", purchaseDateMs: 2)])
        _ = try ledger.enqueue(NewOrder(orderId: "o-1", userId: "u", productId: world.coins, receipt: receipt))
        // Another process verified the order, called the hook for T-1 (the receiver granted it),
        // and lost its lease before it could record that.
        let other = LeaseOwner(host: "elsewhere", pid: 7, startTime: "1", bootId: "b", pidNamespace: 1)
        let claim = try XCTUnwrap(try ledger.claim(orderId: "o-1", owner: other, leaseSeconds: 60)?.order)
        let t1 = VerifiedPurchase(transactionId: "T-1", originalTransactionId: "T-1", productId: world.coins, environment: "Production",
                                  quantity: 1, purchaseDateMs: 1, expiresDateMs: nil)
        let t2 = VerifiedPurchase(transactionId: "T-2", originalTransactionId: "T-2", productId: world.coins, environment: "Production",
                                  quantity: 1, purchaseDateMs: 2, expiresDateMs: nil)
        guard case .delivering = try ledger.recordVerified(orderId: "o-1", owner: other, fence: claim.fencingToken,
                                                           match: Match(candidates: [t1, t2], named: false), deliveryLeaseSeconds: 0,
                                                           history: HistoryEntry(at: 0, kind: .verification, outcome: "verified"))
        else { return XCTFail("not reserved") }
        try "T-1\n".write(toFile: seen, atomically: true, encoding: .utf8)
        _ = try reconciler().runPass()
        XCTAssertEqual(world.deliveries, ["T-1 o-1"], "T-2 is not delivered in place of a purchase the customer may hold")
        let order = try XCTUnwrap(try ledger.orderRecord("o-1")?.order)
        XCTAssertEqual(order.state, .needsAttention)
        XCTAssertEqual(order.reason, "already_granted_unclear")
        XCTAssertTrue(logLines.lines.contains { $0.contains("order.needs_attention") && $0.contains("already_granted_unclear") },
                      logLines.lines.joined(separator: "\n"))
    }
}
