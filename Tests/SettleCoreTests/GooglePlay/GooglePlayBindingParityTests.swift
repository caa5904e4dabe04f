import Foundation
import SettleTesting
import XCTest
@testable import SettleApp
@testable import SettleBase
@testable import SettleModel
@testable import SettleLedger
@testable import SettleGooglePlay
@testable import SettleGooglePlaySimulator
@testable import SettleGooglePlayModule

/// Google's Set App Account Token (issue 37): the acknowledge of a subscription carries the
/// user's `externalAccountIds` once settle knows whose it is; a resubscription made in the Play
/// Store goes to the user of the expired grant its `outOfAppPurchaseContext` names, on the
/// ledger's evidence only; a subscription on hold whose Google answer says what happens next
/// waits instead of asking a person. Whole passes against the fake Google over loopback, on
/// SQLite here and on PostgreSQL in `GooglePlayBindingParityPostgresTests`.
class GooglePlayBindingParityTests: GooglePlayPassCase {
    /// A subscription Google answers with the contexts of 2025-11 and 2026-05.
    func scripted(_ token: PurchaseToken, state: String = "SUBSCRIPTION_STATE_ACTIVE", period: String,
                  account: String? = nil, acknowledged: Bool = false, expiry: String = "2099-01-01T00:00:00Z",
                  outOfApp: SubscriptionPurchaseV2.OutOfAppPurchase? = nil, onHold: String? = nil) {
        var purchase = SubscriptionPurchaseV2(
            rawSubscriptionState: state,
            rawAcknowledgementState: "ACKNOWLEDGEMENT_STATE_" + (acknowledged ? "ACKNOWLEDGED" : "PENDING"),
            lineItems: [.init(productId: pro, expiryTime: expiry, latestSuccessfulOrderId: period)],
            latestOrderId: period, obfuscatedExternalAccountId: account, startTime: "2026-12-01T10:00:00Z")
        purchase.outOfAppPurchase = outOfApp
        purchase.onHold = onHold.map { SubscriptionPurchaseV2.DeclinedRenewal(pendingOrderId: $0) }
        fake.script(subscription: token.value, purchase)
    }

    func history(_ ledger: any SettleLedger, _ id: String) throws -> [HistoryEntry] {
        try ledger.orderRecord(id)?.history ?? []
    }

    /// A subscription bought in the Play Store that nothing maps to a user, then assigned.
    func assignedOutsidePurchase(_ ledger: any SettleLedger, user: String,
                                 acknowledged: Bool = false) throws -> PurchaseToken {
        let sub = token("outside-\(user.count)")
        scripted(sub, period: "GPA.A..0", acknowledged: acknowledged)
        try subscriptionPush(ledger, "m-bought", type: 4, sub)
        try pass(ledger)
        XCTAssertEqual(try order(ledger, "play-GPA.A..0")?.reason, AttentionReason.unclaimedPurchase.rawValue)
        try ledger.assign(orderId: "play-GPA.A..0", userId: user, note: "the customer wrote in", accountToken: nil)
        try pass(ledger)
        if acknowledged {
            // Acknowledged by someone else before the assignment: a person says it was not granted.
            XCTAssertEqual(try order(ledger, "play-GPA.A..0")?.reason, AttentionReason.finishedElsewhere.rawValue)
            _ = try ledger.retry(orderIds: ["play-GPA.A..0"], note: "not granted: ticket 9", proof: nil)
            try pass(ledger)
        }
        let assigned = try order(ledger, "play-GPA.A..0")
        XCTAssertEqual(assigned?.state, .finished, assigned?.lastError ?? "")
        return sub
    }

    // MARK: - externalAccountIds on the acknowledge

    func testAcknowledgeAfterAssign_carriesTheUsersAccountId_andGoogleShowsItOnThePurchase() throws {
        let ledger = try makeLedger()
        let sub = try assignedOutsidePurchase(ledger, user: "alice")
        XCTAssertEqual(fake.acknowledgeBodies(sub.value),
                       [.object([("externalAccountIds", .object([("obfuscatedAccountId", .string("alice"))]))])])
        XCTAssertEqual(fake.subscription(sub.value)?.obfuscatedExternalAccountId, "alice",
                       "its renewals now bind by themselves")
        XCTAssertTrue(try history(ledger, "play-GPA.A..0").contains { $0.outcome == "acknowledged_with_account_id" })
        // The next period binds by the account id Google now shows.
        scripted(sub, period: "GPA.A..1", account: "alice", acknowledged: true)
        try subscriptionPush(ledger, "m-renew", type: 2, sub)
        try pass(ledger)
        XCTAssertEqual(try order(ledger, "play-GPA.A..1")?.userId, "alice")
        XCTAssertEqual(try order(ledger, "play-GPA.A..1")?.state, .finished)
    }

