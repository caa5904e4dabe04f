import Foundation
import SettleTesting
import XCTest
@testable import SettleApp
@testable import SettleBase
@testable import SettleModel
@testable import SettleLedger

/// Apple's signed numbers (issue 32, item 16): purchase, revocation and signed dates of
/// Int64.min, Int64.max, -1 and 0 in genuinely signed notifications and transactions, and a
/// ledger whose history cursor a backend's SQL broke. Nothing traps; each purchase is still
/// settled once, each refund revoked once. Runs on SQLite and PostgreSQL.
extension NotificationInboxTests {
    func checkAppleDatesOfAnySize() throws {
        try configure(delivery: try revokingDelivery(), extra: [("consumption", .object([("respond", .bool(true)), ("customer_consented", .bool(true))]))])
        let ledger = try makeLedger()
        let (reconciler, inbox) = try settle(ledger)
        let dates: [Int64] = [.min, .max, -1, 0]
        for (index, date) in dates.enumerated() {
            let id = "95\(index)"
            let bought = purchase(id, token: buyer, atMs: date)
            XCTAssertEqual(try tell(inbox, "ONE_TIME_CHARGE", bought).outcome, "order_created", "\(date)")
            // Signed at an absurd time: the certificate is not valid then, so it is refused, never a trap.
            let late = try notification("ONE_TIME_CHARGE", bought, signedAtMs: date).signed()
            guard case .refused = inbox.receive(signedPayload: late, source: "endpoint") else {
                return XCTFail("a notification signed at \(date) was not refused")
            }
        }
        _ = try reconciler.runPass()
        XCTAssertEqual(Set(world.deliveries), Set(dates.indices.map { "95\($0) apple-95\($0)" }))
        for (index, date) in dates.enumerated() {
            var refunded = purchase("95\(index)", token: buyer, atMs: date)
            refunded.revocationDateMs = dates[(index + 1) % dates.count]
            XCTAssertEqual(try tell(inbox, "CONSUMPTION_REQUEST", refunded, reason: "UNINTENDED_PURCHASE").outcome, "answer_queued")
            XCTAssertEqual(try tell(inbox, "REFUND", refunded).outcome, "revoke_queued", "\(date)")
        }
        // Apple's history cursor, broken by SQL: the catch-up still reads from a sane window.
        try startedHistory(ledger, secondsAgo: 60)
        try execute("UPDATE notification_cursor SET synced_until_ms = \(Int64.min), window_start_ms = NULL, window_end_ms = NULL")
        XCTAssertNil(try inbox.syncHistory().stoppedBecause)
        XCTAssertGreaterThan(try ledger.notificationCursor(environment: .production).syncedUntilMs ?? 0, nowMs - 60_000)
        _ = try reconciler.runPass()
        _ = try reconciler.runPass()
        XCTAssertEqual(Set(revokes), Set(dates.indices.map { "revoke:95\($0) apple-95\($0)" }))
        _ = try ledger.summary(OrderFilter())
    }
}
