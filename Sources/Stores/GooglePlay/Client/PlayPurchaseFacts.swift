import Foundation

/// Google's sandbox or the real store, as the hook and status show it (the App Store's words).
package enum PlayEnvironment: String, Sendable {
    case production = "Production"
    /// A license tester's purchase (`purchaseType` 0, or a subscription's `testPurchase`).
    case sandbox = "Sandbox"
}

/// What the eligibility rules need to know of a purchase Google confirmed, one-time product
/// and subscription alike: the two answers say the same things in different words.
package struct PlayPurchaseFacts: Sendable, Equatable {
    package enum State: Sendable, Equatable {
        case purchased
        /// Paid for by a slow method (cash, bank transfer): nothing is owed until it is purchased.
        case pending
        /// Never paid, or canceled before completion.
        case canceled
        /// A state settle has no rule for (expired, on hold, paused, or one Google added): a person decides.
        case unclear(String)
        /// On hold, and Google says what happens next (`onHoldStateContext`: it keeps retrying the
        /// declined renewal): nothing to decide yet, settle asks again later (the words say why).
        case suspended(String)
    }

    package var state: State
    package var orderId: String?
    package var productIds: [String]
    package var isTest: Bool
    package var accountId: String?
    package var quantity: Int
    package var purchaseTimeMillis: Int64?
    package var acknowledged: Bool
    package var consumed: Bool

    package init(state: State, orderId: String?, productIds: [String], isTest: Bool, accountId: String?, quantity: Int = 1,
                purchaseTimeMillis: Int64? = nil, acknowledged: Bool = false, consumed: Bool = false) {
        self.state = state
        self.orderId = orderId
        self.productIds = productIds
        self.isTest = isTest
        self.accountId = accountId
        self.quantity = quantity
        self.purchaseTimeMillis = purchaseTimeMillis
        self.acknowledged = acknowledged
        self.consumed = consumed
    }

    /// A one-time purchase, read for `productId` (the id the call named, when the answer omits it).
    package init(product p: ProductPurchase, productId: String) {
        let state: State
        switch p.purchaseState {
        case .purchased?: state = .purchased
        case .pending?: state = .pending
        case .canceled?: state = .canceled
        case nil: state = .unclear("purchaseState \(p.rawPurchaseState.map(String.init) ?? "absent")")
        }
        self.init(state: state, orderId: p.orderId, productIds: [p.productId ?? productId], isTest: p.purchaseType == .test,
                  accountId: p.obfuscatedExternalAccountId, quantity: max(1, p.quantity ?? 1),
                  purchaseTimeMillis: p.purchaseTimeMillis, acknowledged: p.acknowledgementState == .acknowledged,
                  consumed: p.consumptionState == .consumed)
    }

    /// A subscription, read for `productId` (its line item; nil: the first). A canceled one was
    /// paid for and runs to its expiry, so it counts as purchased. The order is the line item's
    /// `latestSuccessfulOrderId`, never the deprecated `latestOrderId`, which may name a pending
    /// or declined renewal: a subscription Google calls active without a successful order is
    /// left to a person rather than granted under a guessed key.
    package init(subscription s: SubscriptionPurchaseV2, productId: String?) {
        let orderId = s.lineItem(productId)?.latestSuccessfulOrderId
        var state: State
        switch s.subscriptionState {
        case .active?, .inGracePeriod?, .canceled?: state = .purchased
        case .pending?: state = .pending
        case .pendingPurchaseCanceled?: state = .canceled
        case .onHold? where s.holdContext != nil: state = .suspended(s.holdContext ?? "")
        case .expired?, .onHold?, .paused?, nil: state = .unclear("subscriptionState \(s.rawSubscriptionState ?? "absent")")
        }
        if state == .purchased && orderId == nil {
            state = .unclear("\(s.rawSubscriptionState ?? "a subscription state") without lineItems[].latestSuccessfulOrderId")
        }
        self.init(state: state, orderId: orderId, productIds: s.lineItems.map(\.productId), isTest: s.isTestPurchase,
                  accountId: s.obfuscatedExternalAccountId, acknowledged: s.acknowledgementState == .acknowledged)
    }

    /// A one-time purchase as productsv2 answers it, read for `productId` (its line item; nil: the first).
    package init(productV2 p: ProductPurchaseV2, productId: String?) {
        let item = p.lineItems.first { $0.productId == productId } ?? p.lineItems.first
        let state: State
        switch p.rawPurchaseState {
        case "PURCHASED"?: state = .purchased
        case "PENDING"?: state = .pending
        case "CANCELLED"?: state = .canceled
        default: state = .unclear("purchaseState \(p.rawPurchaseState ?? "absent")")
        }
        self.init(state: state, orderId: p.orderId, productIds: p.lineItems.map(\.productId), isTest: p.isTest,
                  accountId: p.obfuscatedExternalAccountId, quantity: max(1, item?.quantity ?? 1), purchaseTimeMillis: p.completionMillis,
                  acknowledged: p.acknowledged, consumed: item?.consumed ?? false)
    }
}