    func testPurchaseAcknowledgedBeforeTheAssignment_getsNoAccountId_andItsHistorySaysWhy() throws {
        let ledger = try makeLedger()
        let sub = try assignedOutsidePurchase(ledger, user: "alice", acknowledged: true)
        XCTAssertEqual(fake.acknowledgeBodies(sub.value), [], "Google has no call that sets it after the acknowledge")
        let outcomes = try history(ledger, "play-GPA.A..0").map(\.outcome)
        XCTAssertTrue(outcomes.contains("already_acknowledged_account_id_not_sent"), "\(outcomes)")
        let section = try XCTUnwrap(GooglePlayModule.orderSections(ledger, orderId: "play-GPA.A..0").first)
        XCTAssertTrue(section.text.contains("not sent to Google: acknowledged before"), section.text)
    }

    func testAccountIdGoogleWouldRefuseOrThatLooksLikePersonalData_isNeverSent_andTheAcknowledgeStillHappens() throws {
        let ledger = try makeLedger()
        let sub = try assignedOutsidePurchase(ledger, user: "alice@example.com")
        XCTAssertEqual(fake.acknowledgeBodies(sub.value), [], "an e-mail address is personal data Google blocks")
        XCTAssertEqual(fake.subscription(sub.value)?.acknowledgementState, .acknowledged)
        let (long, longest) = (String(repeating: "u", count: 65), String(repeating: "u", count: 64))
        XCTAssertNil(PlayFinisherProbe.accountId(user: long), "longer than Google's 64 characters")
        XCTAssertEqual(PlayFinisherProbe.accountId(user: longest), longest)
        XCTAssertEqual(PlayFinisherProbe.accountId(user: "bob"), "bob")
        XCTAssertNil(PlayFinisherProbe.accountId(user: "bob\u{7}"), "a control character is never sent")
        XCTAssertNil(PlayFinisherProbe.accountId(user: "bob", binding: .order),
                     "the order stores no account id: none is known")
    }

    func testGoogleRefusingTheAccountId_neverCostsTheAcknowledge_andTheOrderSaysSo() throws {
        let ledger = try makeLedger()
        fake.state.withLock { $0.refusesAccountIds = true }
        let sub = try assignedOutsidePurchase(ledger, user: "alice")
        XCTAssertEqual(fake.subscription(sub.value)?.acknowledgementState, .acknowledged)
        XCTAssertNil(fake.subscription(sub.value)?.obfuscatedExternalAccountId)
        XCTAssertEqual(fake.acknowledgeBodies(sub.value).count, 1, "the second acknowledge carries no body")
        let section = try XCTUnwrap(GooglePlayModule.orderSections(ledger, orderId: "play-GPA.A..0").first)
        XCTAssertTrue(section.text.contains("Google refused it"), section.text)
    }

    // MARK: - Shapes Google adds later (docs/store-changes.md)

    func testNotificationKindsTypesAndFieldsGoogleAddsLater_areStoredAndRecorded_neverRefused() throws {
        let ledger = try makeLedger()
        let future = """
            {"version":"1.0","packageName":"\(PlayTestWorld.packageName)","eventTimeMillis":"\(nowMs)",
             "aNotificationGoogleAddsLater":{"version":"1.0","someId":"x"}}
            """
        let kind = try DeveloperNotification(json: try JSONValue.parse(Data(future.utf8)))
        XCTAssertEqual(kind.kind, .unknown(["aNotificationGoogleAddsLater"]))
        XCTAssertTrue(try ledger.storePlayNotification(messageId: "m-future", kind: "unknown", token: nil, payload: future))
        let sub = token("typed")
        scripted(sub, period: "GPA.T..0", account: "alice")
        let newType = """
            {"version":"1.0","packageName":"\(PlayTestWorld.packageName)","eventTimeMillis":"\(nowMs)",
             "subscriptionNotification":{"version":"1.0","notificationType":99,"purchaseToken":"\(sub.value)",
             "aFieldGoogleAddsLater":{"x":[1,2]}}}
            """
        XCTAssertTrue(try ledger.storePlayNotification(messageId: "m-type", kind: "subscription", token: sub, payload: newType))
        try pass(ledger)
        XCTAssertEqual(try ledger.playNotification(messageId: "m-future")?.outcome, "unknown_kind")
        XCTAssertEqual(try ledger.playNotification(messageId: "m-type")?.outcome, "noted")
        XCTAssertEqual(try waitingPushes(ledger), [])
    }

