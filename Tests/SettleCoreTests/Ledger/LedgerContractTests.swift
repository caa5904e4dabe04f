import Foundation
import SettleTesting
import Synchronization
import XCTest
@testable import SettleApp
@testable import SettleBase
@testable import SettleModel
@testable import SettleLedger
@testable import SettleEngine
@testable import SettleAppStoreSimulator

/// One back end under test: a fresh ledger and a way to write rows as a backend would.
struct LedgerBackEnd {
    var name: String
    var store: any SettleLedger
    /// Runs SQL as a backend or an operator would, outside settle.
    var execute: (String) throws -> Void
    /// The same ledger opened again, as another `settle run` (another host, on PostgreSQL) opens it.
    var another: () throws -> any SettleLedger = { throw CocoaError(.featureUnsupported) }
}

/// The ledger's contract, run against every back end: each test runs on SQLite, then on
/// PostgreSQL (when the tests have one; `PostgresAvailabilityTests` fails when they don't).
final class LedgerContractTests: XCTestCase {
    var world: TestWorld!
    var schemas: [String] = []
    let me = LeaseOwner(host: LeaseOwner.current.host, pid: LeaseOwner.current.pid, startTime: LeaseOwner.current.startTime,
                        bootId: LeaseOwner.current.bootId, pidNamespace: LeaseOwner.current.pidNamespace)
    let remote = LeaseOwner(host: "other-host", pid: 4242, startTime: "77", bootId: "b", pidNamespace: 1)
    let entry = HistoryEntry(at: 0, kind: .verification, outcome: "verified")

    override func setUpWithError() throws { world = try TestWorld() }

    override func tearDown() {
        schemas.forEach(TestPostgres.drop(schema:))
        world = nil
    }

    func backEnds() throws -> [LedgerBackEnd] {
        let sqlitePath = world.folder + "/contract-\(UUID().uuidString).sqlite3"
        var all = [LedgerBackEnd(name: "SQLite", store: try SQLiteLedger(path: sqlitePath, time: world.time)) { sql in
            try SQLiteDatabase(path: sqlitePath, mode: .readWrite).execute(sql)
        }]
        let time = world.time
        all[0].another = { try SQLiteLedger(path: sqlitePath, time: time) }
        do {
            let fresh = try TestPostgres.freshSchema()
            schemas.append(fresh.schema)
            let store = try PostgresLedger(url: fresh.url, time: world.time)
            all.append(LedgerBackEnd(name: "PostgreSQL", store: store) { sql in
                let connection = try PostgresConnection(url: fresh.url)
                defer { connection.close() }
                try connection.execute(sql)
            })
            all[all.count - 1].another = { try PostgresLedger(url: fresh.url, time: time) }
        }
        return all
    }

    /// Runs `body` on each back end; a failure names the back end it happened on.
    func onEachBackEnd(_ body: (LedgerBackEnd) throws -> Void) throws {
        for backEnd in try backEnds() {
            do {
                try body(backEnd)
            } catch {
                XCTFail("\(backEnd.name): \(error)")
            }
        }
    }

    func enqueue(_ store: any LedgerStore, _ id: String, transaction: String? = "100") throws {
        _ = try store.enqueue(NewOrder(orderId: id, userId: "u-1", productId: world.coins, transactionId: transaction,
                                       receipt: world.receipt(id)))
    }

    func purchase(_ txn: String, grantKey: String? = nil) -> VerifiedPurchase {
        VerifiedPurchase(transactionId: txn, originalTransactionId: grantKey ?? txn, productId: world.coins, environment: "Production",
                         quantity: 1, purchaseDateMs: 1, expiresDateMs: nil, grantKey: grantKey)
    }

    func state(_ store: any LedgerStore, _ id: String) throws -> OrderState? { try store.orderRecord(id)?.order.state }

    // MARK: - Enqueue

    func testEnqueue_sameContentIsANoOp_differentContentIsRefused_onEveryBackEnd() throws {
        try onEachBackEnd { b in
            let order = NewOrder(orderId: "o-1", userId: "u-1", productId: world.coins, transactionId: "100", receipt: world.receipt("r"))
            XCTAssertEqual(try b.store.enqueue(order), .created, b.name)
            XCTAssertEqual(try b.store.enqueue(order), .unchanged, b.name)
            var other = order
            other.receipt = world.receipt("other")
            XCTAssertThrowsError(try b.store.enqueue(other), b.name) { error in
                guard case .conflictingOrder("o-1") = error as? LedgerError else { return XCTFail("\(b.name): \(error)") }
            }
            XCTAssertEqual(try b.store.orderRecord("o-1")?.history.count, 1, b.name)
            XCTAssertEqual(try b.store.receipt(sha256: SHA256.hex(Data(world.receipt("r").utf8))), world.receipt("r"), b.name)
        }
    }

    /// A claim reads the receipts of the orders it claims in its own transaction, each checked
    /// against its hash: a row a backend rewrote by hand is not attached (verification then reads
    /// it itself, and refuses it as before), and an order without a receipt has none.
    func testClaimDue_attachesEachOrdersStoredReceipt_onlyWhereItMatchesItsHash_onEveryBackEnd() throws {
        try onEachBackEnd { b in
            let shared = world.receipt("shared")
            for id in ["o-1", "o-2"] {
                _ = try b.store.enqueue(NewOrder(orderId: id, userId: "u-1", productId: world.coins, transactionId: id, receipt: shared))
            }
            let forged = world.receipt("forged")
            _ = try b.store.enqueue(NewOrder(orderId: "o-3", userId: "u-1", productId: world.coins, transactionId: "o-3", receipt: forged))
            let forgedHash = SHA256.hex(Data(forged.utf8))
            try b.execute("UPDATE receipts SET data = 'not the receipt' WHERE sha256 = '\(forgedHash)'")
            let claimed = Dictionary(uniqueKeysWithValues: try b.store.claimDue(owner: me, leaseSeconds: 60, limit: 10).map { ($0.orderId, $0) })
            XCTAssertEqual(claimed["o-1"]?.storedReceipt, shared, b.name)
            XCTAssertEqual(claimed["o-2"]?.storedReceipt, shared, b.name)
            XCTAssertNil(claimed["o-3"]?.storedReceipt, "\(b.name): a receipt that does not match its hash is never attached")
            XCTAssertNil(try b.store.receipt(sha256: forgedHash), b.name)
            XCTAssertEqual(claimed.count, 3, b.name)
        }
    }

