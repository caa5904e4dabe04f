import Foundation
import SettleBase
import SettleModel
import SettleConfig

/// Re-verifies a Google Play order: reads its purchase (`purchases.productsv2`, which names the
/// purchase option bought, or
/// `purchases.subscriptionsv2.get` for an auto-renewable product) and lets
/// `PlayPurchaseEligibility` decide, with the same `user_binding` as App Store orders. The Play
/// counterpart of `StoreKitVerifier`; the ledger's grant reservation decides who holds the
/// purchase, keyed by Google's `orderId`.
///
/// Google as a whole being unavailable (429, 5xx, no answer) is store-wide: the order keeps its
/// attempt, and it counts toward Google Play's own breaker (kept in the ledger, shared by every
/// pass and host, honouring Google's Retry-After); a Google outage never holds back App Store
/// orders, nor an Apple outage Play orders.
package final class PlayVerifier: OrderVerifier {
    package let client: PlayDeveloperClient
    package let products: [String: Configuration.Product]
    package let eligibility: PlayPurchaseEligibility
    package let binding: UserBinding
    package let time: any TimeSource
    /// What the ledger knows of Play purchases (grants, voidings, a person's retry); without it
    /// (tests of the rules alone) Google's answer is all there is.
    package let records: (any PlayGrantRecords)?
    /// `google_play.order_prices`: each verified purchase's price is read with `orders.get` (`PlayOrderPrice`).
    package let readsOrderPrices: Bool

    package init(client: PlayDeveloperClient, products: [String: Configuration.Product], acceptSandbox: Bool, binding: UserBinding,
                time: any TimeSource, records: (any PlayGrantRecords)? = nil, readsOrderPrices: Bool = false) {
        self.readsOrderPrices = readsOrderPrices
        self.records = records
        self.client = client
        self.products = products
        eligibility = PlayPurchaseEligibility(acceptSandbox: acceptSandbox)
        self.binding = binding
        self.time = time
    }

    package func verify(_ order: Order) throws -> Verification {
        let started = DispatchTime.now()
        var verification = try check(order)
        verification.durationMs = Int((DispatchTime.now().uptimeNanoseconds - started.uptimeNanoseconds) / 1_000_000)
        return verification
    }

    private func check(_ order: Order) throws -> Verification {
        guard case let .purchaseToken(token)? = order.proof else {
            return Verification(outcome: .needsAttention(reason: .rowInvalid,
                detail: "the google_play order has no usable purchase_token (missing, or not printable ASCII): store the token the app got from Play Billing, then settle retry \(order.orderId)"))
        }
        guard let product = products[order.productId], product.stores.contains(.googlePlay) else {
            return Verification(outcome: .needsAttention(reason: .unknownProduct,
                detail: "product \(order.productId) is not a google_play product in the configuration's products (\"store\": \"google_play\" or \"both\"); add it, then settle retry \(order.orderId)"))
        }
        let facts: PlayPurchaseFacts
        var expiresMs: Int64? = nil
        var startMs: Int64? = nil
        var linked: PurchaseToken? = nil
        var kept = false
        // What Google says of a subscription on hold or in its grace period, for the order's history.
        var holdContext: String? = nil
        do {
            if product.kind == .autoRenewable {
                let subscription = try client.subscriptionPurchase(token: token)
                holdContext = subscription.holdContext
                var read = PlayPurchaseFacts(subscription: subscription, productId: order.productId)
                linked = subscription.linkedPurchaseToken
                expiresMs = subscription.lineItems.first { $0.productId == order.productId }?.expiry
                    .map { Int64(saturating: ($0.timeIntervalSince1970 * 1000).rounded(.down)) }
                startMs = SubscriptionPurchaseV2.LineItem(productId: order.productId, expiryTime: subscription.startTime).expiry
                    .map { Int64(saturating: ($0.timeIntervalSince1970 * 1000).rounded(.down)) }
                // Retried across a renewal: the order keeps the period it holds while the purchase
                // is active (the renewal is an order of its own), rather than conflicting with it.
                if let held = order.verified, read.state == .purchased, read.orderId != held.grantKey {
                    read.orderId = held.grantKey
                    (startMs, expiresMs) = (held.purchaseDateMs, held.expiresDateMs)
                    kept = true
                }
                facts = read
            } else {
                let purchase = try client.productPurchaseV2(token: token)
                facts = PlayPurchaseFacts(productV2: purchase, productId: order.productId)
                if let item = purchase.lineItems.first(where: { $0.productId == order.productId }) {
                    switch Self.option(item, of: product, productId: order.productId) {
                    case let .refused(why):
                        return Verification(outcome: .needsAttention(reason: .unknownProduct, detail: why + "; then settle retry \(order.orderId)"),
                                            environment: facts.isTest ? PlayEnvironment.sandbox.rawValue : PlayEnvironment.production.rawValue,
                                            storeAnswered: true)
                    case let .rental(seconds):
                        // A rental ends its period after the purchase completed: the hook takes it back then.
                        expiresMs = facts.purchaseTimeMillis.map { $0.saturatingAdding(seconds.saturatingMultiplied(by: 1000)) }
                    case .permanent:
                        break
                    }
                }
            }
        } catch {
            return failure(error)
        }
        // Google gives a subscription's start, not a period's: a later period starts where the
        // one before it ended, the newest earlier grant of the same token.
        if product.kind == .autoRenewable, !kept, let records, let key = facts.orderId,
           let previous = try records.grants(token: token).first(where: { held in
               held.grantKey != key && (held.expiresDateMs ?? .max) < (expiresMs ?? .max) }),
           let end = previous.expiresDateMs {
            startMs = end
        }
        var verification = try decide(order, facts: facts, token: token, expiresMs: expiresMs, startMs: startMs, linked: linked,
                                      subscription: product.kind == .autoRenewable)
        verification.storeAnswered = true
        verification.learned = holdContext.map(PlayStateContext.init)
        return verification
    }

    private func failure(_ error: PlayAPIError) -> Verification {
        switch error.kind {
        case .purchaseNotFound:
            return Verification(outcome: .rejected(reason: .purchaseNotFound, detail: error.message), environment: nil, storeAnswered: true)
        case .configuration:
            return Verification(outcome: .configurationFault("Google Play: \(error.message)"))
        case .refused:
            return Verification(outcome: .retry(error.description), storeAnswered: true)
        case .unavailable:
            return Verification(outcome: .storeUnavailable(error.description, retryAfter: error.retryAfter))
        case .paced:
            return Verification(outcome: .paced(error.message))
        }
    }

    private func decide(_ order: Order, facts original: PlayPurchaseFacts, token: PurchaseToken, expiresMs: Int64?,
                        startMs: Int64?, linked: PurchaseToken?, subscription: Bool) throws -> Verification {
        var facts = original
        facts.accountId = facts.accountId.map(PlayVerifier.normalized)
        let expected = PlayVerifier.expectedAccountId(binding, order)
        let environment = facts.isTest ? PlayEnvironment.sandbox.rawValue : PlayEnvironment.production.rawValue
        if let actual = facts.accountId, expected == nil, facts.productIds.contains(order.productId) {
            return Verification(outcome: .needsAttention(reason: .tokenUnverifiable,
                detail: "the purchase carries obfuscatedExternalAccountId \(actual), and no account id is known for user \(order.userId) to check it against (user_binding.app_account_token: \(binding.tokenSource.rawValue))"),
                environment: environment)
        }
        func verified(_ grant: PlayGrant) throws -> Verification {
            // What Google voided of it is taken out where the grant is reserved (`recordVerified`).
            if let elsewhere = try finishedElsewhere(order, grant, token: token, subscription: subscription) {
                return Verification(outcome: .needsAttention(reason: .finishedElsewhere, detail: elsewhere), environment: environment)
            }
            var purchase = VerifiedPurchase(transactionId: grant.grantKey, originalTransactionId: grant.grantKey, productId: grant.productId,
                                            environment: grant.environment.rawValue, quantity: grant.quantity,
                                            purchaseDateMs: grant.purchaseTimeMillis ?? startMs, expiresDateMs: expiresMs,
                                            grantKey: grant.grantKey)
            if readsOrderPrices { purchase.price = paid(orderId: grant.grantKey) }
            // An upgrade, downgrade or resubscription of a subscription this user holds: the hook ends the old one.
            if let linked, let records {
                purchase.replaces = try records.grants(token: linked).first { $0.userId == order.userId }?.grantKey
            }
            return Verification(outcome: .verified(.only(purchase)), environment: environment)
        }
        switch eligibility.decide(facts, token: token, productId: order.productId, expectedAccountId: expected) {
        case let .grant(grant):
            return try verified(grant)
        case let .unbound(grant):
            switch binding.tokenlessSignedProofs {
            case .trust: return try verified(grant)
            case .refuse:
                return Verification(outcome: .rejected(reason: .proofUnbound, detail: "purchase \(grant.grantKey) carries no obfuscatedExternalAccountId and user_binding.tokenless_signed_proofs is refuse"), environment: environment)
            case .needsAttention:
                return Verification(outcome: .needsAttention(reason: .proofUnbound, detail: "purchase \(grant.grantKey) carries no obfuscatedExternalAccountId: check it is user \(order.userId)'s"), environment: environment)
            }
        case let .wait(message):
            var waiting = Verification(outcome: .retry(message), environment: environment)
            waiting.keepsAttempt = true
            // A slow payment takes hours or days; a notification that it completed makes the order due at once.
            waiting.retryAfterSeconds = PlayVerifier.pendingRecheckSeconds
            // An account hold lasts up to 60 days: asked again every few hours, or at once on Google's recovered push.
            if case .suspended = facts.state { waiting.retryAfterSeconds = PlayVerifier.holdRecheckSeconds }
            return waiting
        case let .rejected(rejection, message):
            let reason: RejectionReason
            switch rejection {
            case .canceled: reason = .canceled
            case .sandboxNotAccepted: reason = .sandboxNotAccepted
            case .userMismatch: reason = .userMismatch
            case .productMismatch: reason = .productMismatch
            }
            return Verification(outcome: .rejected(reason: reason, detail: message), environment: environment)
        case let .needsAttention(message):
            return Verification(outcome: .needsAttention(reason: .purchaseStateUnclear, detail: message), environment: environment)
        }
    }

    /// Why a purchase Google says was consumed or acknowledged must not be delivered by settle
    /// without a person: settle consumes and acknowledges only what it delivered, so someone else
    /// finished it (the app, another backend), most likely after granting it. Nil when the
    /// ledger explains the state instead: another order or an outside grant holds the key (the
    /// ledger rejects or finishes the order for that), a subscription's acknowledgement is
    /// settle's own of an earlier period, or a person retried the order after it was set aside.
    private func finishedElsewhere(_ order: Order, _ grant: PlayGrant, token: PurchaseToken,
                                   subscription: Bool) throws -> String? {
        guard grant.alreadyConsumed || grant.alreadyAcknowledged, let records else { return nil }
        switch try records.holder(grantKey: grant.grantKey) {
        case .outside?: return nil
        case let .order(holder)? where holder != order.orderId: return nil
        default: break
        }
        if subscription, try records.grants(token: token).contains(where: { $0.grantKey != grant.grantKey }) { return nil }
        if try records.wasSetAside(orderId: order.orderId, reason: .finishedElsewhere) { return nil }
        let id = Verdict.shellWord(order.orderId)
        return "Google Play says purchase \(grant.grantKey) was already \(grant.alreadyConsumed ? "consumed" : "acknowledged"), "
            + "which settle does only after its own delivery, and settle never delivered it: the app or another backend finished it, "
            + "most likely after granting it. If the customer has it: settle resolve \(id) --as granted_by_hand; "
            + "if not: settle retry \(id) (settle then delivers it)"
    }

    /// What a one-time purchase's purchase option makes of the configured product.
    enum Option: Equatable {
        case permanent
        /// A rental of this many seconds.
        case rental(Int64)
        case refused(String)
    }

    /// A configured product that names a purchase option is that option only; a rental is
    /// granted only as a product with a rental period, never like a permanent one.
    static func option(_ item: ProductPurchaseV2.LineItem, of product: Configuration.Product, productId: String) -> Option {
        let bought = item.purchaseOptionId.map { "purchase option \($0)" } ?? "a purchase option Google does not name"
        if let wanted = product.purchaseOption, wanted != item.purchaseOptionId {
            return .refused("the purchase of \(productId) is \(bought)\(item.isRental ? " (a rental)" : ""), and products.\(productId) "
                            + "is purchase option \(wanted) (purchase_option): grant it by hand, or configure the option")
        }
        if item.isRental {
            guard let seconds = product.rentalPeriodSeconds else {
                return .refused("the purchase of \(productId) is a rental (\(bought)), and products.\(productId) names no rental_period: "
                                + "a rental is never granted as a permanent product; set purchase_option and rental_period")
            }
            return .rental(seconds)
        }
        return product.rentalPeriodSeconds.map { .rental($0) } ?? .permanent
    }

    /// How long a purchase pending payment waits before Google is asked again (at most `backoff_max_seconds`).
    package static let pendingRecheckSeconds: Double = 600
    /// How long a subscription on hold, whose declined renewal Google keeps retrying, waits before
    /// Google is asked again.
    package static let holdRecheckSeconds: Double = 6 * 3600

    /// The obfuscatedExternalAccountId the order's user must carry, by `user_binding.app_account_token`:
    /// the one stored with the order, the user id itself, or the user id's version-5 UUID.
    package static func expectedAccountId(_ binding: UserBinding, _ order: Order) -> String? {
        switch binding.tokenSource {
        case .order: return order.appAccountToken.flatMap { $0.isEmpty ? nil : normalized($0) }
        case .userId: return order.userId.isEmpty ? nil : normalized(order.userId)
        case .uuid5: return binding.namespace.map { UserBinding.uuid5(namespace: $0, name: order.userId).uuidString.lowercased() }
        }
    }

    /// A UUID in any case compares as its lowercase spelling; any other id as it is.
    package static func normalized(_ id: String) -> String { UUID(uuidString: id)?.uuidString.lowercased() ?? id }
}
