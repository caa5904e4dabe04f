import XCTest
@testable import SettleApp
@testable import SettleBase
@testable import SettleModel
@testable import SettleGooglePlay
@testable import SettleGooglePlaySimulator

final class PlayDeveloperClientTests: XCTestCase {
    private let token = PlayTestWorld.token(PlayTestWorld.tokenText)
    private let apiPrefix = "/androidpublisher/v3/applications/com.example.game/purchases/"

    private func purchased(_ orderId: String = "GPA.1111-2222-3333-44444") -> ProductPurchase {
        ProductPurchase(rawPurchaseState: 0, orderId: orderId, purchaseTimeMillis: 1_795_999_000_000,
                        obfuscatedExternalAccountId: "user-42")
    }

    private func failure(_ body: () throws -> Any) -> PlayAPIError? {
        do {
            _ = try body()
            return nil
        } catch {
            return error as? PlayAPIError
        }
    }

    func testProductPurchase_getsThePurchaseByProductAndToken_withTheBearerToken() throws {
        let world = try PlayTestWorld()
        world.fake.script(product: PlayTestWorld.tokenText, purchased())
        let purchase = try world.client.productPurchase(productId: "gems_100", token: token)
        XCTAssertEqual(purchase.orderId, "GPA.1111-2222-3333-44444")
        XCTAssertEqual(purchase.purchaseState, .purchased)
        XCTAssertEqual(purchase.purchaseTimeMillis, 1_795_999_000_000)
        let call = try XCTUnwrap(world.fake.calls.last)
        XCTAssertEqual(call.method, "GET")
        XCTAssertEqual(call.path, apiPrefix + "products/gems_100/tokens/" + PlayTestWorld.tokenText)
        XCTAssertEqual(call.authorization, "Bearer " + (try world.tokens.accessToken()))
    }

    func testAcknowledgeAndConsume_reachGoogleWithTheirPathsAndAuthorization_andChangeThePurchase() throws {
        let world = try PlayTestWorld()
        let consumable = PlayTestWorld.token("consumable-token")
        world.fake.script(product: PlayTestWorld.tokenText, purchased())
        world.fake.script(product: consumable.value, purchased("GPA.2"))
        world.fake.script(subscription: "sub-token", SubscriptionPurchaseV2(
            rawSubscriptionState: "SUBSCRIPTION_STATE_ACTIVE", lineItems: [.init(productId: "pro_monthly", expiryTime: nil)],
            latestOrderId: "GPA.3..0"))
        try world.client.acknowledgeProduct(productId: "gems_100", token: token)
        try world.client.consumeProduct(productId: "coins", token: consumable)
        try world.client.acknowledgeSubscription(subscriptionId: "pro_monthly", token: PlayTestWorld.token("sub-token"))
        let bearer = "Bearer " + (try world.tokens.accessToken())
        XCTAssertEqual(world.fake.calls.map(\.method), ["POST", "POST", "POST"])
        XCTAssertEqual(world.fake.calls.map(\.path), [
            apiPrefix + "products/gems_100/tokens/\(PlayTestWorld.tokenText):acknowledge",
            apiPrefix + "products/coins/tokens/consumable-token:consume",
            apiPrefix + "subscriptions/pro_monthly/tokens/sub-token:acknowledge",
        ])
        XCTAssertEqual(Set(world.fake.calls.map(\.authorization)), [bearer])
        XCTAssertEqual(world.fake.product(PlayTestWorld.tokenText)?.acknowledgementState, .acknowledged)
        XCTAssertEqual(world.fake.product("consumable-token")?.consumptionState, .consumed)
        XCTAssertEqual(world.fake.subscription("sub-token")?.acknowledgementState, .acknowledged)
    }

    func testPathComponents_arePercentEncoded_soAnIdCannotChangeTheURL() throws {
        let world = try PlayTestWorld()
        let odd = PlayTestWorld.token("tok/../en?x=1#y:z")
        world.fake.script(product: odd.value, ProductPurchase(rawPurchaseState: 0, orderId: "GPA.9", productId: "a/b c"))
        XCTAssertEqual(try world.client.productPurchase(productId: "a/b c", token: odd).orderId, "GPA.9")
        XCTAssertEqual(world.fake.calls.last?.path, apiPrefix + "products/a%2Fb%20c/tokens/tok%2F..%2Fen%3Fx%3D1%23y%3Az")
    }