    // MARK: - Every transition

    func testClaimVerifyDeliverFinish_movesThroughEachState_andCarriesAFencingTokenOnSharedLedgers() throws {
        try onEachBackEnd { b in
            try enqueue(b.store, "o-1")
            let claimed = try XCTUnwrap(try b.store.claimNextDue(owner: me, leaseSeconds: 60), b.name)
            XCTAssertEqual(claimed.state, .verifying, b.name)
            XCTAssertEqual(claimed.lease?.owner, me, b.name)
            if b.store.isShared { XCTAssertEqual(claimed.fencingToken, 1, b.name) }
            XCTAssertNil(try b.store.claimNextDue(owner: me, leaseSeconds: 60), "\(b.name): claimed once")
            guard case let .delivering(order) = try b.store.recordVerified(orderId: "o-1", owner: me, fence: claimed.fencingToken,
                                                                          match: .only(purchase("100")), deliveryLeaseSeconds: 60,
                                                                          history: entry) else { return XCTFail(b.name) }
            XCTAssertEqual(order.verified?.transactionId, "100", b.name)
            XCTAssertTrue(try b.store.renewLease(orderId: "o-1", owner: me, fence: claimed.fencingToken, state: .delivering, leaseSeconds: 60), b.name)
            XCTAssertTrue(try b.store.markFinished(orderId: "o-1", owner: me, fence: claimed.fencingToken,
                                                   history: HistoryEntry(at: 0, kind: .delivery, outcome: "delivered")), b.name)
            let record = try XCTUnwrap(try b.store.orderRecord("o-1"), b.name)
            XCTAssertEqual(record.order.state, .finished, b.name)
            XCTAssertNil(record.order.lease, b.name)
            XCTAssertNotNil(record.order.finishedAt, b.name)
            XCTAssertEqual(record.history.map(\.outcome), ["enqueued", "verified", "delivered"], b.name)
        }
    }

    func testMarkFinishedTogether_eachOrderAsIfAlone_aLostClaimLeavesTheOthersFinished() throws {
        try onEachBackEnd { b in
            let ids = ["a", "b", "c", "d"]
            var claims: [String: Order] = [:]
            for id in ids {
                try enqueue(b.store, id, transaction: id)
                let claimed = try XCTUnwrap(try b.store.claim(orderId: id, owner: me, leaseSeconds: 60)?.order, b.name)
                guard case .delivering = try b.store.recordVerified(orderId: id, owner: me, fence: claimed.fencingToken,
                                                                    match: .only(purchase("t-\(id)")), deliveryLeaseSeconds: 60,
                                                                    history: entry) else { return XCTFail(b.name) }
                claims[id] = claimed
            }
            // c finished on its own first: its claim is gone by the time the batch is recorded.
            XCTAssertTrue(try b.store.markFinished(orderId: "c", owner: me, fence: claims["c"]?.fencingToken,
                                                   history: HistoryEntry(at: 0, kind: .delivery, outcome: "delivered")), b.name)
            let results = b.store.markFinished(ids.map { id in
                FinishedDelivery(orderId: id, fence: claims[id]?.fencingToken,
                                 history: HistoryEntry(at: 0, kind: .delivery, outcome: "delivered", detail: "batch \(id)"))
            } + [FinishedDelivery(orderId: "nowhere", fence: nil, history: HistoryEntry(at: 0, kind: .delivery, outcome: "delivered"))],
                                               owner: me)
            XCTAssertEqual(results.map { try? $0.get() }, [true, true, false, true, false], b.name)
            for id in ["a", "b", "d"] {
                let record = try XCTUnwrap(try b.store.orderRecord(id), b.name)
                XCTAssertEqual(record.order.state, .finished, "\(b.name) \(id)")
                XCTAssertNil(record.order.lease, "\(b.name) \(id)")
                XCTAssertEqual(record.history.last?.detail, "batch \(id)", "\(b.name) \(id)")
            }
            XCTAssertEqual(try b.store.orderRecord("c")?.history.filter { $0.outcome == "delivered" }.count, 1,
                           "\(b.name): the lost claim wrote nothing")
            XCTAssertNil(try b.store.orderRecord("nowhere"), b.name)
        }
    }

    func testRejectNeedsAttentionFailureAndRelease_eachEndWhereTheContractSays() throws {
        try onEachBackEnd { b in
            for id in ["r", "n", "f", "x", "p", "l"] { try enqueue(b.store, id, transaction: id) }
            func claim(_ id: String) throws -> Order { try XCTUnwrap(try b.store.claim(orderId: id, owner: me, leaseSeconds: 60)?.order) }
            let r = try claim("r"), n = try claim("n"), f = try claim("f"), x = try claim("x"), l = try claim("l")
            XCTAssertTrue(try b.store.recordRejected(orderId: "r", owner: me, fence: r.fencingToken, reason: "not_paid", detail: "d",
                                                     environment: "Sandbox", history: entry), b.name)
            XCTAssertTrue(try b.store.recordNeedsAttention(orderId: "n", owner: me, fence: n.fencingToken, reason: .proofMissing,
                                                           detail: "d", environment: nil, history: entry), b.name)
            let future = world.time.unixSeconds + 3600
            XCTAssertEqual(try b.store.recordFailure(orderId: "f", owner: me, fence: f.fencingToken, from: .verifying, error: "e",
                                                     countsAttempt: true, permanent: false, nextAttemptAt: future, maxAttempts: 5,
                                                     environment: nil, history: entry), .pending, b.name)
            XCTAssertEqual(try b.store.recordFailure(orderId: "x", owner: me, fence: x.fencingToken, from: .verifying, error: "e",
                                                     countsAttempt: true, permanent: false, nextAttemptAt: future, maxAttempts: 1,
                                                     environment: nil, history: entry), .needsAttention, b.name)
            try b.store.release(orderId: "l", owner: me, fence: l.fencingToken)
            XCTAssertEqual(try b.store.orderRecord("r")?.order.reason, "not_paid", b.name)
            XCTAssertEqual(try b.store.orderRecord("n")?.order.reason, "proof_missing", b.name)
            XCTAssertEqual(try b.store.orderRecord("f")?.order.attempts, 1, b.name)
            XCTAssertEqual(try b.store.orderRecord("x")?.order.reason, "attempts_exhausted", b.name)
            XCTAssertEqual(try state(b.store, "l"), .pending, b.name)
            XCTAssertEqual(try b.store.orderRecord("l")?.order.attempts, 0, "\(b.name): a release uses no attempt")
            // Due now: p and l; f waits an hour.
            XCTAssertEqual(Set(try b.store.dueOrders(limit: 10).map(\.orderId)), ["l", "p"], b.name)
            let summary = try b.store.summary(OrderFilter(limit: 10))
            XCTAssertEqual(summary.counts[.pending], 3, b.name)
            XCTAssertEqual(summary.counts[.rejected], 1, b.name)
            XCTAssertEqual(summary.counts[.needsAttention], 2, b.name)
            // Support: retry and resolve.
            XCTAssertEqual(try b.store.retry(orderIds: ["x"], note: "again").map(\.orderId), ["x"], b.name)
            XCTAssertEqual(try state(b.store, "x"), .pending, b.name)
            XCTAssertEqual(try b.store.resolve(orderIds: ["n"], as: .wontGrant, note: "fraud").first?.1, .rejected, b.name)
            XCTAssertThrowsError(try b.store.retry(orderIds: ["p"], note: nil), "\(b.name): a pending order is not retried")
        }
    }

