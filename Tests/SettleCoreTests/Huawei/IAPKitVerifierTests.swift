import Foundation
import XCTest
import SettleBase
import SettleModel
import SettleConfig
import SettleHuawei
import SettleHuaweiSimulator
import SettleTesting

/// The IAP Kit verifier and finisher against the fake IAP Kit over real HTTP on loopback
/// (libcurl), one rule of huawei-appgallery.md sections 1.3 to 1.6 and 3 a test.
final class IAPKitVerifierTests: XCTestCase {
    static let appId = "10000001"
    static let key = try! ES256PrivateKey(pem: ES256PrivateKey.generatePEM())
    let time = ManualTimeSource(Date(timeIntervalSince1970: 1_764_000_000))
    nonisolated(unsafe) var fake: FakeHuawei!
    nonisolated(unsafe) var server: LoopbackHTTPServer!
    let coins = "hw_coins", unlock = "hw_unlock", vip = "hw_vip"

    override func setUpWithError() throws {
        fake = try FakeHuawei(appId: Self.appId, publicKey: Self.key.publicKey, time: time)
        let fake = self.fake!
        server = try LoopbackHTTPServer { fake.handle($0) }
    }

    override func tearDown() {
        server?.stop()
    }

    func client(key: ES256PrivateKey = IAPKitVerifierTests.key) -> IAPKitClient {
        IAPKitClient(baseURL: server.baseURL, token: IAPKitToken(issuerId: "iss", keyId: "kid", appId: Self.appId, key: key, time: time),
                     client: HTTPClient(configuration: HTTPClientConfiguration(connectTimeout: 2, totalTimeout: 3)))
    }

    func verifier(acceptSandbox: Bool = false, binding: UserBinding = UserBinding(tokenSource: .userId),
                  key: ES256PrivateKey = IAPKitVerifierTests.key) -> IAPKitVerifier {
        let products: [String: Configuration.Product] = [
            coins: .init(kind: .consumable, soldOn: [.huawei]),
            unlock: .init(kind: .nonConsumable, soldOn: [.huawei]),
            vip: .init(kind: .autoRenewable, soldOn: [.huawei]),
        ]
        return IAPKitVerifier(client: client(key: key), signedData: HuaweiSignedData(roots: try! X509Certificate.parse(pem: HuaweiSimulatorChain.rootPEM)),
                              appId: Self.appId, products: products, acceptSandbox: acceptSandbox, binding: binding, time: time)
    }

    func purchase(_ id: String, product: String? = nil, type: String = "0", user: String? = "u-1",
                  extra: [(String, JSONValue)] = []) -> JSONValue {
        var members: [(String, JSONValue)] = [("purchaseOrderId", .string(id)), ("purchaseToken", .string("tok-" + id)),
                                              ("productId", .string(product ?? coins)), ("productType", .string(type)),
                                              ("purchaseTime", .number(Int64(1_763_999_000_000)))]
        if let user { members.append(("developerPayload", .string(user))) }
        return HuaweiScript.completed(FakeHuawei.setting(.object(members), extra), appId: Self.appId)
    }

    func order(_ id: String, product: String? = nil, user: String = "u-1", token: String? = nil) -> Order {
        var order = Order(orderId: "o-" + id, userId: user, productId: product ?? coins, state: .verifying, attempts: 0,
                          nextAttemptAt: 0, createdAt: 0, updatedAt: 0, store: .huawei)
        order.storeProof = HuaweiProof(purchaseOrderId: id, purchaseToken: token ?? "tok-" + id).storeProof
        return order
    }

    func verified(_ verification: Verification, file: StaticString = #filePath, line: UInt = #line) -> VerifiedPurchase? {
        guard case let .verified(match) = verification.outcome, let purchase = match.candidates.first else {
            XCTFail("not verified: \(verification.outcome)", file: file, line: line)
            return nil
        }
        return purchase
    }

    func rejection(_ verification: Verification) -> RejectionReason? {
        if case let .rejected(reason, _) = verification.outcome { return reason }
        return nil
    }

    func attention(_ verification: Verification) -> AttentionReason? {
        if case let .needsAttention(reason, _) = verification.outcome { return reason }
        return nil
    }

