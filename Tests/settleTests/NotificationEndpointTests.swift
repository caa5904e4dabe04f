import Foundation
import SettleApp
import SettleTesting
import XCTest
import SettleBase
import SettleAppStoreSimulator

/// The endpoint of a running `settle run`, over real HTTP: what is Apple's and ours is stored
/// once and answered 200; everything else gets a 4xx and a log line, and the daemon lives on.
class NotificationEndpointTests: NotificationTestCase {
    func testValidNotification_ofAPurchaseNobodyEnqueued_isStoredAnswered200_andDeliveredOnce() throws {
        try writeNotificationConfig()
        let (daemon, url) = try startDaemon()
        let notification = applePurchase("300", token: buyer)
        XCTAssertEqual(try world.simulator.send(notification, to: url), 200)
        XCTAssertTrue(eventually(within: 10) { stateInLedger("apple-300") == "finished" }, log(daemon))
        XCTAssertEqual(world.deliveries, ["300 apple-300"])
        let order = try order("apple-300")
        XCTAssertEqual(order["origin"]?.looseString, "apple_notification")
        XCTAssertEqual(order["user_id"]?.looseString, buyer)
        XCTAssertEqual(order["notifications"]?.arrayValue?.first?["uuid"]?.looseString, notification.uuid)
        let stored = try statusJSON(["--notification", notification.uuid])
        XCTAssertEqual(stored["type"]?.looseString, "ONE_TIME_CHARGE")
        XCTAssertEqual(stored["outcome"]?.looseString, "order_created")
        XCTAssertEqual(stored["source"]?.looseString, "endpoint")
        XCTAssertTrue(log(daemon).contains("notification.stored"))
    }

    func testReplayedNotification_isANoOp_answered200_andDeliveredOnce() throws {
        try writeNotificationConfig()
        let (daemon, url) = try startDaemon()
        let notification = applePurchase("301", token: buyer)
        XCTAssertEqual(try world.simulator.send(notification, to: url), 200)
        XCTAssertTrue(eventually(within: 10) { stateInLedger("apple-301") == "finished" }, log(daemon))
        XCTAssertEqual(try world.simulator.send(notification, to: url), 200)
        XCTAssertEqual(try rowCount("notifications"), 1)
        daemon.send(SIGUSR1)
        XCTAssertTrue(eventually(within: 10) { log(daemon).components(separatedBy: "pass.finished").count >= 3 })
        XCTAssertEqual(world.deliveries, ["301 apple-301"])
    }

    func testForgedWrongBundleAndWrongEnvironment_are403_storeNothing_andAreLogged() throws {
        try writeNotificationConfig(acceptSandbox: false)
        let (daemon, url) = try startDaemon()
        let genuine = try applePurchase("302", token: buyer).signed()
        let parts = genuine.split(separator: ".")
        var altered = try JSONValue.parse(Base64URL.decode(parts[1])!)
        if case var .object(members) = altered, let i = members.firstIndex(where: { $0.0 == "notificationType" }) {
            members[i].1 = .string("REFUND")
            altered = .object(members)
        }
        let forged = "\(parts[0]).\(Base64URL.encode(altered.data)).\(parts[2])"
        XCTAssertEqual(post(url, body: JSONValue.object([("signedPayload", .string(forged))]).serialized()), 403)

        var otherApp = applePurchase("303", token: buyer)
        otherApp.bundleId = "com.example.other"
        XCTAssertEqual(try world.simulator.send(otherApp, to: url), 403)

        let sandbox = applePurchase("304", token: buyer, environment: "Sandbox")
        XCTAssertEqual(try world.simulator.send(sandbox, to: url), 403)

        var wrongApp = applePurchase("305", token: buyer)
        wrongApp.appAppleId = 42
        XCTAssertEqual(try world.simulator.send(wrongApp, to: url), 403, "production notifications must name server_api.app_apple_id")

        XCTAssertEqual(try rowCount("notifications"), 0)
        for reason in ["signature_invalid", "bundle_mismatch", "environment_mismatch"] {
            XCTAssertTrue(log(daemon).contains("notification.refused") && log(daemon).contains("reason=\(reason)"), "no \(reason) in \(log(daemon))")
        }
        XCTAssertTrue(daemon.isRunning)
    }