    func testSubscriptionPurchase_decodesStateLineItemsAcknowledgementTestAndAccount() throws {
        let world = try PlayTestWorld()
        let linked = PlayTestWorld.token("older-token")
        world.fake.script(subscription: PlayTestWorld.tokenText, SubscriptionPurchaseV2(
            rawSubscriptionState: "SUBSCRIPTION_STATE_IN_GRACE_PERIOD", rawAcknowledgementState: "ACKNOWLEDGEMENT_STATE_ACKNOWLEDGED",
            lineItems: [.init(productId: "pro_monthly", expiryTime: "2026-12-31T10:00:00.250Z", latestSuccessfulOrderId: "GPA.5..0")],
            latestOrderId: "GPA.5..1",
            linkedPurchaseToken: linked, isTestPurchase: true, obfuscatedExternalAccountId: "user-42", regionCode: "DE"))
        let s = try world.client.subscriptionPurchase(token: token)
        XCTAssertEqual(s.subscriptionState, .inGracePeriod)
        XCTAssertEqual(s.acknowledgementState, .acknowledged)
        XCTAssertEqual(s.lineItems.map(\.productId), ["pro_monthly"])
        XCTAssertEqual(s.lineItems.first?.expiry?.timeIntervalSince1970, 1_798_711_200.25)
        XCTAssertEqual(s.latestOrderId, "GPA.5..1")
        XCTAssertEqual(s.lineItems.first?.latestSuccessfulOrderId, "GPA.5..0")
        XCTAssertEqual(s.linkedPurchaseToken, linked)
        XCTAssertTrue(s.isTestPurchase)
        XCTAssertEqual(s.obfuscatedExternalAccountId, "user-42")
        XCTAssertEqual(world.fake.calls.last?.path, apiPrefix + "subscriptionsv2/tokens/" + PlayTestWorld.tokenText)
    }

    func testAn401_dropsTheAccessToken_fetchesAFreshOne_andTheCallSucceeds() throws {
        let world = try PlayTestWorld()
        world.fake.script(product: PlayTestWorld.tokenText, purchased())
        _ = try world.client.productPurchase(productId: "gems_100", token: token)
        world.fake.revokeAccessTokens()
        XCTAssertEqual(try world.client.productPurchase(productId: "gems_100", token: token).orderId, "GPA.1111-2222-3333-44444")
        XCTAssertEqual(world.fake.tokenRequests, 2)
        XCTAssertEqual(world.fake.calls.count, 3)
    }

    func testA401Twice_isAConfigurationFault_afterExactlyOneRefresh() throws {
        let world = try PlayTestWorld()
        world.fake.script(product: PlayTestWorld.tokenText, purchased())
        world.fake.failNextAPICalls(.status(401), .status(401))
        let error = try XCTUnwrap(failure { try world.client.productPurchase(productId: "gems_100", token: token) })
        XCTAssertEqual(error.kind, .configuration)
        XCTAssertEqual(error.status, 401)
        XCTAssertTrue(error.isStoreWide)
        XCTAssertEqual(world.fake.calls.count, 2)
        XCTAssertEqual(world.fake.tokenRequests, 2)
    }

