import Foundation
import SettleTesting
import Synchronization
import XCTest
@testable import SettleApp
@testable import SettleModel
@testable import SettleAppStore
@testable import SettleLedger
import SettleAppStoreModule

/// The notification transitions' contract on every back end, as several `settle run` see it:
/// each opens the ledger on its own connection(s) (`LedgerBackEnd.another`), as another host
/// does on PostgreSQL.
extension LedgerContractTests {
    func appleNotification(_ type: String, transaction id: String, uuid: String = UUID().uuidString.lowercased(),
                           user: String = "6f1e4c2a-5b3d-4e8f-9a0b-1c2d3e4f5a6b") throws -> AppleNotification {
        let transaction = try SignedTransaction(decoding: .object([
            ("transactionId", .string(id)), ("originalTransactionId", .string(id)), ("bundleId", .string(world.bundleId)),
            ("productId", .string(world.coins)), ("purchaseDate", .number(1_000)), ("environment", .string("Production")),
            ("appAccountToken", .string(user)),
        ]))
        return AppleNotification(uuid: uuid, type: type, subtype: nil, environment: .production, signedDateMs: 2_000,
                                 transaction: transaction, signedTransactionInfo: nil, consumptionRequestReason: nil,
                                 revocationReason: nil, signedPayload: "signed-\(uuid)")
    }

    var rules: NotificationRules {
        NotificationRules(eligibility: PurchaseEligibility(products: [world.coins: .consumable],
                                                           binding: UserBinding(tokenSource: .userId)),
                          answerConsumptionRequests: true)
    }

    func testIngest_theSameNotificationReachingTwoHostsAtOnce_isStoredAndAppliedOnce_theOtherIsADuplicate_onEveryBackEnd() throws {
        try onEachBackEnd { b in
            let hosts = [b.store, try b.another()]
            let rules = self.rules
            for round in 0..<5 {
                let notification = try appleNotification("ONE_TIME_CHARGE", transaction: "70\(round)")
                let results = Mutex<[IngestResult]>([])
                let failures = Mutex<[String]>([])
                DispatchQueue.concurrentPerform(iterations: hosts.count) { i in
                    do {
                        let result = try hosts[i].ingest(notification, source: "endpoint", rules: rules)
                        results.withLock { $0.append(result) }
                    } catch {
                        failures.withLock { $0.append("\(error)") }
                    }
                }
                XCTAssertEqual(failures.withLock { $0 }, [], b.name)
                let all = results.withLock { $0 }
                XCTAssertEqual(all.filter { !$0.duplicate }.map(\.outcome), ["order_created"], b.name)
                XCTAssertEqual(all.filter(\.duplicate).count, 1, b.name)
                XCTAssertEqual(try b.store.orderRecord("apple-70\(round)")?.history.filter { $0.kind == .notification }.count, 1, b.name)
            }
            XCTAssertEqual(try b.store.summary(OrderFilter(limit: 0)).counts[.pending], 5, b.name)
        }
    }

    func testIngest_twoNotificationsOfOnePurchaseReachingTwoHostsAtOnce_makeOneOrder_onEveryBackEnd() throws {
        try onEachBackEnd { b in
            let hosts = [b.store, try b.another()]
            let rules = self.rules
            // Apple's notification and its history copy have one UUID; a purchase's SUBSCRIBED and
            // ONE_TIME_CHARGE-like pairs have two: both about transaction 720.
            let pair = [try appleNotification("ONE_TIME_CHARGE", transaction: "720"), try appleNotification("ONE_TIME_CHARGE", transaction: "720")]
            let failures = Mutex<[String]>([])
            DispatchQueue.concurrentPerform(iterations: 2) { i in
                do { _ = try hosts[i].ingest(pair[i], source: "endpoint", rules: rules) } catch { failures.withLock { $0.append("\(error)") } }
            }
            XCTAssertEqual(failures.withLock { $0 }, [], "\(b.name): the second waits for the first and attaches, it does not fail")
            XCTAssertEqual(Set(try pair.compactMap { try b.store.notification(uuid: $0.uuid)?.outcome }), ["order_created", "attached"], b.name)
        }
    }