    func testRescindConsentAndExternalPurchaseToken_overRealHTTP_areStoredRecordedAndAnswered200() throws {
        try writeNotificationConfig()
        let (daemon, url) = try startDaemon()
        // Shaped as Apple's library's signedRescindConsentNotification / signedExternalPurchaseTokenNotification.
        let rescind = SimulatedNotification(type: "RESCIND_CONSENT", transaction: nil, bundleId: world.bundleId,
                                            signedDateMs: nowMs - 2000, body: .appData)
        let token = SimulatedNotification(type: "EXTERNAL_PURCHASE_TOKEN", subtype: "UNREPORTED", transaction: nil,
                                          bundleId: world.bundleId, environment: "Sandbox", signedDateMs: nowMs - 1000,
                                          body: .externalPurchaseToken(externalPurchaseId: "SANDBOX_b2158121-7af9-49d4-9561-1f588205523e"))
        for n in [rescind, token] {
            XCTAssertEqual(try world.simulator.send(n, to: url), 200, log(daemon))
            let stored = try statusJSON(["--notification", n.uuid])
            XCTAssertEqual(stored["type"]?.looseString, n.type)
            XCTAssertEqual(stored["outcome"]?.looseString, "recorded")
            XCTAssertEqual(stored["environment"]?.looseString, n.environment)
        }
        XCTAssertFalse(log(daemon).contains("notification.refused"), log(daemon))
        XCTAssertTrue(daemon.isRunning)
    }

    func testMalformedWrongMethodWrongPathAndOversized_get4xx_andTheDaemonLivesOn() throws {
        try writeNotificationConfig()
        let (daemon, url) = try startDaemon()
        XCTAssertEqual(post(url, body: "{not json"), 400)
        XCTAssertEqual(post(url, body: "{\"signedPayload\": 5}"), 400)
        XCTAssertEqual(post(url, body: "{\"signedPayload\": \"a.b.c\"}"), 400)
        XCTAssertEqual(rawExchange(url, "GET /apple/notifications/v2 HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"), 405)
        XCTAssertEqual(rawExchange(url, "POST /other HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\nConnection: close\r\n\r\n{}"), 404)
        let big = "{\"signedPayload\": \"" + String(repeating: "a", count: 70 * 1024) + "\"}"
        XCTAssertEqual(post(url, body: big), 413)
        // Chunked, so no Content-Length announces the size: cut off as it arrives.
        let chunk = String(repeating: "b", count: 40 * 1024)
        let hex = String(chunk.utf8.count, radix: 16)
        XCTAssertEqual(rawExchange(url, "POST /apple/notifications/v2 HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n"
                                   + "\(hex)\r\n\(chunk)\r\n\(hex)\r\n\(chunk)\r\n0\r\n\r\n"), 413)
        XCTAssertTrue(daemon.isRunning)
        XCTAssertEqual(log(daemon).components(separatedBy: "notifications.bad_request").count - 1, 6, log(daemon))
        XCTAssertTrue(log(daemon).contains("reason=jws_malformed"), "a signedPayload that is no JWS is refused by the verifier")
        XCTAssertEqual(try world.simulator.send(applePurchase("306", token: buyer), to: url), 200, "still serving")
    }

    func testSlowSender_isCutOffAtTheRequestDeadline_whileOthersAreServed() throws {
        try writeNotificationConfig(timeoutSeconds: 2)
        let (daemon, url) = try startDaemon()
        let body = JSONValue.object([("signedPayload", .string(try applePurchase("307", token: buyer).signed()))]).serialized()
        let request = "POST /apple/notifications/v2 HTTP/1.1\r\nHost: x\r\nContent-Length: \(body.utf8.count)\r\nConnection: close\r\n\r\n" + body
        let slow = DispatchQueue.global()
        let group = DispatchGroup()
        nonisolated(unsafe) var slowStatus: Int? = -1
        group.enter()
        slow.async {
            // Headers and a little body, then silence past the 2-second idle timeout.
            slowStatus = NotificationTestCase.rawExchange(url, request, pauseAfter: 100, pause: 4)
            group.leave()
        }
        Thread.sleep(forTimeInterval: 0.3)
        XCTAssertEqual(try world.simulator.send(applePurchase("308", token: buyer), to: url), 200, "a slow sender blocks nobody")
        group.wait()
        XCTAssertNil(slowStatus, "the slow sender's connection is closed without an answer")
        XCTAssertNil(stateInLedger("apple-307"))
        XCTAssertTrue(daemon.isRunning)
    }

    func testSIGTERM_stopsTheEndpointAndTheDaemonCleanly() throws {
        try writeNotificationConfig()
        let (daemon, url) = try startDaemon()
        XCTAssertEqual(try world.simulator.send(applePurchase("309", token: buyer), to: url), 200)
        daemon.send(SIGTERM)
        let result = daemon.wait()
        XCTAssertEqual(result.status, 0, result.stderr)
        XCTAssertTrue(result.stderr.contains("daemon.stopped clean=true"), result.stderr)
        XCTAssertNil(post(url, body: "{}"), "nothing listens any more")
    }
}