    func testRetryWithANewSignedTransaction_keepsTheOldOneByHash_andStatusNeverShowsEitherWhole() throws {
        // Shaped like a compact JWS: what status must never print whole.
        let old = "eyJhbGciOiJFUzI1NiJ9.eyJ0cmFuc2FjdGlvbklkIjoiMSJ9.c2lnbmF0dXJlLW9sZA"
        let new = "eyJhbGciOiJFUzI1NiJ9.eyJ0cmFuc2FjdGlvbklkIjoiMiJ9.c2lnbmF0dXJlLW5ldw"
        try onEachBackEnd { b in
            _ = try b.store.enqueue(NewOrder(orderId: "o-1", userId: "u-1", productId: world.coins, signedTransaction: old))
            let claimed = try XCTUnwrap(try b.store.claim(orderId: "o-1", owner: me, leaseSeconds: 60)?.order)
            XCTAssertTrue(try b.store.recordRejected(orderId: "o-1", owner: me, fence: claimed.fencingToken, reason: "signature_invalid",
                                                     detail: "d", environment: nil, history: entry), b.name)
            _ = try b.store.retry(orderIds: ["o-1"], note: "fresh proof", proof: .signedTransaction(new))
            let record = try XCTUnwrap(try b.store.orderRecord("o-1"))
            XCTAssertEqual(record.order.signedTransaction, new, b.name)
            let oldHash = SHA256.hex(Data(old.utf8))
            XCTAssertEqual(try b.store.receipt(sha256: oldHash), old, "\(b.name): the replaced proof is kept")
            let shown = StatusView.json(record.order, history: record.history).serialized()
                + StatusView.text(record.order, history: record.history, now: world.time.unixSeconds)
            XCTAssertFalse(shown.contains(old) || shown.contains(new), "\(b.name): a proof printed whole:\n\(shown)")
            XCTAssertTrue(shown.contains(oldHash), "\(b.name): the history names the old proof by hash")
        }
    }

    func testStatus_ofAHistoryThatHoldsAWholeSignedTransaction_showsItsHashOnly() throws {
        // Ledgers written before retries kept replaced proofs by hash hold them in the history.
        let jws = "eyJhbGciOiJFUzI1NiJ9.eyJ0cmFuc2FjdGlvbklkIjoiMSJ9.c2lnbmF0dXJlLW9sZA"
        let entry = HistoryEntry(at: 0, kind: .retry, outcome: "retried", detail: "again\nprevious signed transaction: \(jws)")
        let ledger = try SQLiteLedger(path: world.folder + "/older.sqlite3", time: world.time)
        _ = try ledger.enqueue(NewOrder(orderId: "o-1", userId: "u", productId: world.coins, transactionId: "1"))
        let order = try XCTUnwrap(try ledger.orderRecord("o-1")?.order)
        let shown = StatusView.json(order, history: [entry]).serialized()
            + StatusView.text(order, history: [entry], now: world.time.unixSeconds)
        XCTAssertFalse(shown.contains(jws), shown)
        XCTAssertTrue(shown.contains(SHA256.hex(Data(jws.utf8))), shown)
    }

    // MARK: - Leases

    func testLeaseLoss_aStrangerOrAnExpiredClaimChangesNothing() throws {
        try onEachBackEnd { b in
            try enqueue(b.store, "o-1")
            let mine = try XCTUnwrap(try b.store.claimNextDue(owner: me, leaseSeconds: 0), b.name)
            XCTAssertEqual(try b.store.recordVerified(orderId: "o-1", owner: remote, fence: mine.fencingToken, match: .only(purchase("100")),
                                                      deliveryLeaseSeconds: 60, history: entry), .leaseLost, b.name)
            // The lease (0 s) expired: another host's rescue takes it back, and our late writes are refused.
            let rescued = try b.store.rescue(owner: remote)
            XCTAssertEqual(rescued.requeued, ["o-1"], b.name)
            XCTAssertEqual(try state(b.store, "o-1"), .pending, b.name)
            XCTAssertEqual(try b.store.orderRecord("o-1")?.order.attempts, 0, "\(b.name): rescue uses no attempt")
            XCTAssertEqual(try b.store.recordVerified(orderId: "o-1", owner: me, fence: mine.fencingToken, match: .only(purchase("100")),
                                                      deliveryLeaseSeconds: 60, history: entry), .leaseLost, b.name)
            XCTAssertFalse(try b.store.renewLease(orderId: "o-1", owner: me, fence: mine.fencingToken, state: .verifying, leaseSeconds: 60), b.name)
            XCTAssertNil(try b.store.recordFailure(orderId: "o-1", owner: me, fence: mine.fencingToken, from: .verifying, error: "late",
                                                   countsAttempt: true, permanent: false, nextAttemptAt: 0, maxAttempts: 5,
                                                   environment: nil, history: entry), b.name)
        }
    }

