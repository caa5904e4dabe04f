import Foundation
import SettleApp
import SettleTesting
import XCTest
import SettleBase
import SettleModel
import SettleGooglePlay
import SettleLedger
#if canImport(Glibc)
import Glibc
@testable import SettleGooglePlayModule
#endif

/// Numbers from outside on a running `settle run` (issue 32, item 16): an authenticated push
/// carrying an absurd time, and a stored push whose row a backend broke, are each answered
/// `not_applied` with the reason, and neither the daemon nor its restart dies on them.
extension GooglePlayNotificationTests {
    func playNotification(_ messageId: String) throws -> (outcome: String, detail: String?, state: String)? {
        let database = try SQLiteDatabase(path: world.ledgerPath, mode: .readOnly)
        defer { try? database.close() }
        guard let row = try database.query("SELECT outcome, detail, state FROM play_notifications WHERE message_id = ?",
                                           [.text(messageId)]).first else { return nil }
        return (row.string("outcome") ?? "", row.string("detail"), row.string("state") ?? "")
    }

    func testVoidedPushWithAnAbsurdEventTime_isStoredNotApplied_andNeitherTheDaemonNorItsRestartDies() throws {
        let token = scriptProduct("absurd", product: unlock, orderId: "GPA.AB")
        try enqueuePlay("o-ab", token: token, product: unlock)
        let (daemon, port) = try startDaemon()
        XCTAssertTrue(eventually(within: 20) { (try? SQLiteLedger(readOnlyPath: world.ledgerPath).orderRecord("o-ab"))??.order.state == .finished },
                      log(daemon))
        let good = try fake.pushToken(audience: Self.audience, email: Self.pushEmail)
        for (id, time) in [("m-min", Int64.min), ("m-max", Int64.max), ("m-neg", -1), ("m-zero", 0)] {
            let voided = DeveloperNotification(packageName: Self.packageName, eventTimeMillis: time,
                                               kind: .voidedPurchase(VoidedPurchaseNotification(
                                                   purchaseToken: PurchaseToken(token)!, orderId: "GPA.AB", rawProductType: 2, rawRefundType: 1)))
            XCTAssertEqual(try push(port, PubSubPush.body(messageId: id, notification: voided), token: good), 200, id)
        }
        daemon.send(SIGUSR1)
        XCTAssertTrue(eventually(within: 20) { (try? playNotification("m-min"))??.state == "done" || !daemon.isRunning }, log(daemon))
        XCTAssertTrue(daemon.isRunning, "settle run died on the push: \(log(daemon))")
        XCTAssertTrue(eventually(within: 20) { ["m-max", "m-neg", "m-zero"].allSatisfy { (try? playNotification($0))??.state == "done" } },
                      log(daemon))
        for (id, time) in [("m-min", "-9223372036854775808"), ("m-max", "9223372036854775807"), ("m-neg", "-1"), ("m-zero", "0")] {
            let stored = try XCTUnwrap(try playNotification(id))
            XCTAssertEqual(stored.outcome, "not_applied", id)
            XCTAssertEqual(stored.detail, "eventTimeMillis \(time) is not a time between 2000-01-01T00:00:00Z and "
                           + "2200-01-01T00:00:00Z; nothing was applied; a person looks", id)
        }
        XCTAssertEqual(try SQLiteLedger(readOnlyPath: world.ledgerPath).orderRecord("o-ab")?.order.state, .finished)

        // A stored push whose row a backend wrote by SQL with an absurd received time.
        daemon.send(SIGKILL)
        _ = daemon.wait()
        let voided = DeveloperNotification(packageName: Self.packageName, eventTimeMillis: nil,
                                           kind: .voidedPurchase(VoidedPurchaseNotification(
                                               purchaseToken: PurchaseToken(token)!, orderId: "GPA.AB", rawProductType: 2, rawRefundType: 1)))
        let database = try SQLiteDatabase(path: world.ledgerPath, mode: .readWrite)
        for (id, received) in [("m-row-min", Int64.min), ("m-row-max", Int64.max)] {
            try database.query("""
                INSERT INTO play_notifications(message_id, kind, received_at, outcome, payload)
                VALUES (?, 'voided_purchase', ?, 'received', ?)
                """, [.text(id), .integer(received), .text(voided.json.serialized())])
        }
        try database.close()
        let (restarted, _) = try startDaemon()
        XCTAssertTrue(eventually(within: 20) { (try? playNotification("m-row-min"))??.state == "done" || !restarted.isRunning },
                      log(restarted))
        XCTAssertTrue(restarted.isRunning, "the restarted settle run died on a stored row: \(log(restarted))")
        for (id, time) in [("m-row-min", "-9223372036854775808"), ("m-row-max", "9223372036854775807")] {
            let stored = try XCTUnwrap(try playNotification(id))
            XCTAssertEqual(stored.outcome, "not_applied", id)
            XCTAssertEqual(stored.detail, "received_at \(time) is not a time between 2000-01-01T00:00:00Z and "
                           + "2200-01-01T00:00:00Z (the row was not written by settle); nothing was applied; a person looks", id)
        }
        restarted.send(SIGUSR1)
        XCTAssertTrue(eventually(within: 10) { log(restarted).components(separatedBy: "pass.finished").count > 2 }, log(restarted))
        XCTAssertTrue(restarted.isRunning, log(restarted))
    }
}
