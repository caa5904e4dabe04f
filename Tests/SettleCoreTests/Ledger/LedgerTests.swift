import Foundation
import SettleTesting
import Synchronization
import XCTest
@testable import SettleApp
@testable import SettleBase
@testable import SettleModel
@testable import SettleLedger

final class LedgerTests: XCTestCase {
    var world: TestWorld!
    var ledger: SQLiteLedger!
    let me = LeaseOwner(host: LeaseOwner.current.host, pid: LeaseOwner.current.pid, startTime: LeaseOwner.current.startTime,
                        bootId: LeaseOwner.current.bootId, pidNamespace: LeaseOwner.current.pidNamespace)

    override func setUpWithError() throws {
        world = try TestWorld()
        ledger = try world.ledger()
    }

    override func tearDown() {
        ledger = nil
        world = nil
    }

    func enqueue(_ id: String, transaction: String? = "100") throws {
        _ = try ledger.enqueue(NewOrder(orderId: id, userId: "u-1", productId: world.coins, transactionId: transaction,
                                        receipt: world.receipt(id)))
    }

    func purchase(_ txn: String) -> VerifiedPurchase {
        VerifiedPurchase(transactionId: txn, originalTransactionId: txn, productId: world.coins, environment: "Production",
                         quantity: 1, purchaseDateMs: 1, expiresDateMs: nil)
    }

    func testReadingAReceipt_whileATransitionHoldsTheWriter_doesNotWaitForIt_andSeesTheLastCommit() throws {
        try enqueue("o-1")
        let hash = try XCTUnwrap(try ledger.orderRecord("o-1")?.order.receiptSHA256)
        let holding = DispatchSemaphore(value: 0), release = DispatchSemaphore(value: 0), done = DispatchSemaphore(value: 0)
        let ledger = self.ledger!
        Thread {
            // A transition in progress: the writer's lock held, a row changed but not committed.
            try? ledger.writing { db in
                _ = try db.query("UPDATE orders SET user_id = 'u-uncommitted' WHERE order_id = 'o-1'")
                holding.signal()
                release.wait()
            }
            done.signal()
        }.start()
        holding.wait()
        let read = DispatchSemaphore(value: 0)
        let answer = Mutex<(receipt: String?, user: String?)>((nil, nil))
        Thread {
            let receipt = try? ledger.receipt(sha256: hash)
            let user = try? ledger.orderRecord("o-1")?.order.userId
            answer.withLock { $0 = (receipt, user) }
            read.signal()
        }.start()
        let readWhileWriting = read.wait(timeout: .now() + 20) == .success
        release.signal()
        done.wait()
        if !readWhileWriting { read.wait() }
        XCTAssertTrue(readWhileWriting, "reads go to their own connection, not behind the writer")
        XCTAssertEqual(answer.withLock { $0.receipt }, world.receipt("o-1"))
        XCTAssertEqual(answer.withLock { $0.user }, "u-1", "a read sees the last commit, not a transition in progress")
    }

    func testNewLedger_isMigratedWithWALAndRecordsItsVersion() throws {
        XCTAssertEqual(try ledger.schemaVersion(), LedgerSchema.migrations.count)
        let db = try SQLiteDatabase(path: world.ledgerPath, mode: .readOnly)
        XCTAssertEqual(try db.query("PRAGMA journal_mode").first?.string("journal_mode"), "wal")
        // Reopening does not migrate again.
        XCTAssertEqual(try SQLiteLedger(path: world.ledgerPath).schemaVersion(), LedgerSchema.migrations.count)
    }

    func testNewerSchema_isRefused() throws {
        let db = try SQLiteDatabase(path: world.ledgerPath, mode: .readWrite)
        try db.execute("PRAGMA user_version = 99")
        XCTAssertThrowsError(try SQLiteLedger(path: world.ledgerPath)) { error in
            guard case .newerSchema(99, _) = error as? LedgerError else { return XCTFail("\(error)") }
        }
    }

