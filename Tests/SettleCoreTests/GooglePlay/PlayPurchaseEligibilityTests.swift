import XCTest
@testable import SettleApp
@testable import SettleBase
@testable import SettleGooglePlay

final class PlayPurchaseEligibilityTests: XCTestCase {
    private let strict = PlayPurchaseEligibility(acceptSandbox: false)
    private let token = PlayTestWorld.token(PlayTestWorld.tokenText)

    /// Each scripted purchase read back from the fake Google over loopback, then decided for an
    /// order of `gems_100` by user-42.
    func testDecide_forPurchasesReadFromGoogle_grantsWaitsOrRejectsAsEachDeserves() throws {
        let world = try PlayTestWorld()
        let scripts: [(String, ProductPurchase)] = [
            ("purchased", ProductPurchase(rawPurchaseState: 0, orderId: "GPA.1", purchaseTimeMillis: 1_795_999_000_000,
                                          quantity: 2, obfuscatedExternalAccountId: "user-42")),
            ("pending", ProductPurchase(rawPurchaseState: 2, orderId: "GPA.2", obfuscatedExternalAccountId: "user-42")),
            ("canceled", ProductPurchase(rawPurchaseState: 1, orderId: "GPA.3", obfuscatedExternalAccountId: "user-42")),
            ("test", ProductPurchase(rawPurchaseState: 0, rawPurchaseType: 0, orderId: "GPA.4", obfuscatedExternalAccountId: "user-42")),
            ("other-user", ProductPurchase(rawPurchaseState: 0, orderId: "GPA.5", obfuscatedExternalAccountId: "user-7")),
            ("acknowledged", ProductPurchase(rawPurchaseState: 0, rawConsumptionState: 0, rawAcknowledgementState: 1, orderId: "GPA.6",
                                             obfuscatedExternalAccountId: "user-42")),
            ("unbound", ProductPurchase(rawPurchaseState: 0, orderId: "GPA.7")),
        ]
        var decisions: [String: PlayPurchaseDecision] = [:]
        for (name, purchase) in scripts {
            world.fake.script(product: "token-\(name)", purchase)
            let read = try world.client.productPurchase(productId: "gems_100", token: PlayTestWorld.token("token-\(name)"))
            decisions[name] = strict.decide(PlayPurchaseFacts(product: read, productId: "gems_100"),
                                            token: PlayTestWorld.token("token-\(name)"), productId: "gems_100", expectedAccountId: "user-42")
        }
        guard case let .grant(grant)? = decisions["purchased"] else { return XCTFail("\(String(describing: decisions["purchased"]))") }
        XCTAssertEqual(grant, PlayGrant(grantKey: "GPA.1", environment: .production, productId: "gems_100", quantity: 2,
                                        purchaseTimeMillis: 1_795_999_000_000, alreadyAcknowledged: false, alreadyConsumed: false))
        XCTAssertEqual(decisions["pending"], .wait("purchase GPA.2 is pending payment"))
        guard case .rejected(.canceled, _)? = decisions["canceled"] else { return XCTFail("\(String(describing: decisions["canceled"]))") }
        guard case .rejected(.sandboxNotAccepted, _)? = decisions["test"] else { return XCTFail("\(String(describing: decisions["test"]))") }
        guard case let .rejected(.userMismatch, detail)? = decisions["other-user"] else {
            return XCTFail("\(String(describing: decisions["other-user"]))")
        }
        XCTAssertTrue(detail.contains("user-7"), detail)
        guard case let .grant(acknowledged)? = decisions["acknowledged"] else { return XCTFail() }
        XCTAssertTrue(acknowledged.alreadyAcknowledged)
        XCTAssertFalse(acknowledged.alreadyConsumed)
        guard case let .unbound(unbound)? = decisions["unbound"] else { return XCTFail("\(String(describing: decisions["unbound"]))") }
        XCTAssertEqual(unbound.grantKey, "GPA.7")
    }

    func testDecide_aTestPurchase_isGrantedAsSandbox_onlyWhereSandboxIsAccepted() {
        let facts = PlayPurchaseFacts(state: .purchased, orderId: "GPA.4", productIds: ["gems_100"], isTest: true, accountId: "u")
        guard case let .grant(grant) = PlayPurchaseEligibility(acceptSandbox: true).decide(facts, token: token, productId: "gems_100",
                                                                                           expectedAccountId: "u") else { return XCTFail() }
        XCTAssertEqual(grant.environment, .sandbox)
    }