    func testSubscriptionAnswerWithFieldsAndStatesGoogleAddsLater_isRead_andAnUnknownStateWaitsForAPerson() throws {
        let answer = """
            {"kind":"androidpublisher#subscriptionPurchaseV2","subscriptionState":"SUBSCRIPTION_STATE_GOOGLE_ADDS_LATER",
             "acknowledgementState":"ACKNOWLEDGEMENT_STATE_ACKNOWLEDGED","etag":"e1","aFieldGoogleAddsLater":{"y":true},
             "outOfAppPurchaseContext":{"expiredPurchaseToken":"tok-old","expiredExternalAccountIdentifiers":
               {"obfuscatedExternalAccountId":"acct-1","aNewId":"z"}},
             "onHoldStateContext":{"renewalDeclined":{"pendingOrderId":"GPA.Z..1","aNewField":3}},
             "lineItems":[{"productId":"pro_monthly","expiryTime":"2026-11-01T00:00:00Z","latestSuccessfulOrderId":"GPA.Z..0",
               "offerPhase":{"basePrice":{}},"itemReplacement":{"productId":"x"}}]}
            """
        let read = try XCTUnwrap(SubscriptionPurchaseV2(json: try JSONValue.parse(Data(answer.utf8))))
        XCTAssertEqual(read.outOfAppPurchase?.expiredPurchaseToken?.value, "tok-old")
        XCTAssertEqual(read.outOfAppPurchase?.expiredAccountId, "acct-1")
        XCTAssertEqual(read.onHold?.pendingOrderId, "GPA.Z..1")
        XCTAssertNil(read.holdContext, "a hold context speaks only for a subscription on hold")
        let facts = PlayPurchaseFacts(subscription: read, productId: pro)
        XCTAssertEqual(facts.state, .unclear("subscriptionState SUBSCRIPTION_STATE_GOOGLE_ADDS_LATER"))
        // Garbage where a context belongs is no context, never a crash.
        let garbage = """
            {"subscriptionState":"SUBSCRIPTION_STATE_ON_HOLD","onHoldStateContext":"???","outOfAppPurchaseContext":[1],
             "inGracePeriodStateContext":{"renewalDeclined":{"pendingOrderId":12345}},"lineItems":[]}
            """
        let bad = try XCTUnwrap(SubscriptionPurchaseV2(json: try JSONValue.parse(Data(garbage.utf8))))
        XCTAssertNil(bad.onHold)
        XCTAssertNil(bad.outOfAppPurchase)
        XCTAssertEqual(bad.inGracePeriod, .init(pendingOrderId: nil))
        XCTAssertEqual(PlayPurchaseFacts(subscription: bad, productId: pro).state,
                       .unclear("subscriptionState SUBSCRIPTION_STATE_ON_HOLD"))
    }

    // MARK: - outOfAppPurchaseContext

    /// Alice's subscription granted through her backend, expired; she resubscribes in the Play Store.
    func expiredAlice(_ ledger: any SettleLedger) throws -> PurchaseToken {
        try configure(binding: "order")
        let old = token("alice-old")
        scripted(old, period: "GPA.E..0", account: "acct-alice")
        try enqueue(ledger, "o-alice", user: "alice", token: old, product: pro, account: "acct-alice")
        try pass(ledger)
        XCTAssertEqual(try order(ledger, "o-alice")?.state, .finished)
        scripted(old, state: "SUBSCRIPTION_STATE_EXPIRED", period: "GPA.E..0", account: "acct-alice",
                 acknowledged: true, expiry: "2026-12-01T00:00:00Z")
        return old
    }