    func testRevokes_claimedByOneHostAtATime_andAnOutcomeRecordedUnderALapsedClaimChangesNothing_onEveryBackEnd() throws {
        try onEachBackEnd { b in
            try enqueue(b.store, "o-1", transaction: "730")
            let claimed = try XCTUnwrap(try b.store.claim(orderId: "o-1", owner: me, leaseSeconds: 60), b.name)
            _ = try b.store.recordVerified(orderId: "o-1", owner: me, fence: claimed.order.fencingToken,
                                           match: Match(candidates: [purchase("730")], named: true), deliveryLeaseSeconds: 60, history: entry)
            XCTAssertTrue(try b.store.markFinished(orderId: "o-1", owner: me, fence: claimed.order.fencingToken, history: entry), b.name)
            XCTAssertEqual(try b.store.ingest(try appleNotification("REFUND", transaction: "730"), source: "endpoint", rules: rules).outcome,
                           "revoke_queued", b.name)
            let other = try b.another()
            let first = try b.store.claimDueRevocations(limit: 10, leaseSeconds: 300)
            XCTAssertEqual(first.map(\.0.transactionId), ["730"], b.name)
            XCTAssertEqual(try other.claimDueRevocations(limit: 10, leaseSeconds: 300).count, 0, "\(b.name): held by the first host")
            XCTAssertTrue(try other.holds(first[0].0) == true, b.name)
            // The first host stalls past its claim; the other takes the revoke over.
            world.time.advance(by: 301)
            XCTAssertFalse(try b.store.holds(first[0].0), "\(b.name): the lapsed claim is seen before the hook runs")
            let second = try other.claimDueRevocations(limit: 10, leaseSeconds: 300)
            XCTAssertEqual(second.map(\.0.transactionId), ["730"], b.name)
            XCTAssertFalse(try b.store.recordRevocation(first[0].0, state: "revoked", error: nil, nextAttemptAt: 0,
                                                        history: HistoryEntry(at: 0, kind: .revoke, outcome: "revoked")), b.name)
            XCTAssertTrue(try other.recordRevocation(second[0].0, state: "revoked", error: nil, nextAttemptAt: 0,
                                                     history: HistoryEntry(at: 0, kind: .revoke, outcome: "revoked")), b.name)
            XCTAssertEqual(try b.store.revocation(orderId: "o-1")?.state, "revoked", b.name)
            XCTAssertEqual(try b.store.revocation(orderId: "o-1")?.job.attempts, 1, "\(b.name): recorded once")
        }
    }

    func testConsumptionAnswers_claimedByOneHostAtATime_onEveryBackEnd() throws {
        try onEachBackEnd { b in
            XCTAssertEqual(try b.store.ingest(try appleNotification("CONSUMPTION_REQUEST", transaction: "740"), source: "endpoint",
                                              rules: rules).outcome, "answer_queued", b.name)
            let other = try b.another()
            let first = try b.store.claimDueConsumptionAnswers(limit: 10, leaseSeconds: 300)
            XCTAssertEqual(first.map(\.0.transactionId), ["740"], b.name)
            XCTAssertEqual(try other.claimDueConsumptionAnswers(limit: 10, leaseSeconds: 300).count, 0, b.name)
            XCTAssertTrue(try b.store.recordConsumptionAnswer(first[0].0, state: "sent", body: "{}", appleStatus: 202, error: nil,
                                                              nextAttemptAt: 0, history: entry), b.name)
            world.time.advance(by: 301)
            XCTAssertEqual(try other.claimDueConsumptionAnswers(limit: 10, leaseSeconds: 300).count, 0, "\(b.name): answered once")
        }
    }

    func testHistoryCatchUp_isHeldByOneHostAtATime_andAHostThatDiesMidPageHandsOverAtItsSavedPage_onEveryBackEnd() throws {
        try onEachBackEnd { b in
            let other = try b.another()
            var cursor = try XCTUnwrap(try b.store.claimNotificationHistory(environment: .production, owner: "host-a", leaseSeconds: 180),
                                       b.name)
            XCTAssertEqual(cursor, NotificationCursor(), "\(b.name): the first start")
            XCTAssertNil(try other.claimNotificationHistory(environment: .production, owner: "host-b", leaseSeconds: 180),
                         "\(b.name): one catch-up at a time")
            XCTAssertNotNil(try other.claimNotificationHistory(environment: .sandbox, owner: "host-b", leaseSeconds: 180),
                            "\(b.name): environments are held apart")
            cursor = NotificationCursor(syncedUntilMs: 1_000, windowStartMs: 1_000, windowEndMs: 9_000, paginationToken: "page-2", startedAtMs: 500)
            XCTAssertTrue(try b.store.saveNotificationCursor(cursor, environment: .production, owner: "host-a", leaseSeconds: 180), b.name)
            // host-a dies here: it never releases. Its lease runs out, and host-b resumes at its page.
            world.time.advance(by: 120)
            XCTAssertNil(try other.claimNotificationHistory(environment: .production, owner: "host-b", leaseSeconds: 180),
                         "\(b.name): saving a page renewed the lease")
            world.time.advance(by: 61)
            XCTAssertEqual(try other.claimNotificationHistory(environment: .production, owner: "host-b", leaseSeconds: 180), cursor, b.name)
            XCTAssertFalse(try b.store.saveNotificationCursor(NotificationCursor(syncedUntilMs: 9_000, startedAtMs: 500), environment: .production,
                                                              owner: "host-a", leaseSeconds: 180), "\(b.name): the old holder saves nothing")
            XCTAssertEqual(try b.store.notificationCursor(environment: .production), cursor, b.name)
            try other.releaseNotificationHistory(environment: .production, owner: "host-b")
            XCTAssertNotNil(try b.store.claimNotificationHistory(environment: .production, owner: "host-a", leaseSeconds: 180),
                            "\(b.name): released, the next host takes it at once")
        }
    }
}