    func testPacedClient_holdsABucketAfterA429ForItsRetryAfter_andOtherBucketsStillCall() throws {
        let world = try PlayTestWorld()
        var client = world.client
        let time = world.time
        client.pacer = Pacer(time: time, rates: { StoreRateLimits.rate($0, configured: [:]) },
                             sleep: { time.advance(by: $0) })
        world.fake.script(product: PlayTestWorld.tokenText, purchased())
        world.fake.failNextAPICalls(.status(429, reason: "rateLimitExceeded", retryAfter: "60"))
        let limited = failure { try client.productPurchase(productId: "gems_100", token: token) }
        XCTAssertEqual(limited?.retryAfter, 60)
        XCTAssertEqual(limited?.kind, .paced, "a 429 above the bucket's floor is settle too fast, not Google down")
        XCTAssertTrue(limited?.isStoreWide == true, "the order keeps its attempt")
        let calls = world.fake.calls.count
        let refused = failure { try client.productPurchase(productId: "gems_100", token: token) }
        XCTAssertEqual(refused?.kind, .paced)
        XCTAssertTrue(refused?.message.hasPrefix("paced: google_play one_time_purchases (production) at 25/s") == true, "\(String(describing: refused))")
        XCTAssertEqual(world.fake.calls.count, calls, "not sent: the wait is longer than the 10 s timeout")
        XCTAssertNotNil(failure { try client.subscriptionPurchase(token: token) }, "Google's subscriptions bucket is asked (the fake knows no such token)")
        XCTAssertEqual(world.fake.calls.count, calls + 1)
        time.advance(by: 60)
        XCTAssertEqual(try client.productPurchase(productId: "gems_100", token: token).orderId, "GPA.1111-2222-3333-44444")
    }

    func testA429WithRetryAfter_and5xx_andNoAnswer_areTemporaryStoreWide() throws {
        let world = try PlayTestWorld()
        world.fake.script(product: PlayTestWorld.tokenText, purchased())
        world.fake.failNextAPICalls(.status(429, reason: "rateLimitExceeded", retryAfter: "7"), .status(500), .status(503), .garbage)
        let limited = try XCTUnwrap(failure { try world.client.productPurchase(productId: "gems_100", token: token) })
        XCTAssertEqual(limited.kind, .unavailable)
        XCTAssertEqual(limited.retryAfter, 7)
        for _ in 0..<3 {
            XCTAssertEqual(failure { try world.client.productPurchase(productId: "gems_100", token: token) }?.kind, .unavailable)
        }
        XCTAssertNoThrow(try world.client.productPurchase(productId: "gems_100", token: token))
        _ = try world.tokens.accessToken()
        world.server.stop()
        let down = try XCTUnwrap(failure { try world.client.productPurchase(productId: "gems_100", token: token) })
        XCTAssertEqual(down.kind, .unavailable)
        XCTAssertTrue(down.isStoreWide)
        XCTAssertNil(down.status)
    }

    func testA403_isAConfigurationFault_namingThePlayConsolePermissionTheCallNeeds() throws {
        let world = try PlayTestWorld()
        world.fake.script(product: PlayTestWorld.tokenText, purchased())
        world.fake.failNextAPICalls(.status(403, reason: "permissionDenied"), .status(403, reason: "permissionDenied"))
        let read = try XCTUnwrap(failure { try world.client.productPurchase(productId: "gems_100", token: token) })
        XCTAssertEqual(read.kind, .configuration)
        XCTAssertTrue(read.message.contains("View financial data"), read.message)
        XCTAssertTrue(read.message.contains(PlayTestWorld.email), read.message)
        let write = try XCTUnwrap(failure { try world.client.acknowledgeProduct(productId: "gems_100", token: token) })
        XCTAssertTrue(write.message.contains("Manage orders and subscriptions"), write.message)
    }

    func testAnUnknownOrExpiredToken_isFinalForTheOrder_butAnUnknownAppIsConfiguration() throws {
        let world = try PlayTestWorld()
        let unknown = try XCTUnwrap(failure { try world.client.productPurchase(productId: "gems_100", token: token) })
        XCTAssertEqual(unknown.kind, .purchaseNotFound)
        XCTAssertEqual(unknown.reason, "purchaseTokenInvalid")
        XCTAssertTrue(unknown.isFinalForOrder)
        world.fake.failNextAPICalls(.status(410, reason: "purchaseTokenNoLongerValid"), .status(404, reason: "applicationNotFound"))
        XCTAssertEqual(failure { try world.client.productPurchase(productId: "gems_100", token: token) }?.kind, .purchaseNotFound)
        XCTAssertEqual(failure { try world.client.productPurchase(productId: "gems_100", token: token) }?.kind, .configuration)
    }

