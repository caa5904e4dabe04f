import XCTest
@testable import SettleApp
@testable import SettleBase
@testable import SettleGooglePlay

final class PubSubPushTests: XCTestCase {
    private let token = PlayTestWorld.token(PlayTestWorld.tokenText)

    func testBody_decodesEachKindOfDeveloperNotification() throws {
        let kinds: [DeveloperNotification.Kind] = [
            .oneTimeProduct(OneTimeProductNotification(rawNotificationType: 1, purchaseToken: token, sku: "gems_100")),
            .subscription(SubscriptionNotification(rawNotificationType: 4, purchaseToken: token, subscriptionId: "pro_monthly")),
            .voidedPurchase(VoidedPurchaseNotification(purchaseToken: token, orderId: "GPA.1", rawProductType: 2, rawRefundType: 1)),
            .test,
        ]
        for (index, kind) in kinds.enumerated() {
            let sent = DeveloperNotification(packageName: PlayTestWorld.packageName, eventTimeMillis: 1_796_000_000_000, kind: kind)
            let push = try PubSubPush(body: PubSubPush.body(messageId: "m-\(index)", notification: sent))
            XCTAssertEqual(push.messageId, "m-\(index)")
            XCTAssertEqual(push.publishTime, "2026-12-01T10:00:00.000Z")
            XCTAssertEqual(push.subscription, "projects/settle-test/subscriptions/play-rtdn")
            XCTAssertEqual(push.notification, sent)
        }
        let purchased = try PubSubPush(body: PubSubPush.body(messageId: "m", notification: DeveloperNotification(
            packageName: "p", eventTimeMillis: nil, kind: kinds[0])))
        guard case let .oneTimeProduct(n) = purchased.notification.kind else { return XCTFail() }
        XCTAssertEqual(n.notificationType, .purchased)
        XCTAssertEqual(n.purchaseToken, token)
    }

    func testBody_aKindSettleDoesNotKnow_survivesWithItsRawData() throws {
        let data = Data(#"{"version":"1.0","packageName":"p","eventTimeMillis":"1","futureProductNotification":{"purchaseToken":"t"}}"#.utf8)
        let body = JSONValue.object([("message", .object([("data", .string(data.base64EncodedString())), ("messageId", .string("9"))])),
                                     ("subscription", .string("s"))]).data
        let push = try PubSubPush(body: body)
        XCTAssertEqual(push.notification.kind, .unknown(["futureProductNotification"]))
        XCTAssertEqual(push.data, data)
    }

    func testBody_refusesWhatIsNotAPush_withAReason() {
        func problem(_ body: String) -> PubSubPush.Problem? {
            do {
                _ = try PubSubPush(body: Data(body.utf8))
                return nil
            } catch {
                return error
            }
        }
        XCTAssertEqual(problem("nope"), .notJSON)
        XCTAssertEqual(problem(#"{"subscription":"s"}"#), .noMessage)
        XCTAssertEqual(problem(#"{"message":{"data":"e30="}}"#), .noMessageId)
        XCTAssertEqual(problem(#"{"message":{"data":"%%%","messageId":"1"}}"#), .dataNotBase64)
        let noToken = Data(#"{"oneTimeProductNotification":{"notificationType":1,"sku":"x"}}"#.utf8).base64EncodedString()
        XCTAssertEqual(problem(#"{"message":{"data":"\#(noToken)","messageId":"1"}}"#), .missingPurchaseToken)
    }

    // MARK: Push authentication

    private func refusal(_ world: PlayTestWorld, _ authorization: String?) -> PushAuthenticator.Refusal? {
        if case let .failure(refusal) = world.pushAuthenticator.authenticate(authorization: authorization) { return refusal }
        return nil
    }

    func testAuthenticate_aTokenGoogleSignedForUs_isAccepted() throws {
        let world = try PlayTestWorld()
        let good = try world.fake.pushToken(audience: PlayTestWorld.audience, email: PlayTestWorld.pushEmail)
        XCTAssertNil(refusal(world, "Bearer \(good)"))
        XCTAssertNil(refusal(world, "bearer \(good)"))
        let schemeless = try world.fake.pushToken(audience: PlayTestWorld.audience, email: PlayTestWorld.pushEmail, issuer: "accounts.google.com")
        XCTAssertNil(refusal(world, "Bearer \(schemeless)"))
    }

    func testAuthenticate_forgedOrWrongTokens_areRefusedEachWithItsReason() throws {
        let world = try PlayTestWorld()
        let fake = world.fake
        let (audience, email) = (PlayTestWorld.audience, PlayTestWorld.pushEmail)
        let now = world.time.unixSeconds
        let noneHeader = Base64URL.encode(JSONValue.object([("alg", .string("none")), ("kid", .string("fake-push-key"))]).data)
        let goodClaims = try fake.pushToken(audience: audience, email: email).split(separator: ".")[1]
        let cases: [(String?, PushAuthenticator.Refusal)] = [
            (nil, .missingToken),
            ("Basic dXNlcjpwYXNz", .missingToken),
            ("Bearer not.a.jwt", .malformed),
            ("Bearer \(noneHeader).\(goodClaims).", .unsupportedAlgorithm),
            ("Bearer " + (try fake.pushToken(audience: audience, email: email, signer: PlayTestKeys.stranger)), .badSignature),
            ("Bearer " + (try fake.pushToken(audience: audience, email: email, signer: PlayTestKeys.stranger, keyId: "other")), .unknownKey),
            ("Bearer " + (try fake.pushToken(audience: "https://evil.example.com/push", email: email)), .wrongAudience),
            ("Bearer " + (try fake.pushToken(audience: audience, email: "attacker@evil.iam.gserviceaccount.com")), .wrongEmail),
            ("Bearer " + (try fake.pushToken(audience: audience, email: email, emailVerified: false)), .emailNotVerified),
            ("Bearer " + (try fake.pushToken(audience: audience, email: email, issuedAt: now - 7200, lifetime: 3600)), .expired),
            ("Bearer " + (try fake.pushToken(audience: audience, email: email, issuedAt: now + 600)), .issuedInFuture),
            ("Bearer " + (try fake.pushToken(audience: audience, email: email, issuer: "https://evil.example.com")), .wrongIssuer),
        ]
        for (authorization, expected) in cases {
            XCTAssertEqual(refusal(world, authorization), expected, authorization ?? "nil")
        }
    }

    func testAuthenticate_aTokenExpiresWithTheClock_neverBySleeping() throws {
        let world = try PlayTestWorld()
        let good = try world.fake.pushToken(audience: PlayTestWorld.audience, email: PlayTestWorld.pushEmail, lifetime: 600)
        XCTAssertNil(refusal(world, "Bearer \(good)"))
        world.time.advance(by: 600)
        XCTAssertEqual(refusal(world, "Bearer \(good)"), .expired)
    }
}
