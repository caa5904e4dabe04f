import Foundation
import SettleTesting
import XCTest
@testable import SettleApp
@testable import SettleBase
@testable import SettleModel
@testable import SettleLedger
@testable import SettleGooglePlay
@testable import SettleEngine
@testable import SettleGooglePlayModule

/// The ledger's rows are numbers from outside too (issue 32, item 16): a backend's SQL may put
/// anything settle never writes in them, and a pass computing from them must not trap. Each
/// check runs on SQLite (`GooglePlayReconcileTests`) and PostgreSQL (`GooglePlayReconcilePostgresTests`).
extension GooglePlayReconcileTests {
    static let int64Min = "-9223372036854775808"
    static let int64Max = "9223372036854775807"

    func checkOrdersWithAbsurdTimesAndAttemptsInTheirRows() throws {
        let ledger = try makeLedger()
        let early = product("early", orderId: "GPA.EARLY", account: "alice")
        let late = product("late", orderId: "GPA.LATE", account: "alice")
        let tried = product("tried", orderId: "GPA.TRIED", account: "alice")
        let voided = product("voided", orderId: "GPA.VOIDED", account: "alice", quantity: 3)
        for (id, token) in [("o-early", early), ("o-late", late), ("o-tried", tried), ("o-voided", voided)] {
            try enqueue(ledger, id, user: "alice", token: token)
        }
        try world.write("fail-o-tried", "")
        // PostgreSQL's `attempts` is an integer of 4 bytes: its largest is what a backend can write there.
        let most = schema == nil ? Self.int64Max : String(Int32.max)
        try execute("UPDATE orders SET created_at = \(Self.int64Min) WHERE order_id = 'o-early'")
        try execute("UPDATE orders SET created_at = \(Self.int64Max) WHERE order_id = 'o-late'")
        try execute("UPDATE orders SET attempts = \(most) WHERE order_id = 'o-tried'")
        try execute("INSERT INTO play_voided(google_order_id, quantity, voided_at, source) VALUES ('GPA.VOIDED', \(most), 0, 'sql')")
        // Status and the pass read Google's refund clocks from these rows.
        _ = try ledger.summary(OrderFilter())
        try pass(ledger)
        XCTAssertEqual(try order(ledger, "o-early")?.state, .finished)
        XCTAssertEqual(try order(ledger, "o-late")?.state, .finished)
        let retried = try XCTUnwrap(try order(ledger, "o-tried"))
        XCTAssertEqual(retried.state, .needsAttention, "out of attempts: a person looks")
        XCTAssertEqual(retried.attempts, 1_000_000, "read back clamped")
        XCTAssertNotEqual(try order(ledger, "o-voided")?.state, .finished)
        XCTAssertFalse(deliveries.contains { $0.hasPrefix("GPA.VOIDED") }, "a purchase voided whole was granted")
        let status = try ledger.summary(OrderFilter())
        XCTAssertTrue(status.refundDeadlines.allSatisfy { $0.refundAt <= PlausibleTime.latestSeconds + Store.googlePlay.refundWindowSeconds! })
        XCTAssertNoThrow(try pass(ledger))
    }

    func checkVoidedPollCursorWithAbsurdTimes() throws {
        let ledger = try makeLedger()
        try execute("DELETE FROM play_cursor")
        try execute("INSERT INTO play_cursor(id, voided_since_ms, polled_at) VALUES (1, \(Self.int64Max), \(Self.int64Min))")
        try pass(ledger)
        let cursor = try ledger.playVoidedCursor()
        XCTAssertEqual(cursor.polledAt, world.time.unixSeconds, "polled again")
        XCTAssertLessThanOrEqual(try XCTUnwrap(cursor.sinceMs), nowMs)
        // Google lists a voiding at Int64.max: the cursor still never passes now.
        let bought = product("far", product: unlock, orderId: "GPA.FAR", account: "alice")
        fake.script(voided: [VoidedPurchase(purchaseToken: bought, orderId: "GPA.FAR", voidedTimeMillis: .max, rawVoidedSource: 0,
                                            rawVoidedReason: 1)])
        world.time.advance(by: 86_400)
        try pass(ledger)
        XCTAssertLessThanOrEqual(try XCTUnwrap(try ledger.playVoidedCursor().sinceMs), nowMs)
    }

    func checkStoredPushesWithAbsurdTimes() throws {
        let ledger = try makeLedger()
        let bought = product("pushed", product: unlock, orderId: "GPA.P", account: "alice")
        try enqueue(ledger, "o-p", user: "alice", token: bought, product: unlock)
        try pass(ledger)
        let voided = VoidedPurchaseNotification(purchaseToken: bought, orderId: "GPA.P", rawProductType: 2, rawRefundType: 1)
        let review = PendingRefundReviewNotification(pendingRefundToken: "prt", orderId: "GPA.P")
        var expected: [String: String] = [:]
        for (index, time) in [Int64.min, .max, -1, 0, 946_684_799_999, 7_258_118_400_001].enumerated() {
            for (name, kind) in [("void", DeveloperNotification.Kind.voidedPurchase(voided)), ("review", .pendingRefundReview(review))] {
                let notification = DeveloperNotification(packageName: PlayTestWorld.packageName, eventTimeMillis: time, kind: kind)
                let (kindName, token) = PlayNotificationInbox.describe(notification)
                XCTAssertTrue(try ledger.storePlayNotification(messageId: "m-\(name)-\(index)", kind: kindName, token: token,
                                                               payload: notification.json.serialized()))
                expected["m-\(name)-\(index)"] = "eventTimeMillis \(time) is not a time between 2000-01-01T00:00:00Z and "
                    + "2200-01-01T00:00:00Z; nothing was applied; a person looks"
            }
        }
        // A row a backend wrote by SQL, received at Int64.min and at Int64.max.
        let bare = DeveloperNotification(packageName: PlayTestWorld.packageName, eventTimeMillis: nil, kind: .voidedPurchase(voided))
        for (id, received) in [("m-row-min", Self.int64Min), ("m-row-max", Self.int64Max)] {
            try execute("""
                INSERT INTO play_notifications(message_id, kind, received_at, outcome, payload)
                VALUES ('\(id)', 'voided_purchase', \(received), 'received', '\(bare.json.serialized())')
                """)
            expected[id] = "received_at \(received) is not a time between 2000-01-01T00:00:00Z and 2200-01-01T00:00:00Z "
                + "(the row was not written by settle); nothing was applied; a person looks"
        }
        try pass(ledger)
        for (id, detail) in expected {
            let stored = try XCTUnwrap(try ledger.playNotification(messageId: id), id)
            XCTAssertEqual(stored.outcome, "not_applied", id)
            XCTAssertEqual(stored.detail, detail, id)
        }
        XCTAssertEqual(try waitingPushes(ledger), [], "claimed again")
        XCTAssertEqual(revokes, [])
        XCTAssertEqual(try order(ledger, "o-p")?.state, .finished)
    }
}

