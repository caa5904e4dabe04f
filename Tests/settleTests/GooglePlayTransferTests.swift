import Foundation
import SettleApp
import SettleBase
import SettleGooglePlay
import SettleLedger
import SettleModel
import Synchronization
import XCTest

/// `settle transfer` and `settle redeliver` of Google Play orders (issue 26): a voiding after a
/// transfer revokes from the new holder, and a redelivery after it re-sends that revoke.
final class GooglePlayTransferTests: GooglePlayTestCase {
    /// Hook calls "<route> <key> <order> <user>", in order.
    var calls: [String] { ((try? String(contentsOfFile: world.folder + "/calls.log", encoding: .utf8)) ?? "").split(separator: "\n").map(String.init) }

    func document(_ key: String) throws -> JSONValue {
        try JSONValue.parse(Data(contentsOf: URL(fileURLWithPath: world.folder + "/doc-\(key).json")))
    }

    override func setUpWithError() throws {
        try super.setUpWithError()
        for route in ["grant", "revoke"] {
            try world.write("\(route).sh", """
                #!/bin/sh
                payload=$(cat)
                user=$(printf '%s' "$payload" | sed -n 's/.*"user_id":"\\([^"]*\\)".*/\\1/p')
                echo "\(route) $SETTLE_IDEMPOTENCY_KEY $SETTLE_ORDER_ID $user" >> "\(world.folder)/calls.log"
                printf '%s' "$payload" > "\(world.folder)/doc-$SETTLE_IDEMPOTENCY_KEY.json"
                exit 0
                """, mode: 0o755)
        }
        try writePlayConfig(extra: [("delivery", .object([("command", .array([.string(world.folder + "/grant.sh")])),
                                                          ("revoke_command", .array([.string(world.folder + "/revoke.sh")])),
                                                          ("timeout_seconds", .number(10))]))])
    }

    func void(_ token: String, orderId: String) throws {
        fake.script(voided: [VoidedPurchase(purchaseToken: PurchaseToken(token)!, orderId: orderId,
                                            purchaseTimeMillis: (world.time.unixSeconds - 600) * 1000,
                                            voidedTimeMillis: world.time.unixSeconds * 1000, rawVoidedSource: 0, rawVoidedReason: 1)])
        let database = try SQLiteDatabase(path: world.ledgerPath, mode: .readWrite)
        _ = try database.query("UPDATE play_cursor SET polled_at = 0")
        try database.close()
    }

    func testTransferOfAPlayOrder_thenAVoiding_revokesFromTheNewHolder_andRedeliverResendsThatRevoke() throws {
        let token = scriptProduct("t", product: gems, orderId: "GPA.T")
        try enqueuePlay("o-t", token: token)
        try settle(expecting: 0, ["reconcile"])
        XCTAssertEqual(try state("o-t"), "finished")

        let asked = try settle(expecting: 0, ["transfer", "o-t", "--to-user", "u-2", "--note", "ticket 20"])
        XCTAssertEqual(asked.stdout, "transfer of o-t to u-2 requested: the next pass revokes it from u-1 and grants it to u-2\n")
        try settle(expecting: 0, ["reconcile"])
        XCTAssertEqual(calls, ["grant GPA.T o-t u-1", "revoke transfer:o-t:1:revoke o-t u-1", "grant transfer:o-t:1:grant o-t u-2"])
        XCTAssertEqual(try document("transfer:o-t:1:grant")["store"], .string("google_play"))
        XCTAssertEqual(try document("transfer:o-t:1:revoke")["transaction_id"], .string("GPA.T"))
        XCTAssertEqual(try order("o-t")["user_id"], .string("u-2"))

        // Google voids it: the revoke goes to the one who holds it now.
        try void(token, orderId: "GPA.T")
        try settle(expecting: 0, ["reconcile"])
        XCTAssertEqual(calls.last, "revoke revoke:GPA.T o-t u-2")
        XCTAssertEqual(try document("revoke:GPA.T")["user_id"], .string("u-2"))
        let voided = try settle(["transfer", "o-t", "--to-user", "u-3", "--note", "n"])
        XCTAssertEqual(voided.status, 65)
        XCTAssertTrue(voided.stderr.contains("refunded or revoked"), voided.stderr)

        // The backend lost the revoke: the last thing settle finished is re-sent, to the revoke route.
        let original = try String(contentsOfFile: world.folder + "/doc-revoke:GPA.T.json", encoding: .utf8)
        let redeliver = try settle(expecting: 0, ["redeliver", "o-t", "--note", "restored"])
        XCTAssertTrue(redeliver.stdout.contains("re-sends the revoke of its refund under its original key revoke:GPA.T"), redeliver.stdout)
        try settle(expecting: 0, ["reconcile"])
        XCTAssertEqual(Array(calls.suffix(2)), ["revoke revoke:GPA.T o-t u-2", "revoke revoke:GPA.T o-t u-2"])
        XCTAssertEqual(try String(contentsOfFile: world.folder + "/doc-revoke:GPA.T.json", encoding: .utf8), original)
        let last = try XCTUnwrap(try history("o-t").last)
        XCTAssertEqual(last["kind"], .string("revoke"))
        XCTAssertEqual(last["outcome"], .string("redelivered"))
        XCTAssertEqual(last["hook_exit"], .number(0))
    }

    func testTransferThroughAWebhook_postsTheRevokeToTheRevokeURL_andTheGrantToTheGrantURL_eachConfirmedByItsKey() throws {
        let seen = Mutex<[String]>([])
        let server = try LoopbackHTTPServer { request in
            let key = request.header("Idempotency-Key") ?? ""
            let body = (try? JSONValue.parse(request.body)) ?? .null
            seen.withLock { $0.append("\(request.path) \(key) \(body["event"]?.looseString ?? "?") \(body["user_id"]?.looseString ?? "?")") }
            let field = body["event"]?.looseString == "revoke" ? "revoked" : "granted"
            return .json(200, JSONValue.object([(field, .string(key))]).data)
        }
        defer { server.stop() }
        try world.write("webhook-secret", "whsec-0123456789abcdef", mode: 0o600)
        try writePlayConfig(extra: [("delivery", .object([
            ("webhook", .object([("url", .string(server.baseURL + "/grant")), ("secret_file", .string("webhook-secret")),
                                 ("revoke_url", .string(server.baseURL + "/revoke"))])),
            ("timeout_seconds", .number(3))]))])
        let token = scriptProduct("w", product: unlock, orderId: "GPA.W")
        try enqueuePlay("o-w", token: token, product: unlock)
        try settle(expecting: 0, ["reconcile"])
        XCTAssertEqual(try state("o-w"), "finished")
        try settle(expecting: 0, ["transfer", "o-w", "--to-user", "u-2", "--note", "ticket 21"])
        try settle(expecting: 0, ["reconcile"])
        XCTAssertEqual(seen.withLock { $0 }, ["/grant GPA.W grant u-1", "/revoke transfer:o-w:1:revoke revoke u-1",
                                              "/grant transfer:o-w:1:grant grant u-2"])
        XCTAssertEqual(try order("o-w")["support_actions"]?.arrayValue?.first?["state"], .string("done"))
        XCTAssertFalse(transcript.joined().contains("whsec-0123456789abcdef"), "the webhook secret never shows")
        XCTAssertFalse(transcript.joined().contains(token), "nor the purchase token")
    }
}