    func testConsumableBoughtThreeAtOnce_isVerified_withItsQuantity_keyedByItsPurchaseOrderId() throws {
        fake.script(order: purchase("po-1", extra: [("quantity", .number(3))]))
        let result = verifier().verify(order("po-1"))
        let granted = try XCTUnwrap(verified(result))
        XCTAssertEqual(granted.grantKey, "po-1")
        XCTAssertEqual(granted.quantity, 3)
        XCTAssertEqual(granted.environment, "production")
        XCTAssertTrue(result.storeAnswered)
        XCTAssertEqual(fake.calls, ["order_status po-1"])
    }

    func testEveryMismatchOfTheSignedAnswer_grantsNothing() throws {
        fake.script(order: purchase("po-app", extra: [("applicationId", .string("99999999"))]))
        XCTAssertEqual(rejection(verifier().verify(order("po-app"))), .bundleMismatch)
        fake.script(order: purchase("po-product", product: unlock, type: "1"))
        XCTAssertEqual(rejection(verifier().verify(order("po-product"))), .productMismatch)
        fake.script(order: purchase("po-type", type: "1"))
        XCTAssertEqual(rejection(verifier().verify(order("po-type"))), .productMismatch, "a consumable Huawei calls non-consumable")
        fake.script(order: purchase("po-sandbox", extra: [("environment", .string("SANDBOX"))]))
        XCTAssertEqual(rejection(verifier().verify(order("po-sandbox"))), .sandboxNotAccepted)
        XCTAssertEqual(try XCTUnwrap(verified(verifier(acceptSandbox: true).verify(order("po-sandbox")))).environment, "sandbox")
        fake.script(order: purchase("po-revoked", extra: [("revocationTime", .number(Int64(1_763_999_500_000)))]))
        XCTAssertEqual(rejection(verifier().verify(order("po-revoked"))), .refunded)
        XCTAssertEqual(rejection(verifier().verify(order("po-unknown"))), .transactionNotFound)
        fake.script(order: purchase("po-token"))
        XCTAssertEqual(rejection(verifier().verify(order("po-token", token: "someone-elses-token"))), .transactionNotFound)
    }

    /// developerPayload names the buyer: a stranger's proof is refused, one with no payload
    /// follows `user_binding.tokenless_signed_proofs`, and one the user's payload is unknown for waits for a person.
    func testBinding_refusesAStrangersPurchase_andNeverGuesses() throws {
        fake.script(order: purchase("po-stranger", user: "u-2"))
        let stranger = verifier().verify(order("po-stranger", user: "u-1"))
        XCTAssertEqual(rejection(stranger), .userMismatch)
        fake.script(order: purchase("po-nobody", user: nil))
        XCTAssertNotNil(verified(verifier().verify(order("po-nobody"))), "tokenless signed proofs are trusted by default")
        let refuse = UserBinding(tokenSource: .userId, tokenlessSignedProofs: .refuse)
        XCTAssertEqual(rejection(verifier(binding: refuse).verify(order("po-nobody"))), .proofUnbound)
        fake.script(order: purchase("po-unverifiable", user: "u-1"))
        XCTAssertEqual(attention(verifier(binding: UserBinding(tokenSource: .order)).verify(order("po-unverifiable"))), .tokenUnverifiable)
    }

    func testPurchaseNotCompleted_waits_withoutUsingAnAttempt() throws {
        fake.script(order: FakeHuawei.setting(purchase("po-wait"), [("purchaseTime", .null)]))
        let result = verifier().verify(order("po-wait"))
        guard case .retry = result.outcome else { return XCTFail("\(result.outcome)") }
        XCTAssertTrue(result.keepsAttempt)
        XCTAssertEqual(result.retryAfterSeconds, IAPKitVerifier.incompleteRecheckSeconds)
    }

    /// Shipped already, and not by settle: the backend may have granted it, so a person decides.
    func testOrderShippedElsewhere_needsAPerson() throws {
        fake.script(order: purchase("po-shipped", extra: [("finishStatus", .string("1"))]))
        XCTAssertEqual(attention(verifier().verify(order("po-shipped"))), .finishedElsewhere)
    }