    func testResubscriptionInThePlayStore_goesToTheUserOfTheExpiredGrantItNames_withTheEvidenceInItsHistory() throws {
        let ledger = try makeLedger()
        let old = try expiredAlice(ledger)
        let resubscribed = token("alice-new")
        scripted(resubscribed, period: "GPA.N..0", outOfApp: .init(expiredPurchaseToken: old))
        try subscriptionPush(ledger, "m-resub", type: 4, resubscribed)
        try pass(ledger)
        let made = try XCTUnwrap(try order(ledger, "play-GPA.N..0"))
        XCTAssertEqual(made.userId, "alice")
        XCTAssertEqual(made.state, .finished, made.lastError ?? "")
        let created = try XCTUnwrap(try history(ledger, "play-GPA.N..0").first { $0.outcome == "created" }?.detail)
        XCTAssertTrue(created.contains("outOfAppPurchaseContext") && created.contains("order o-alice"), created)
        XCTAssertFalse(created.contains(old.value), "a purchase token is a secret")
        // Her acknowledge says whose it is, so its renewals bind by themselves.
        XCTAssertEqual(fake.subscription(resubscribed.value)?.obfuscatedExternalAccountId, "acct-alice")
    }

    func testResubscriptionWhoseExpiredOrderWasRefunded_staysUnclaimed_andSaysWhy() throws {
        let ledger = try makeLedger()
        let old = try expiredAlice(ledger)
        try execute("UPDATE orders SET refunded_at = \(world.time.unixSeconds), refund_kind = 'refund' "
                    + "WHERE order_id = 'o-alice'")
        let resubscribed = token("refunded-new")
        scripted(resubscribed, period: "GPA.F..0", outOfApp: .init(expiredPurchaseToken: old))
        try subscriptionPush(ledger, "m-resub", type: 4, resubscribed)
        try pass(ledger)
        let made = try XCTUnwrap(try order(ledger, "play-GPA.F..0"))
        XCTAssertEqual(made.userId, "")
        XCTAssertEqual(made.reason, AttentionReason.unclaimedPurchase.rawValue)
        let created = try XCTUnwrap(try history(ledger, "play-GPA.F..0").first { $0.outcome == "created" }?.detail)
        XCTAssertTrue(created.contains("was refunded"), created)
        XCTAssertEqual(deliveries, ["GPA.E..0 o-alice"])
    }

    func testResubscriptionWhoseExpiredOrderSupportTransferred_staysUnclaimed_andSaysWhy() throws {
        let ledger = try makeLedger()
        let old = try expiredAlice(ledger)
        _ = try ledger.requestTransfer(orderId: "o-alice", toUser: "bob", note: "ticket 12",
                                       by: Operator(name: "sam", channel: .cli))
        let resubscribed = token("transferred-new")
        scripted(resubscribed, period: "GPA.J..0", outOfApp: .init(expiredPurchaseToken: old))
        try subscriptionPush(ledger, "m-resub", type: 4, resubscribed)
        try pass(ledger)
        let made = try XCTUnwrap(try order(ledger, "play-GPA.J..0"))
        XCTAssertEqual(made.userId, "", "neither the buyer nor the new holder: a person decides")
        XCTAssertEqual(made.reason, AttentionReason.unclaimedPurchase.rawValue)
        let created = try XCTUnwrap(try history(ledger, "play-GPA.J..0").first { $0.outcome == "created" }?.detail)
        XCTAssertTrue(created.contains("support transferred"), created)
    }

    func testResubscriptionByAnAccountIdNoVerifiedOrderCarries_orATokenNeverGranted_staysUnclaimed() throws {
        let ledger = try makeLedger()
        _ = try expiredAlice(ledger)
        let forged = token("forged")
        scripted(forged, period: "GPA.G..0",
                 outOfApp: .init(expiredPurchaseToken: token("never-granted"), expiredAccountId: "acct-mallory"))
        try subscriptionPush(ledger, "m-forged", type: 4, forged)
        try pass(ledger)
        XCTAssertEqual(try order(ledger, "play-GPA.G..0")?.userId, "")
        XCTAssertEqual(try order(ledger, "play-GPA.G..0")?.reason, AttentionReason.unclaimedPurchase.rawValue)
        // The account id the expired subscription carried is Alice's by a verified order: evidence.
        let carried = token("carried")
        scripted(carried, period: "GPA.H..0",
                 outOfApp: .init(expiredPurchaseToken: nil, expiredAccountId: "acct-alice"))
        try subscriptionPush(ledger, "m-carried", type: 4, carried)
        try pass(ledger)
        XCTAssertEqual(try order(ledger, "play-GPA.H..0")?.userId, "alice")
    }