    func testFencingToken_refusesTheSameOwnersStaleClaim_afterTheOrderWasTakenOverAndClaimedAgain() throws {
        try onEachBackEnd { b in
            guard b.store.isShared else { return }  // SQLite: claims are taken back only before this process's pass.
            try enqueue(b.store, "o-1")
            let stale = try XCTUnwrap(try b.store.claimNextDue(owner: me, leaseSeconds: 0))
            _ = try b.store.rescue(owner: remote)
            let fresh = try XCTUnwrap(try b.store.claimNextDue(owner: me, leaseSeconds: 60))
            XCTAssertGreaterThan(fresh.fencingToken ?? 0, stale.fencingToken ?? 0)
            XCTAssertFalse(try b.store.recordRejected(orderId: "o-1", owner: me, fence: stale.fencingToken, reason: "late", detail: "",
                                                      environment: nil, history: entry), "the stale worker's write is refused")
            XCTAssertEqual(try state(b.store, "o-1"), .verifying)
            XCTAssertTrue(try b.store.recordRejected(orderId: "o-1", owner: me, fence: fresh.fencingToken, reason: "not_paid", detail: "",
                                                     environment: nil, history: entry))
        }
    }

    func testRescue_takesBackOnlyTheDeadAndTheExpired_andRedeliversDeliveringWithTheSameKey() throws {
        try onEachBackEnd { b in
            try enqueue(b.store, "expired-v", transaction: "1")
            try enqueue(b.store, "expired-d", transaction: "2")
            try enqueue(b.store, "live", transaction: "3")
            try enqueue(b.store, "dead", transaction: "4")
            let deadHere = LeaseOwner(host: me.host, pid: Int32.max - 1, startTime: "1", bootId: me.bootId, pidNamespace: me.pidNamespace)
            _ = try b.store.claim(orderId: "expired-v", owner: remote, leaseSeconds: 0)
            let d = try XCTUnwrap(try b.store.claim(orderId: "expired-d", owner: remote, leaseSeconds: 60)?.order)
            _ = try b.store.recordVerified(orderId: "expired-d", owner: remote, fence: d.fencingToken, match: .only(purchase("2")),
                                           deliveryLeaseSeconds: 0, history: entry)
            _ = try b.store.claim(orderId: "live", owner: remote, leaseSeconds: 3600)
            _ = try b.store.claim(orderId: "dead", owner: deadHere, leaseSeconds: 3600)
            let result = try b.store.rescue(owner: me)
            XCTAssertEqual(Set(result.requeued), ["expired-v", "dead"], b.name)
            XCTAssertEqual(result.redeliver, ["expired-d"], b.name)
            XCTAssertEqual(try state(b.store, "live"), .verifying, "\(b.name): a live claim on another host is left alone")
            let again = try XCTUnwrap(try b.store.claimRedelivery(orderId: "expired-d", owner: me, leaseSeconds: 60), b.name)
            XCTAssertEqual(again.lease?.owner, me, b.name)
            XCTAssertEqual(again.verified?.grantKey, "2", b.name)
            XCTAssertNil(try b.store.claimRedelivery(orderId: "expired-d", owner: remote, leaseSeconds: 60), "\(b.name): now ours")
            XCTAssertTrue(try b.store.markFinished(orderId: "expired-d", owner: me, fence: again.fencingToken,
                                                   history: HistoryEntry(at: 0, kind: .delivery, outcome: "delivered")), b.name)
            XCTAssertFalse(try b.store.markFinished(orderId: "expired-d", owner: remote, fence: d.fencingToken,
                                                    history: HistoryEntry(at: 0, kind: .delivery, outcome: "delivered")), b.name)
        }
    }

    /// A confirmed purchase handed over (the caller does not wait for the commit): the result
    /// comes once the write is durable, seen by another connection (another host on
    /// PostgreSQL) at that moment, and it is the result the waiting call gives, a lost claim included.
    func testRecordVerified_handedOver_answersOnceDurable_asTheWaitingCallWould_onEveryBackEnd() throws {
        try onEachBackEnd { b in
            try enqueue(b.store, "o-1", transaction: nil)
            try enqueue(b.store, "o-2", transaction: nil)
            let first = try XCTUnwrap(try b.store.claim(orderId: "o-1", owner: me, leaseSeconds: 60)?.order, b.name)
            let second = try XCTUnwrap(try b.store.claim(orderId: "o-2", owner: me, leaseSeconds: 60)?.order, b.name)
            let other = try b.another()
            defer { try? other.close() }
            let results = LineCollector()
            let arrived = DispatchSemaphore(value: 0)
            let match = Match(candidates: [purchase("500")], named: false)
            b.store.recordVerified(VerifiedAnswer(orderId: "o-1", fence: first.fencingToken, match: match, history: entry),
                                   owner: me, deliveryLeaseSeconds: 60) { result in
                let seen = (try? other.orderRecord("o-1"))??.order.state.rawValue ?? "unread"
                switch result {
                case let .success(.delivering(order)):
                    results.append("o-1 delivering \(order.verified?.transactionId ?? "?"), seen by another: \(seen)")
                case let .success(other): results.append("o-1 \(other)")
                case let .failure(error): results.append("o-1 failed: \(error)")
                }
                arrived.signal()
            }
            XCTAssertEqual(arrived.wait(timeout: .now() + 30), .success, b.name)
            // Another owner's answer about o-2 (its claim is ours): nothing changes, and it says so.
            b.store.recordVerified(VerifiedAnswer(orderId: "o-2", fence: second.fencingToken, match: match, history: entry),
                                   owner: remote, deliveryLeaseSeconds: 60) { result in
                switch result {
                case .success(.leaseLost): results.append("o-2 lease lost")
                case let .success(other): results.append("o-2 \(other)")
                case let .failure(error): results.append("o-2 failed: \(error)")
                }
                arrived.signal()
            }
            XCTAssertEqual(arrived.wait(timeout: .now() + 30), .success, b.name)
            XCTAssertEqual(results.lines, ["o-1 delivering 500, seen by another: delivering", "o-2 lease lost"], b.name)
            XCTAssertEqual(try b.store.grantHolder(of: purchase("500")), .order("o-1"), b.name)
            XCTAssertEqual(try state(b.store, "o-2"), .verifying, "\(b.name): still ours, untouched")
        }
    }