    func testForgedAnswers_stopTheStore_andGrantNothing() throws {
        fake.script(order: purchase("po-forged"))
        let forgedChain = HuaweiTestChains.x5c([HuaweiTestChains.forgedLeafPEM, HuaweiTestChains.forgedIntermediatePEM,
                                                HuaweiTestChains.forgedRootPEM])
        fake.forge(.signer(key: try ES256PrivateKey(pem: HuaweiTestChains.forgedLeafKeyPEM), x5c: forgedChain))
        guard case let .configurationFault(message) = verifier().verify(order("po-forged")).outcome else { return XCTFail() }
        XCTAssertTrue(message.contains("not signed by a configured root") && message.contains("huawei.root_certificates"), message)
        fake.forge(.tamperedPayload)
        guard case let .configurationFault(tampered) = verifier().verify(order("po-forged")).outcome else { return XCTFail() }
        XCTAssertTrue(tampered.contains("signature does not verify"), tampered)
        fake.forge(nil)
        XCTAssertNotNil(verified(verifier().verify(order("po-forged"))))
    }

    func testJWTHuaweiRefuses_isAConfigurationFault_andAnOutageIsTheStores() throws {
        fake.script(order: purchase("po-1"))
        let other = try ES256PrivateKey(pem: ES256PrivateKey.generatePEM())
        guard case let .configurationFault(message) = verifier(key: other).verify(order("po-1")).outcome else { return XCTFail() }
        XCTAssertTrue(message.contains("refused settle's JWT"), message)
        XCTAssertFalse(message.contains("tok-po-1"), "the purchase token is a secret")
        fake.fail(with: 503)
        guard case .storeUnavailable = verifier().verify(order("po-1")).outcome else { return XCTFail() }
        fake.fail(with: 200)
        guard case .storeUnavailable = verifier().verify(order("po-1")).outcome else { return XCTFail("code 1001880006 is Huawei's trouble") }
    }

    func testSubscription_grantsTheCurrentPeriodWhileActive_only() throws {
        let first = purchase("po-s1", product: vip, type: "2")
        let renewal = FakeHuawei.setting(purchase("po-s2", product: vip, type: "2"), [("purchaseTime", .number(Int64(1_764_000_000_000)))])
        func subscribe(_ status: String, _ orders: [JSONValue]) {
            fake.script(subscription: FakeHuawei.Subscription(
                subscriptionId: "sub-1", purchaseToken: "tok-sub", status: status, expiresTimeMs: 1_766_592_000_000,
                orders: orders.map { FakeHuawei.setting($0, [("purchaseToken", .string("tok-sub")), ("subscriptionId", .string("sub-1"))]) }))
        }
        subscribe("1", [first])
        let period = try XCTUnwrap(verified(verifier().verify(order("po-s1", product: vip, token: "tok-sub"))))
        XCTAssertEqual(period.grantKey, "po-s1")
        XCTAssertEqual(period.originalTransactionId, "sub-1")
        XCTAssertEqual(period.expiresDateMs, 1_766_592_000_000)
        subscribe("1", [first, renewal])
        XCTAssertEqual(try XCTUnwrap(verified(verifier().verify(order("po-s2", product: vip, token: "tok-sub")))).grantKey, "po-s2")
        XCTAssertEqual(attention(verifier().verify(order("po-s1", product: vip, token: "tok-sub"))), .purchaseStateUnclear,
                       "an earlier period is not granted again as the current one")
        subscribe("2", [first, renewal])
        XCTAssertEqual(attention(verifier().verify(order("po-s2", product: vip, token: "tok-sub"))), .purchaseStateUnclear)
        subscribe("5", [first, renewal])
        XCTAssertEqual(rejection(verifier().verify(order("po-s2", product: vip, token: "tok-sub"))), .refunded)
        XCTAssertEqual(fake.calls.first, "subscription_status po-s1")
    }

    func testFinisher_confirmsShipped_andAConfirmThatAlreadyReachedHuawei_isDone() throws {
        fake.script(order: purchase("po-1"))
        let finisher = HuaweiFinisher(client: client(), products: [coins: .init(kind: .consumable, soldOn: [.huawei])])
        XCTAssertEqual(finisher.finish(order("po-1")), .finished("shipped_confirmed"))
        XCTAssertEqual(finisher.finish(order("po-1")), .finished("already_confirmed"))
        XCTAssertEqual(fake.confirmed, ["po-1"])
        guard case let .refused(message) = finisher.finish(order("po-nobody-owns")) else { return XCTFail() }
        XCTAssertTrue(message.contains("1001880008"), message)
        fake.fail(with: 503)
        guard case let .failed(outage, configuration: false) = finisher.finish(order("po-1")) else { return XCTFail() }
        XCTAssertTrue(outage.contains("failed on Huawei's side (code 1001880006"), outage)
    }
}