    func testVoidedPurchases_pageByNextPageToken_overThreePages_andAskForQuantityBasedPartialRefunds() throws {
        let world = try PlayTestWorld()
        // The fifth is a quantity-based partial refund: Google lists it only when asked to.
        let voided = (1...5).map { i in
            VoidedPurchase(purchaseToken: PlayTestWorld.token("voided-\(i)"), orderId: "GPA.\(i)", purchaseTimeMillis: 1_795_000_000_000,
                           voidedTimeMillis: 1_795_500_000_000 + Int64(i), rawVoidedSource: 0, rawVoidedReason: 1,
                           voidedQuantity: i == 5 ? 2 : nil)
        }
        world.fake.script(voided: voided, pageSize: 2)
        var seen: [VoidedPurchase] = []
        var pageToken: String?
        var pages = 0
        repeat {
            let page = try world.client.voidedPurchases(startTime: 1_795_400_000_000, pageToken: pageToken)
            seen += page.purchases
            pageToken = page.nextPageToken
            pages += 1
        } while pageToken != nil && pages < 10
        XCTAssertEqual(pages, 3)
        XCTAssertEqual(seen, voided)
        XCTAssertEqual(seen.first?.voidedReason, .remorse)
        XCTAssertEqual(seen.last?.voidedQuantity, 2)
        let query = "voidedpurchases?type=1&includeQuantityBasedPartialRefund=true&startTime=1795400000000"
        XCTAssertEqual(world.fake.calls.map(\.path), [
            apiPrefix + query, apiPrefix + query + "&token=page-2", apiPrefix + query + "&token=page-4",
        ])
    }

    func testNoErrorDescription_everContainsThePurchaseToken_evenWhenGoogleEchoesIt() throws {
        let world = try PlayTestWorld()
        // A Google that puts the request path (and so the token) into its error messages.
        let fake = world.fake
        let echoing = try LoopbackHTTPServer { request in
            if request.path == "/token" { return fake.handle(request) }
            return FakeGooglePlay.error(500, reason: "backendError", "failed on \(request.path)")
        }
        defer { echoing.stop() }
        let tokens = GoogleAccessTokenSource(key: world.key, tokenURL: world.server.baseURL + "/token", client: HTTPClient(), time: world.time)
        let echoClient = PlayDeveloperClient(packageName: PlayTestWorld.packageName, baseURL: echoing.baseURL, tokens: tokens,
                                             client: HTTPClient())
        world.fake.failNextAPICalls(.status(401), .status(401), .status(403), .status(404), .status(410), .status(429), .status(500),
                                    .status(400, reason: "purchaseTokenInvalid"), .status(400, reason: "somethingElse"), .garbage)
        var errors: [PlayAPIError] = []
        for _ in 0..<9 {
            if let e = failure({ try world.client.productPurchase(productId: "gems_100", token: token) }) { errors.append(e) }
        }
        for call in [{ try echoClient.productPurchase(productId: "gems_100", token: self.token) } as () throws -> Any,
                     { try echoClient.consumeProduct(productId: "gems_100", token: self.token) },
                     { try echoClient.subscriptionPurchase(token: self.token) }] {
            if let e = failure(call) { errors.append(e) }
        }
        world.server.stop()
        if let e = failure({ try world.client.acknowledgeProduct(productId: "gems_100", token: token) }) { errors.append(e) }
        XCTAssertEqual(errors.count, 13)
        XCTAssertTrue(errors.contains { $0.message.contains(token.fingerprint) })
        for error in errors {
            for text in ["\(error)", String(reflecting: error), error.message] {
                XCTAssertFalse(text.contains(PlayTestWorld.tokenText), text)
            }
        }
    }

    func testPurchaseToken_printsAsItsFingerprint_never_itsValue() {
        var dumped = ""
        dump(token, to: &dumped)
        for text in ["\(token)", String(reflecting: token), dumped, "\([token])"] {
            XCTAssertFalse(text.contains(PlayTestWorld.tokenText), text)
            XCTAssertTrue(text.contains(token.fingerprint), text)
        }
        XCTAssertNil(PurchaseToken("has space"))
        XCTAssertNil(PurchaseToken(""))
    }
}