    func testAlreadyGrantedAnswer_afterAnotherWorkerMayHaveDeliveredTheSameKey_isNeverMatchedToAnotherPurchase() throws {
        try onEachBackEnd { b in
            // Matched by product: two purchases of the coins, the order gets 500.
            _ = try b.store.enqueue(NewOrder(orderId: "o-1", userId: "u", productId: world.coins, receipt: world.receipt("o-1")))
            let first = try XCTUnwrap(try b.store.claim(orderId: "o-1", owner: remote, leaseSeconds: 60)?.order, b.name)
            let match = Match(candidates: [purchase("500"), purchase("501")], named: false)
            guard case .delivering = try b.store.recordVerified(orderId: "o-1", owner: remote, fence: first.fencingToken, match: match,
                                                                deliveryLeaseSeconds: 0, history: entry) else { return XCTFail(b.name) }
            // The remote worker's hook ran, and its lease lapsed: this process takes the delivery over.
            XCTAssertEqual(try b.store.rescue(owner: me).redeliver, ["o-1"], b.name)
            let mine = try XCTUnwrap(try b.store.claimRedelivery(orderId: "o-1", owner: me, leaseSeconds: 60), b.name)
            let answer = HistoryEntry(at: 0, kind: .delivery, outcome: "already_granted", detail: "409")
            // The stale worker's "already granted" changes nothing.
            XCTAssertEqual(try b.store.recordGrantedOutside(orderId: "o-1", owner: remote, fence: first.fencingToken, history: answer),
                           .leaseLost, b.name)
            // Ours may be the receiver remembering the remote worker's call with the same key.
            guard case .unclear = try b.store.recordGrantedOutside(orderId: "o-1", owner: me, fence: mine.fencingToken, history: answer)
            else { return XCTFail("\(b.name): re-matched after a re-delivery") }
            let record = try XCTUnwrap(try b.store.orderRecord("o-1"), b.name)
            XCTAssertEqual(record.order.state, .needsAttention, b.name)
            XCTAssertEqual(record.order.reason, AttentionReason.alreadyGrantedUnclear.rawValue, b.name)
            XCTAssertEqual(record.order.verified?.transactionId, "500", b.name)
            XCTAssertEqual(try b.store.grantHolder(of: purchase("500")), .order("o-1"), "\(b.name): the order keeps its purchase")
            XCTAssertNil(try b.store.grantHolder(of: purchase("501")), "\(b.name): the other purchase is not taken")
        }
    }

    func testHookStart_whenAnotherOwnerTookTheQueuedOrderOver_theFirstWorkersHookNeverRuns() throws {
        try onEachBackEnd { b in
            // One verification worker, one delivery worker: o-1 waits in the queue while o-0's hook blocks.
            let fifo = world.folder + "/release-\(b.name)"
            XCTAssertEqual(mkfifo(fifo, 0o600), 0)
            let hook = try world.hook("slow-first-\(b.name).sh", exit: 0, extra: "[ \"$SETTLE_ORDER_ID\" = o-0 ] && read line < \(fifo)")
            try world.writeConfig(hook: hook, schedule: [("concurrency", .number(1))])
            for id in ["o-0", "o-1"] {
                let receipt = world.scriptReceipt("\(b.name)-\(id)", [SimulatedTransaction(productId: world.coins, transactionId: "\(b.name)-\(id)")])
                _ = try b.store.enqueue(NewOrder(orderId: id, userId: "u", productId: world.coins, transactionId: "\(b.name)-\(id)",
                                                 receipt: receipt))
            }
            let lines = LineCollector()
            let reconciler = try Reconciler.configured(try world.configuration(), ledger: b.store, environment: [:],
                                                       log: Log(environment: [:], time: world.time, sink: { lines.append($0) }), modules: TestStores.modules)
            let pass = DispatchGroup()
            DispatchQueue.global().async(group: pass) { _ = try? reconciler.runPass() }
            XCTAssertTrue(try eventually { try state(b.store, "o-1") == .delivering }, b.name)
            // o-1 waits longer than its lease lasts (this process's clock, and the lease clock on
            // PostgreSQL, which is the database's); another host rescues it and delivers it itself.
            world.time.advance(by: TimeInterval(reconciler.deliveryLeaseSeconds + 1))
            try b.execute("UPDATE orders SET lease_expires_at = 0 WHERE order_id = 'o-1'")
            XCTAssertTrue(try b.store.rescue(owner: remote).redeliver.contains("o-1"), b.name)
            XCTAssertNotNil(try b.store.claimRedelivery(orderId: "o-1", owner: remote, leaseSeconds: 600), b.name)
            let fd = open(fifo, O_WRONLY)
            _ = write(fd, "go\n", 3)
            close(fd)
            pass.wait()
            let calls = world.deliveries.filter { $0.hasPrefix("\(b.name)-") }
            XCTAssertEqual(calls, ["\(b.name)-o-0 o-0"], "\(b.name): o-1's hook is left to its new owner")
            XCTAssertEqual(try state(b.store, "o-0"), .finished, b.name)
            let o1 = try XCTUnwrap(try b.store.orderRecord("o-1")?.order, b.name)
            XCTAssertEqual(o1.state, .delivering, b.name)
            XCTAssertEqual(o1.lease?.owner, remote, b.name)
            XCTAssertTrue(lines.lines.contains { $0.contains("order.lease_lost") && $0.contains("o-1") && $0.contains("refused=hook_start") },
                          "\(b.name): \(lines.lines.joined(separator: "\n"))")
        }
    }