    // MARK: - On hold, grace period

    func testOnHoldWithGooglesContext_waitsWithoutAPerson_thenIsDeliveredOnceGoogleRecovers() throws {
        let ledger = try makeLedger()
        let sub = token("held")
        scripted(sub, state: "SUBSCRIPTION_STATE_ON_HOLD", period: "GPA.K..0", expiry: "2026-11-01T00:00:00Z",
                 onHold: "GPA.K..1")
        try enqueue(ledger, "o-held", user: "alice", token: sub, product: pro)
        try pass(ledger)
        let held = try XCTUnwrap(try order(ledger, "o-held"))
        XCTAssertEqual(held.state, .pending, "Google says what happens next: not a reason for a person")
        XCTAssertEqual(held.attempts, 0)
        XCTAssertTrue((held.lastError ?? "").contains("renewal order GPA.K..1 was declined"), held.lastError ?? "")
        XCTAssertGreaterThanOrEqual(held.nextAttemptAt, world.time.unixSeconds + 3600)
        // Google recovers the payment and pushes SUBSCRIPTION_RECOVERED: the order is due at once.
        scripted(sub, period: "GPA.K..1", account: nil)
        try subscriptionPush(ledger, "m-recovered", type: 1, sub)
        try pass(ledger)
        XCTAssertEqual(try order(ledger, "o-held")?.state, .finished)
        XCTAssertEqual(deliveries, ["GPA.K..1 o-held"])
    }

    func testOnHoldWithoutAContext_stillNeedsAPerson() throws {
        let ledger = try makeLedger()
        let sub = token("held-bare")
        scripted(sub, state: "SUBSCRIPTION_STATE_ON_HOLD", period: "GPA.L..0", expiry: "2026-11-01T00:00:00Z")
        try enqueue(ledger, "o-bare", user: "alice", token: sub, product: pro)
        try pass(ledger)
        XCTAssertEqual(try order(ledger, "o-bare")?.state, .needsAttention)
        XCTAssertEqual(try order(ledger, "o-bare")?.reason, AttentionReason.purchaseStateUnclear.rawValue)
    }

    func testGracePeriodContext_isDelivered_andShownInTheOrdersStatus() throws {
        let ledger = try makeLedger()
        let sub = token("grace")
        var purchase = SubscriptionPurchaseV2(
            rawSubscriptionState: "SUBSCRIPTION_STATE_IN_GRACE_PERIOD", lineItems: [
                .init(productId: pro, expiryTime: "2099-01-08T00:00:00Z", latestSuccessfulOrderId: "GPA.M..0")],
            latestOrderId: "GPA.M..1")
        purchase.inGracePeriod = .init(pendingOrderId: "GPA.M..1")
        fake.script(subscription: sub.value, purchase)
        try enqueue(ledger, "o-grace", user: "alice", token: sub, product: pro)
        try pass(ledger)
        XCTAssertEqual(try order(ledger, "o-grace")?.state, .finished)
        let section = try XCTUnwrap(GooglePlayModule.orderSections(ledger, orderId: "o-grace").first)
        XCTAssertTrue(section.text.contains("grace period until 2099-01-08T00:00:00Z"), section.text)
        XCTAssertTrue(section.text.contains("GPA.M..1"), section.text)
        // The customer view shows it on the subscription's line.
        let customer = try CustomerReport.read(ledger, userId: "alice", configuration: try world.configuration(),
                                               now: world.time.unixSeconds)
        let line = try XCTUnwrap(customer.entries.first?.subscription)
        XCTAssertTrue(line.hasPrefix("active until") && line.contains("grace period until 2099-01-08T00:00:00Z"), line)
    }
}

/// `PlayFinisher.accountIdToSend` on its own: which ids a user's binding gives, and which are never sent.
enum PlayFinisherProbe {
    static func accountId(user: String, binding: UserBinding.TokenSource = .userId) -> String? {
        let order = Order(orderId: "o", userId: user, productId: "pro", state: .delivering, attempts: 0,
                          nextAttemptAt: 0, createdAt: 0, updatedAt: 0, store: .googlePlay)
        let purchase = SubscriptionPurchaseV2(rawSubscriptionState: "SUBSCRIPTION_STATE_ACTIVE", lineItems: [],
                                              latestOrderId: nil)
        return PlayFinisher.accountIdToSend(order, binding: UserBinding(tokenSource: binding), purchase: purchase)
    }
}