    func testCheckConstraints_refuseImpossibleRows() throws {
        try enqueue("o-1")
        let db = try SQLiteDatabase(path: world.ledgerPath, mode: .readWrite)
        for sql in ["UPDATE orders SET state = 'lost'",
                    "UPDATE orders SET state = 'finished'",                       // finished needs finished_at
                    "UPDATE orders SET finished_at = 5",                          // only finished has finished_at
                    "UPDATE orders SET state = 'verifying'",                      // in flight needs a lease
                    "INSERT INTO orders(order_id, user_id, product_id) VALUES ('x', 'u', 'p')"] {  // no proof
            XCTAssertThrowsError(try db.execute(sql), sql) { error in
                XCTAssertTrue((error as? SQLiteError)?.isConstraintViolation == true, "\(error)")
            }
        }
    }

    func testBackendInsert_withDocumentedColumns_isPickedUp() throws {
        let db = try SQLiteDatabase(path: world.ledgerPath, mode: .readWrite)
        let receipt = world.receipt("backend")
        try db.execute("""
            INSERT INTO receipts(sha256, data) VALUES ('\(SHA256.hex(Data(receipt.utf8)))', '\(receipt)');
            INSERT INTO orders(order_id, user_id, product_id, transaction_id, receipt_sha256)
            VALUES ('o-backend', 'u-9', '\(world.coins)', '100', '\(SHA256.hex(Data(receipt.utf8)))');
            """)
        let claimed = try XCTUnwrap(try ledger.claimNextDue(owner: me, leaseSeconds: 60))
        XCTAssertEqual(claimed.orderId, "o-backend")
        XCTAssertEqual(try ledger.receipt(sha256: claimed.receiptSHA256!), receipt)
    }

    func testEnqueue_sameContentIsANoOp_differentContentIsRefused() throws {
        let order = NewOrder(orderId: "o-1", userId: "u-1", productId: world.coins, transactionId: "100", receipt: world.receipt("r"))
        XCTAssertEqual(try ledger.enqueue(order), .created)
        XCTAssertEqual(try ledger.enqueue(order), .unchanged)
        var other = order
        other.receipt = world.receipt("other")
        XCTAssertThrowsError(try ledger.enqueue(other)) { error in
            guard case .conflictingOrder("o-1") = error as? LedgerError else { return XCTFail("\(error)") }
        }
        XCTAssertEqual(try ledger.orderRecord("o-1")?.history.count, 1)
    }

    func testReceipts_areStoredOnceByHash() throws {
        let receipt = world.receipt("shared")
        for id in ["o-1", "o-2"] {
            _ = try ledger.enqueue(NewOrder(orderId: id, userId: "u", productId: world.coins, receipt: receipt))
        }
        let db = try SQLiteDatabase(path: world.ledgerPath, mode: .readOnly)
        XCTAssertEqual(try db.query("SELECT count(*) AS n FROM receipts").first?.int("n"), 1)
    }

    func testClaim_takesOnlyDueOrdersOncePerOwner() throws {
        try enqueue("o-1")
        let first = try ledger.claimNextDue(owner: me, leaseSeconds: 60)
        XCTAssertEqual(first?.state, .verifying)
        XCTAssertEqual(first?.lease?.owner, me)
        XCTAssertNil(try ledger.claimNextDue(owner: me, leaseSeconds: 60), "a claimed order is not claimed twice")
    }

    func testGrants_oneOrderPerAppleTransaction() throws {
        try enqueue("o-1")
        try enqueue("o-2")
        let entry = HistoryEntry(at: 0, kind: .verification, outcome: "verified")
        _ = try ledger.claimNextDue(owner: me, leaseSeconds: 60)
        _ = try ledger.claimNextDue(owner: me, leaseSeconds: 60)
        guard case .delivering = try ledger.recordVerified(orderId: "o-1", owner: me, fence: nil, match: .only(purchase("100")),
                                                           deliveryLeaseSeconds: 60, history: entry) else { return XCTFail() }
        XCTAssertEqual(try ledger.recordVerified(orderId: "o-2", owner: me, fence: nil, match: .only(purchase("100")),
                                                 deliveryLeaseSeconds: 60, history: entry), .alreadyGranted("transaction 100 order o-1"))
        let o2 = try XCTUnwrap(try ledger.orderRecord("o-2")?.order)
        XCTAssertEqual(o2.state, .rejected)
        XCTAssertEqual(o2.reason, "already_granted")
    }