    func testVerification_thatRunsLongerThanItsLease_keepsItRenewed_soAnotherHostDoesNotRescueIt() throws {
        try onEachBackEnd { b in
            try world.writeConfig(hook: try world.hook("ok-\(b.name).sh", exit: 0))
            let receipt = world.scriptReceipt("\(b.name)-v", [SimulatedTransaction(productId: world.coins, transactionId: "\(b.name)-v")])
            _ = try b.store.enqueue(NewOrder(orderId: "o-1", userId: "u", productId: world.coins, transactionId: "\(b.name)-v",
                                             receipt: receipt))
            let base = try Reconciler.configured(try world.configuration(), ledger: b.store, environment: [:], log: .silent, modules: TestStores.modules)
            // Apple's answer is held back (a long history, many pages) until the test lets it go.
            let started = DispatchSemaphore(value: 0), answer = DispatchSemaphore(value: 0)
            let verifier = ObservedVerifier(inner: base.verifier) { _ in
                started.signal()
                answer.wait()
            }
            let reconciler = Reconciler(configuration: base.configuration, ledger: b.store, verifier: verifier,
                                        deliverer: base.deliverer, policy: base.policy, log: .silent)
            reconciler.renewLeases(everyFractionOf: 0.0001)
            let pass = DispatchGroup()
            DispatchQueue.global().async(group: pass) { _ = try? reconciler.runPass() }
            XCTAssertEqual(started.wait(timeout: .now() + 20), .success, b.name)
            // Time passes beyond the verification's lease (as if many pages were read): the clock
            // first, so that every renewal from here on is one made after the wait.
            world.time.advance(by: 3600)
            defer { world.time.advance(by: -3600) }
            try b.execute("UPDATE orders SET lease_expires_at = 0 WHERE order_id = 'o-1'")
            // SQLite leases on this process's (the test's) clock; PostgreSQL on the database's, which did not move.
            let renewedAfter = b.store.isShared ? 0 : world.time.unixSeconds
            XCTAssertTrue(try eventually { (try b.store.orderRecord("o-1")?.order.lease?.expiresAt ?? 0) > renewedAfter },
                          "\(b.name): the lease was renewed while Apple's answer was awaited")
            XCTAssertEqual(try b.store.rescue(owner: remote).requeued, [], "\(b.name): nobody rescues a verification still working")
            answer.signal()
            pass.wait()
            XCTAssertEqual(try state(b.store, "o-1"), .finished, b.name)
        }
    }

    func eventually(_ condition: () throws -> Bool) rethrows -> Bool {
        let deadline = Date().addingTimeInterval(20)
        while Date() < deadline {
            if try condition() { return true }
            usleep(5_000)
        }
        return false
    }

    // MARK: - Grants

    func testGrants_onePurchaseOnce_byTransactionAndByGrantKey() throws {
        try onEachBackEnd { b in
            for id in ["a", "b", "c", "d"] { try enqueue(b.store, id, transaction: nil) }
            var claims: [String: Order] = [:]
            for id in ["a", "b", "c", "d"] { claims[id] = try b.store.claim(orderId: id, owner: me, leaseSeconds: 60)?.order }
            func verify(_ id: String, _ match: Match) throws -> VerifiedResult {
                try b.store.recordVerified(orderId: id, owner: me, fence: claims[id]?.fencingToken, match: match,
                                           deliveryLeaseSeconds: 60, history: entry)
            }
            guard case .delivering = try verify("a", .only(purchase("100"))) else { return XCTFail(b.name) }
            XCTAssertEqual(try verify("b", .only(purchase("100"))), .alreadyGranted("transaction 100 order a"), b.name)
            // A non-consumable restored under a new transaction id: same grant key, granted once.
            guard case .delivering = try verify("c", .only(purchase("200", grantKey: "orig-1"))) else { return XCTFail(b.name) }
            guard case .alreadyGranted = try verify("d", .only(purchase("201", grantKey: "orig-1"))) else { return XCTFail(b.name) }
            XCTAssertEqual(try b.store.grantHolder(transactionId: "100"), "a", b.name)
            XCTAssertEqual(try b.store.grantHolder(of: purchase("201", grantKey: "orig-1")), .order("c"), b.name)
        }
    }

    func testGrantsMadeOutsideSettle_byCommandOrByABackendRow_finishTheOrderWithoutDelivery() throws {
        try onEachBackEnd { b in
            try enqueue(b.store, "o-1", transaction: "300")
            try enqueue(b.store, "o-2", transaction: "400")
            XCTAssertEqual(try b.store.recordOutsideGrant(transactionId: "300", grantKey: "300", note: "admin tool"), .recorded, b.name)
            XCTAssertEqual(try b.store.recordOutsideGrant(transactionId: "300", grantKey: "300", note: nil), .alreadyRecorded, b.name)
            try b.execute("INSERT INTO grants(grant_key, transaction_id, order_id, source, granted_at, note) VALUES ('400', '400', NULL, 'outside', 1, 'backend')")
            for (id, txn) in [("o-1", "300"), ("o-2", "400")] {
                let claim = try XCTUnwrap(try b.store.claim(orderId: id, owner: me, leaseSeconds: 60)?.order)
                guard case .alreadyDelivered = try b.store.recordVerified(orderId: id, owner: me, fence: claim.fencingToken,
                                                                         match: .only(purchase(txn)), deliveryLeaseSeconds: 60,
                                                                         history: entry) else { return XCTFail(b.name) }
                XCTAssertEqual(try b.store.orderRecord(id)?.order.reason, "already_delivered", b.name)
            }
        }
    }

    func testHookAnswersAlreadyGranted_anOrderMatchedByProduct_isMatchedAgainToItsNextPurchase() throws {
        try onEachBackEnd { b in
            _ = try b.store.enqueue(NewOrder(orderId: "o-1", userId: "u", productId: world.coins, receipt: world.receipt("o-1")))
            let claim = try XCTUnwrap(try b.store.claim(orderId: "o-1", owner: me, leaseSeconds: 60)?.order)
            let match = Match(candidates: [purchase("500"), purchase("501")], named: false)
            guard case .delivering = try b.store.recordVerified(orderId: "o-1", owner: me, fence: claim.fencingToken, match: match,
                                                                deliveryLeaseSeconds: 60, history: entry) else { return XCTFail(b.name) }
            guard case let .rematch(again) = try b.store.recordGrantedOutside(orderId: "o-1", owner: me, fence: claim.fencingToken,
                                                                               history: entry) else { return XCTFail(b.name) }
            XCTAssertEqual(again.state, .verifying, b.name)
            guard case let .delivering(second) = try b.store.recordVerified(orderId: "o-1", owner: me, fence: again.fencingToken,
                                                                           match: match, deliveryLeaseSeconds: 60, history: entry)
            else { return XCTFail(b.name) }
            XCTAssertEqual(second.verified?.transactionId, "501", b.name)
            XCTAssertEqual(try b.store.grantHolder(of: purchase("500")), .outside(note: "the hook answered \"already granted\" delivering order o-1"), b.name)
        }
    }

