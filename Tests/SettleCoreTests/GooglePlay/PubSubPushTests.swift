import XCTest
@testable import SettleApp
@testable import SettleBase
@testable import SettleGooglePlay
@testable import SettleGooglePlaySimulator

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

    // MARK: Google's published push keys

    /// Why `keys` refuse a push token signed by `signer` under `keyId` (the fake's push key by default); nil: accepted.
    private func refusal(_ world: PlayTestWorld, keys: any PushKeys, signer: RSAPrivateKey? = nil,
                         keyId: String? = nil) throws -> PushAuthenticator.Refusal? {
        let authenticator = PushAuthenticator(keys: keys, audience: PlayTestWorld.audience, serviceAccountEmail: PlayTestWorld.pushEmail,
                                              time: world.time)
        let token = try world.fake.pushToken(audience: PlayTestWorld.audience, email: PlayTestWorld.pushEmail, signer: signer, keyId: keyId)
        if case let .failure(refusal) = authenticator.authenticate(authorization: "Bearer \(token)") { return refusal }
        return nil
    }

    private func googleKeys(_ world: PlayTestWorld, fallback: JSONWebKeySet? = nil) -> GooglePushKeys {
        GooglePushKeys(url: world.server.baseURL + FakeGooglePlay.certsPath, fallback: fallback, client: HTTPClient(), time: world.time,
                       log: .silent)
    }

    func testGooglePushKeys_areReadFromTheURL_keptForTheirMaxAge_andReadAgainForAKeyRotatedIn_atMostOnceAMinute() throws {
        let world = try PlayTestWorld()
        world.fake.setCertsCacheControl("public, max-age=600, must-revalidate, no-transform")
        let keys = googleKeys(world)
        XCTAssertNil(try refusal(world, keys: keys))
        XCTAssertEqual(world.fake.certsRequests, 1)
        world.time.advance(by: 599)
        XCTAssertNil(try refusal(world, keys: keys))
        XCTAssertEqual(world.fake.certsRequests, 1, "read again while Google's max-age said the keys were fresh")
        world.time.advance(by: 1)
        XCTAssertNil(try refusal(world, keys: keys))
        XCTAssertEqual(world.fake.certsRequests, 2, "kept past Google's max-age")
        // Google publishes a new key and signs with it while the keys read are fresh: read again at once.
        world.fake.rotateIn(pushKey: PlayTestKeys.stranger.publicKey, id: "rotated-in")
        world.time.advance(by: Double(GooglePushKeys.minimumRefreshSeconds))
        XCTAssertNil(try refusal(world, keys: keys, signer: PlayTestKeys.stranger, keyId: "rotated-in"))
        XCTAssertEqual(world.fake.certsRequests, 3)
        // Tokens under a key nobody publishes are refused, and Google is not asked again for each.
        for _ in 0..<5 {
            XCTAssertEqual(try refusal(world, keys: keys, signer: PlayTestKeys.stranger, keyId: "nobodys"), .unknownKey)
        }
        XCTAssertEqual(world.fake.certsRequests, 3, "every unknown key id asked Google")
    }

    func testGooglePushKeys_thatCannotBeRead_leaveTheKeysReadBefore_elseTheFile_elseNothingToCheckWith() throws {
        let world = try PlayTestWorld()
        // Never read: the operator's file.
        world.fake.failNextCertsRequests(.status(503))
        XCTAssertNil(try refusal(world, keys: googleKeys(world, fallback: world.fake.pushKeySet)))
        // Neither: nothing verifies (the listener answers 503, and Pub/Sub delivers the push again).
        world.fake.failNextCertsRequests(.garbage)
        let keys = googleKeys(world)
        XCTAssertEqual(try refusal(world, keys: keys), .keysUnavailable)
        // Read once, then Google fails: the keys read before still verify.
        world.time.advance(by: Double(GooglePushKeys.minimumRefreshSeconds))
        XCTAssertNil(try refusal(world, keys: keys))
        world.fake.failNextCertsRequests(.status(500))
        world.time.advance(by: Double(GooglePushKeys.maximumMaxAge))
        XCTAssertNil(try refusal(world, keys: keys))
        XCTAssertEqual(world.fake.certsRequests, 4)
    }

    func testGooglePushKeys_maxAge_isCacheControlsLessAge_betweenAMinuteAndADay() {
        XCTAssertEqual(GooglePushKeys.maxAge(cacheControl: "public, max-age=19923, must-revalidate, no-transform", age: nil), 19923)
        XCTAssertEqual(GooglePushKeys.maxAge(cacheControl: "public, MAX-AGE=19923", age: "923"), 19000)
        XCTAssertEqual(GooglePushKeys.maxAge(cacheControl: "no-cache, max-age=600", age: nil), GooglePushKeys.minimumRefreshSeconds)
        XCTAssertEqual(GooglePushKeys.maxAge(cacheControl: nil, age: nil), GooglePushKeys.defaultMaxAge)
        XCTAssertEqual(GooglePushKeys.maxAge(cacheControl: "max-age=9999999", age: nil), GooglePushKeys.maximumMaxAge)
        XCTAssertEqual(GooglePushKeys.maxAge(cacheControl: "max-age=junk", age: "junk"), GooglePushKeys.defaultMaxAge)
    }
}