    func testTransitions_requireTheLease() throws {
        try enqueue("o-1")
        _ = try ledger.claimNextDue(owner: me, leaseSeconds: 60)
        let stranger = LeaseOwner(host: me.host, pid: me.pid, startTime: "other-boot")
        XCTAssertEqual(try ledger.recordVerified(orderId: "o-1", owner: stranger, fence: nil, match: .only(purchase("100")), deliveryLeaseSeconds: 60,
                                                 history: HistoryEntry(at: 0, kind: .verification, outcome: "verified")), .leaseLost)
        XCTAssertEqual(try ledger.orderRecord("o-1")?.order.state, .verifying)
    }

    func testRescue_deadOwnerOrExpiredLease_requeuesVerifyingWithoutAnAttempt_andRedeliversDelivering() throws {
        try enqueue("o-1")
        try enqueue("o-2", transaction: "200")
        try enqueue("o-3", transaction: "300")
        // A dead process on this host (pid 1 never has our start time), one expired lease, one live claim.
        let dead = LeaseOwner(host: me.host, pid: Int32.max - 1, startTime: "1", bootId: me.bootId, pidNamespace: me.pidNamespace)
        let remoteLive = LeaseOwner(host: "elsewhere", pid: 1, startTime: "1")
        _ = try ledger.claim(orderId: "o-1", owner: dead, leaseSeconds: 3600)
        _ = try ledger.claim(orderId: "o-2", owner: remoteLive, leaseSeconds: 60)
        _ = try ledger.claim(orderId: "o-3", owner: remoteLive, leaseSeconds: 3600)
        _ = try ledger.recordVerified(orderId: "o-2", owner: remoteLive, fence: nil, match: .only(purchase("200")), deliveryLeaseSeconds: 60,
                                      history: HistoryEntry(at: 0, kind: .verification, outcome: "verified"))
        world.time.advance(by: 120)
        let result = try ledger.rescue(owner: me)
        XCTAssertEqual(result.requeued, ["o-1"])
        XCTAssertEqual(result.redeliver, ["o-2"])
        XCTAssertNotEqual(try ledger.orderRecord("o-2")?.order.lease?.owner, me, "leased only when its delivery starts")
        let redelivery = try XCTUnwrap(try ledger.claimRedelivery(orderId: "o-2", owner: me, leaseSeconds: 60))
        XCTAssertEqual(redelivery.verified?.transactionId, "200", "the same key is delivered again")
        XCTAssertEqual(redelivery.lease?.owner, me)
        XCTAssertNil(try ledger.claimRedelivery(orderId: "o-2", owner: remoteLive, leaseSeconds: 60),
                     "once leased again, nobody else takes it over")
        let o1 = try XCTUnwrap(try ledger.orderRecord("o-1"))
        XCTAssertEqual(o1.order.state, .pending)
        XCTAssertEqual(o1.order.attempts, 0)
        XCTAssertEqual(o1.history.last?.kind, .rescue)
        XCTAssertEqual(try ledger.orderRecord("o-3")?.order.state, .verifying, "a live, unexpired claim is left alone")
    }

    func testRescue_takesBackThisProcesssOwnLeftoversFromAnEarlierPass() throws {
        try enqueue("o-1")
        _ = try ledger.claimNextDue(owner: me, leaseSeconds: 3600)
        XCTAssertEqual(try ledger.rescue(owner: me).requeued, ["o-1"])
        XCTAssertEqual(try ledger.orderRecord("o-1")?.order.state, .pending)
    }

    func testRetry_isAllOrNothing_andResetsAttempts() throws {
        try enqueue("o-1")
        try enqueue("o-2", transaction: "200")
        _ = try ledger.claimNextDue(owner: me, leaseSeconds: 60)
        _ = try ledger.recordRejected(orderId: "o-1", owner: me, fence: nil, reason: "receipt_invalid", detail: "21003", environment: nil,
                                      history: HistoryEntry(at: 0, kind: .verification, outcome: "rejected"))
        XCTAssertThrowsError(try ledger.retry(orderIds: ["o-1", "o-2"], note: "x"), "o-2 is pending")
        XCTAssertEqual(try ledger.orderRecord("o-1")?.order.state, .rejected)
        try ledger.retry(orderIds: ["o-1"], note: "customer sent a new receipt")
        let record = try XCTUnwrap(try ledger.orderRecord("o-1"))
        XCTAssertEqual(record.order.state, .pending)
        XCTAssertNil(record.order.reason)
        XCTAssertEqual(record.history.last?.detail, "customer sent a new receipt")
    }