    func testConcurrentWorkers_claimEachOrderOnce_andGrantEachPurchaseOnce() throws {
        try onEachBackEnd { b in
            for i in 0..<60 { try enqueue(b.store, "o-\(i)", transaction: "t-\(i % 30)") }
            let claimed = Mutex<[String]>([])
            let granted = Mutex<[String]>([])
            let group = DispatchGroup()
            let store = b.store
            let entry = self.entry
            let products = (0..<30).map { purchase("t-\($0)") }
            for worker in 0..<4 {
                let owner = LeaseOwner(host: "host-\(worker)", pid: Int32(worker + 1), startTime: "1")
                group.enter()
                Thread {
                    defer { group.leave() }
                    while let order = try? store.claimNextDue(owner: owner, leaseSeconds: 60) {
                        claimed.withLock { $0.append(order.orderId) }
                        let txn = order.requestedTransactionId ?? ""
                        let product = products.first { $0.transactionId == txn }!
                        if case .delivering = try? store.recordVerified(orderId: order.orderId, owner: owner, fence: order.fencingToken,
                                                                        match: .only(product), deliveryLeaseSeconds: 60, history: entry) {
                            granted.withLock { $0.append(txn) }
                        }
                    }
                }.start()
            }
            group.wait()
            XCTAssertEqual(claimed.withLock { $0.sorted() }, (0..<60).map { "o-\($0)" }.sorted(), "\(b.name): every order claimed exactly once")
            XCTAssertEqual(granted.withLock { $0.sorted() }, (0..<30).map { "t-\($0)" }.sorted(), "\(b.name): every purchase granted exactly once")
        }
    }

    func testConcurrentWorkers_claimingInBatches_claimEachOrderOnce_inDueOrderWithinEachBatch() throws {
        try onEachBackEnd { b in
            for i in 0..<60 { try enqueue(b.store, String(format: "o-%02d", i)) }
            let batches = Mutex<[[String]]>([])
            let group = DispatchGroup()
            let store = b.store
            for worker in 0..<4 {
                let owner = LeaseOwner(host: "host-\(worker)", pid: Int32(worker + 1), startTime: "1")
                group.enter()
                Thread {
                    defer { group.leave() }
                    while let batch = try? store.claimDue(owner: owner, leaseSeconds: 60, limit: 7), !batch.isEmpty {
                        XCTAssertTrue(batch.allSatisfy { $0.state == .verifying && $0.lease?.owner == owner })
                        batches.withLock { $0.append(batch.map(\.orderId)) }
                    }
                }.start()
            }
            group.wait()
            let all = batches.withLock { $0 }
            XCTAssertEqual(all.flatMap { $0 }.sorted(), (0..<60).map { String(format: "o-%02d", $0) }, "\(b.name): every order claimed exactly once")
            XCTAssertTrue(all.allSatisfy { $0.count <= 7 && $0 == $0.sorted() }, "\(b.name): at most the limit, in claim order: \(all)")
            XCTAssertGreaterThan(all.filter { $0.count > 1 }.count, 0, "\(b.name): batches of several orders")
        }
    }

    func testClaimDue_takesTheUrgentPlayOrdersFirst_thenTheDueOnes_upToTheLimit() throws {
        try onEachBackEnd { b in
            for id in ["a-1", "a-2", "a-3"] { try enqueue(b.store, id) }
            world.time.advance(by: -Double(RefundDeadline.urgentAfterSeconds(.googlePlay)! + 3600))
            try enqueuePlay(b.store, "p-late", token: PurchaseToken("tok-late-batch")!)
            world.time.advance(by: Double(RefundDeadline.urgentAfterSeconds(.googlePlay)! + 3600))
            try b.execute("UPDATE orders SET next_attempt_at = next_attempt_at + 1 WHERE order_id = 'p-late'")
            world.time.advance(by: 5)
            XCTAssertEqual(try b.store.claimDue(owner: me, leaseSeconds: 60, limit: 3).map(\.orderId), ["p-late", "a-1", "a-2"], b.name)
            XCTAssertEqual(try b.store.claimDue(owner: me, leaseSeconds: 60, limit: 3).map(\.orderId), ["a-3"], b.name)
            XCTAssertEqual(try b.store.claimDue(owner: me, leaseSeconds: 60, limit: 3).map(\.orderId), [], b.name)
            if b.store.isShared {
                XCTAssertEqual(try b.store.orderRecord("a-2")?.order.fencingToken, 1, "\(b.name): each claim of a batch is fenced")
            }
        }
    }

    // MARK: - Dry run, daemons, schema

    func testDryRunReads_changeNothing() throws {
        try onEachBackEnd { b in
            try enqueue(b.store, "o-1")
            let before = try b.store.orderRecord("o-1")
            XCTAssertEqual(try b.store.dueOrders(limit: 5).map(\.orderId), ["o-1"], b.name)
            XCTAssertNil(try b.store.grantHolder(of: purchase("100")), b.name)
            XCTAssertEqual(try b.store.orderRecord("o-1")?.order, before?.order, b.name)
            XCTAssertEqual(try b.store.orderRecord("o-1")?.history, before?.history, b.name)
        }
    }

    func testPruneHistory_removesOnlyOldHistoryOfEndedOrders() throws {
        try onEachBackEnd { b in
            try enqueue(b.store, "ended")
            try enqueue(b.store, "open", transaction: "200")
            let claim = try XCTUnwrap(try b.store.claim(orderId: "ended", owner: me, leaseSeconds: 60)?.order)
            XCTAssertTrue(try b.store.recordRejected(orderId: "ended", owner: me, fence: claim.fencingToken, reason: "not_paid",
                                                     detail: "", environment: nil, history: entry), b.name)
            world.time.advance(by: 10 * 86400)
            XCTAssertEqual(try b.store.pruneHistory(olderThanDays: 5), 2, b.name)
            XCTAssertEqual(try b.store.orderRecord("ended")?.history.count, 0, b.name)
            XCTAssertEqual(try b.store.orderRecord("open")?.history.count, 1, "\(b.name): an open order keeps its history")
            world.time.advance(by: -10 * 86400)
        }
    }