    func testDecide_anotherUsersPendingPurchase_isRejectedAtOnce_notWaitedFor() {
        let facts = PlayPurchaseFacts(state: .pending, orderId: "GPA.8", productIds: ["gems_100"], isTest: false, accountId: "user-7")
        guard case .rejected(.userMismatch, _) = strict.decide(facts, token: token, productId: "gems_100", expectedAccountId: "user-42") else {
            return XCTFail()
        }
    }

    func testDecide_whenNoAccountIdIsKnownForTheUser_isUnbound_forTheCallersPolicy() {
        let facts = PlayPurchaseFacts(state: .purchased, orderId: "GPA.9", productIds: ["gems_100"], isTest: false, accountId: "user-42")
        guard case .unbound = strict.decide(facts, token: token, productId: "gems_100", expectedAccountId: nil) else { return XCTFail() }
    }

    func testDecide_withoutAnOrderId_keysTheGrantByTheTokensHash_neverTheToken() {
        let facts = PlayPurchaseFacts(state: .purchased, orderId: nil, productIds: ["gems_100"], isTest: false, accountId: "u")
        guard case let .grant(grant) = strict.decide(facts, token: token, productId: "gems_100", expectedAccountId: "u") else { return XCTFail() }
        XCTAssertEqual(grant.grantKey, "token-sha256:" + SHA256.hex(Data(PlayTestWorld.tokenText.utf8)))
        XCTAssertFalse(grant.grantKey.contains(PlayTestWorld.tokenText))
    }

    func testDecide_anotherProduct_isAProductMismatch() {
        let facts = PlayPurchaseFacts(state: .purchased, orderId: "GPA.1", productIds: ["gems_500"], isTest: false, accountId: "u")
        guard case .rejected(.productMismatch, _) = strict.decide(facts, token: token, productId: "gems_100", expectedAccountId: "u") else {
            return XCTFail()
        }
    }

    func testFacts_ofSubscriptions_mapGooglesStates_keyAPeriodByItsLatestSuccessfulOrder_andUnknownOnesNeedAPerson() {
        // The deprecated latestOrderId names a renewal whose charge was declined: never the grant key.
        func decision(_ state: String, successful: String? = "GPA.S..0") -> PlayPurchaseDecision {
            let s = SubscriptionPurchaseV2(rawSubscriptionState: state,
                                           lineItems: [.init(productId: "pro", expiryTime: nil, latestSuccessfulOrderId: successful)],
                                           latestOrderId: "GPA.S..1", obfuscatedExternalAccountId: "u")
            return strict.decide(PlayPurchaseFacts(subscription: s, productId: "pro"), token: token, productId: "pro", expectedAccountId: "u")
        }
        guard case let .needsAttention(detail) = decision("SUBSCRIPTION_STATE_ACTIVE", successful: nil) else {
            return XCTFail("an active subscription without a successful order is granted under a guessed key")
        }
        XCTAssertTrue(detail.contains("latestSuccessfulOrderId"), detail)
        for granted in ["SUBSCRIPTION_STATE_ACTIVE", "SUBSCRIPTION_STATE_IN_GRACE_PERIOD", "SUBSCRIPTION_STATE_CANCELED"] {
            guard case let .grant(grant) = decision(granted) else { return XCTFail(granted) }
            XCTAssertEqual(grant.grantKey, "GPA.S..0")
        }
        guard case .wait = decision("SUBSCRIPTION_STATE_PENDING") else { return XCTFail() }
        guard case .rejected(.canceled, _) = decision("SUBSCRIPTION_STATE_PENDING_PURCHASE_CANCELED") else { return XCTFail() }
        for unclear in ["SUBSCRIPTION_STATE_EXPIRED", "SUBSCRIPTION_STATE_ON_HOLD", "SUBSCRIPTION_STATE_SOMETHING_NEW"] {
            guard case let .needsAttention(detail) = decision(unclear) else { return XCTFail(unclear) }
            XCTAssertTrue(detail.contains(unclear), detail)
        }
    }

    func testProductPurchase_unknownEnumValuesSurviveAsRawValues() throws {
        let json = try JSONValue.parse(#"{"purchaseState": 7, "purchaseType": 9, "orderId": "GPA.X", "purchaseTimeMillis": "1795999000000"}"#)
        let p = try XCTUnwrap(ProductPurchase(json: json))
        XCTAssertNil(p.purchaseState)
        XCTAssertEqual(p.rawPurchaseState, 7)
        XCTAssertEqual(p.rawPurchaseType, 9)
        XCTAssertEqual(p.purchaseTimeMillis, 1_795_999_000_000)
        XCTAssertEqual(ProductPurchase(json: p.json), p)
        guard case .needsAttention = strict.decide(PlayPurchaseFacts(product: p, productId: "gems_100"), token: token, productId: "gems_100",
                                                   expectedAccountId: nil) else { return XCTFail() }
    }
}