    func testStatusReader_isReadOnlyAndDoesNotCreateLedgers() throws {
        let missing = world.folder + "/nope.sqlite3"
        XCTAssertThrowsError(try SQLiteLedger(readOnlyPath: missing))
        XCTAssertFalse(FileManager.default.fileExists(atPath: missing))
        try enqueue("o-1")
        let reader = try SQLiteLedger(readOnlyPath: world.ledgerPath, time: world.time)
        let summary = try reader.summary(OrderFilter())
        XCTAssertEqual(summary.counts[.pending], 1)
        XCTAssertEqual(summary.orders.map(\.orderId), ["o-1"])
        XCTAssertThrowsError(try reader.database.execute("DELETE FROM orders"))
    }
}

/// Large ledgers: the claim and the status views use indexes, and counts by state are kept by
/// triggers, also for rows a backend writes itself.
final class LedgerScaleTests: XCTestCase {
    var world: TestWorld!
    var ledger: SQLiteLedger!

    override func setUpWithError() throws {
        world = try TestWorld()
        try world.writeConfig()
        ledger = try world.ledger()
    }

    func plan(_ sql: String) throws -> String {
        let database = try SQLiteDatabase(path: world.ledgerPath, mode: .readOnly)
        defer { try? database.close() }
        return try database.query("EXPLAIN QUERY PLAN " + sql).compactMap { $0.string("detail") }.joined(separator: "\n")
    }

    func testClaim_walksTheClaimIndexInOrder_neverSortsTheBacklog() throws {
        let claim = try plan("""
            SELECT order_id FROM orders INDEXED BY orders_claim WHERE state = 'pending' AND next_attempt_at <= 0
            AND \(SQLiteLedger.wellFormed) ORDER BY next_attempt_at, order_id LIMIT 1
            """)
        XCTAssertTrue(claim.contains("orders_claim"), claim)
        XCTAssertFalse(claim.contains("TEMP B-TREE"), claim)
    }

    func testStatusViews_useIndexes_withoutSortingTheTable() throws {
        let recent = try plan("SELECT * FROM orders ORDER BY updated_at DESC, order_id LIMIT 50")
        XCTAssertFalse(recent.contains("TEMP B-TREE"), recent)
        let byState = try plan("SELECT * FROM orders WHERE state = 'pending' ORDER BY updated_at DESC, order_id LIMIT 50")
        XCTAssertFalse(byState.contains("SCAN orders\n") || byState == "SCAN orders", byState)
        let byTransaction = try plan("""
            SELECT * FROM orders WHERE (transaction_id = '1' OR verified_transaction_id = '1' OR original_transaction_id = '1')
            ORDER BY updated_at DESC, order_id LIMIT 50
            """)
        XCTAssertFalse(byTransaction.contains("SCAN orders"), byTransaction)
    }

    func testCounts_followEveryTransition_andRowsABackendInserts() throws {
        _ = try ledger.enqueue(NewOrder(orderId: "o-1", userId: "u", productId: world.coins, transactionId: "1"))
        let backend = try SQLiteDatabase(path: world.ledgerPath, mode: .readWrite)
        try backend.execute("INSERT INTO orders(order_id, user_id, product_id, transaction_id) VALUES ('o-2', 'u', 'p', '2')")
        try backend.close()
        var counts = try ledger.summary(OrderFilter()).counts
        XCTAssertEqual(counts[.pending], 2)
        _ = try ledger.claim(orderId: "o-1", owner: .current, leaseSeconds: 60)
        _ = try ledger.recordRejected(orderId: "o-1", owner: .current, fence: nil, reason: "refunded", detail: "", environment: nil,
                                      history: HistoryEntry(at: 0, kind: .verification, outcome: "rejected"))
        counts = try ledger.summary(OrderFilter()).counts
        XCTAssertEqual(counts[.pending], 1)
        XCTAssertEqual(counts[.rejected], 1)
        XCTAssertEqual(counts[.verifying], 0)
    }
}