    func testDaemons_areListedLiveUntilTheyStop() throws {
        try onEachBackEnd { b in
            try b.store.recordDaemonStarted(me)
            try b.store.recordDaemonPass(me, summary: "1 finished")
            XCTAssertEqual(try b.store.liveDaemons().map(\.owner), [me], b.name)
            XCTAssertEqual(try b.store.daemonRecord()?.lastPassSummary, "1 finished", b.name)
            try b.store.recordDaemonStopped(me)
            XCTAssertEqual(try b.store.liveDaemons().count, 0, b.name)
        }
    }

    func testStoreBreakerDueForAProbe_isProbedByOneDaemonOnly_onASharedLedger() throws {
        try onEachBackEnd { b in
            guard b.store.isShared else { return }
            let now = world.time.unixSeconds
            try b.store.saveBreaker(StoreBreaker(state: .open, consecutiveFailures: 3, cooldownSeconds: 60, retryAt: now,
                                                 lastError: "503", lastErrorAt: now), of: .appStore)
            XCTAssertEqual(try b.store.breakers()[.appStore]!.permission(now: now), .probe, "a plain read takes nothing")
            let first = try b.store.breakersForPass()
            let second = try b.store.breakersForPass()
            XCTAssertEqual(first[.appStore]?.permission(now: now), .probe)
            XCTAssertEqual(second[.appStore]?.permission(now: now), .wait(until: now + 60))
            XCTAssertEqual(second[.googlePlay]?.permission(now: now), .claim, "the other store's breaker is its own")
        }
    }

    func testEachStoresBreaker_isKeptApart_onBothEngines() throws {
        try onEachBackEnd { b in
            let now = world.time.unixSeconds
            XCTAssertEqual(try b.store.breakers(), [.appStore: StoreBreaker(), .googlePlay: StoreBreaker(), .huawei: StoreBreaker(), .oneStore: StoreBreaker(), .bogus: StoreBreaker()],
                           "every registered store's breaker starts closed: \(b.name)")
            let open = StoreBreaker(state: .open, consecutiveFailures: 5, cooldownSeconds: 30, retryAt: now + 30,
                                    lastError: "Google Play answered 503", lastErrorAt: now)
            try b.store.saveBreaker(open, of: .googlePlay)
            XCTAssertEqual(try b.store.breakers()[.googlePlay], open, b.name)
            XCTAssertEqual(try b.store.breakers()[.appStore], StoreBreaker(), "\(b.name): Google's outage is not Apple's")
            try b.store.saveBreaker(StoreBreaker(), of: .googlePlay)
            XCTAssertEqual(try b.store.breakers()[.googlePlay], StoreBreaker(), b.name)
        }
    }

    func testClaimDue_ofOneStore_takesOnlyThatStoresOrders_inDueOrder() throws {
        try onEachBackEnd { b in
            let me = LeaseOwner.current
            for i in 0..<4 {
                try b.store.enqueue(NewOrder(orderId: "apple-\(i)", userId: "u", productId: world.coins, transactionId: "\(4000 + i)"))
                try b.store.enqueue(NewOrder(orderId: "play-\(i)", userId: "u", productId: world.coins, store: .googlePlay,
                                             purchaseToken: PurchaseToken("token-\(i)")!))
                world.time.advance(by: 1)
            }
            XCTAssertEqual(try b.store.claimDue(owner: me, leaseSeconds: 60, limit: 3, stores: [.googlePlay]).map(\.orderId),
                           ["play-0", "play-1", "play-2"], b.name)
            XCTAssertEqual(try b.store.claimDue(owner: me, leaseSeconds: 60, limit: 3, stores: [.appStore]).map(\.orderId),
                           ["apple-0", "apple-1", "apple-2"], b.name)
            XCTAssertEqual(try b.store.claimDue(owner: me, leaseSeconds: 60, limit: 3, stores: Set(Store.allCases)).map(\.orderId).sorted(),
                           ["apple-3", "play-3"], b.name)
            XCTAssertEqual(try b.store.summary(OrderFilter(limit: 0)).storeCounts[.googlePlay]?[.verifying], 4, b.name)
            XCTAssertEqual(try b.store.summary(OrderFilter(limit: 0)).storeCounts[.appStore]?[.verifying], 4, b.name)
        }
    }
}

final class PostgresLedgerMigrationTests: XCTestCase {
    func testMigrations_fromTwoHostsAtOnce_runOnce_andRecordTheVersion() throws {
        let fresh = try TestPostgres.freshSchema()
        defer { TestPostgres.drop(schema: fresh.schema) }
        let errors = Mutex<[String]>([])
        let group = DispatchGroup()
        for _ in 0..<3 {
            group.enter()
            Thread {
                defer { group.leave() }
                do { _ = try PostgresLedger(url: fresh.url) } catch { errors.withLock { $0.append("\(error)") } }
            }.start()
        }
        group.wait()
        XCTAssertEqual(errors.withLock { $0 }, [String]())
        let ledger = try PostgresLedger(url: fresh.url, access: .readOnly)
        XCTAssertEqual(try ledger.schemaVersion(), PostgresLedgerSchema.migrations.count)
        let connection = try PostgresConnection(url: fresh.url)
        defer { connection.close() }
        XCTAssertEqual(try connection.query("SELECT count(*) AS n FROM settle_schema").first?.int("n"),
                       Int64(PostgresLedgerSchema.migrations.count))
    }

    func testReadOnlyOpen_ofAnEmptyDatabase_saysToMigrate() throws {
        let fresh = try TestPostgres.freshSchema()
        defer { TestPostgres.drop(schema: fresh.schema) }
        XCTAssertThrowsError(try PostgresLedger(url: fresh.url, access: .readOnly)) { error in
            XCTAssertTrue("\(error)".contains("settle migrate"), "\(error)")
        }
    }
}
