import SettleModel

/// Google's counterpart of Apple's Set App Account Token: since 2025-11-19 a subscription's
/// acknowledge may carry `externalAccountIds.obfuscatedAccountId`, which Google then shows on the
/// purchase and its renewals (a resubscription made in the Play Store included), so they bind by
/// themselves. settle sends it once the order is delivered to its user (the backend's order, a
/// verified binding, or `settle assign`): the id the binding rules give that user, never guessed.
/// Google offers no call that sets it on a purchase acknowledged already; such an order says so.
extension PlayFinisher {
    /// The outcome words a subscription's acknowledge ends with (the order's history, metrics).
    package enum AccountIdOutcome {
        /// Acknowledged, and the acknowledge carried the user's account id.
        static let sent = "acknowledged_with_account_id"
        /// Acknowledged before settle could say whose it is (the app, or settle before an
        /// assignment): Google has no later call, so the account id was not sent.
        static let notSentAlreadyAcknowledged = "already_acknowledged_account_id_not_sent"
        /// Google refused the acknowledge with the account id; acknowledged without it.
        static let refusedByGoogle = "acknowledged_account_id_refused"
    }

    /// Google's limit on `obfuscatedAccountId`.
    package static let accountIdMaxLength = 64

    /// The account id the acknowledge of `order`'s subscription carries; nil when it carries none:
    /// Google's purchase names an account already, the binding gives the user none (`order` with no
    /// id stored with the order), or the id is not one Google takes (longer than 64 characters, or
    /// shaped like an e-mail address, which Google blocks as personal data: never risk the acknowledge).
    package static func accountIdToSend(_ order: Order, binding: UserBinding,
                                        purchase: SubscriptionPurchaseV2) -> String? {
        guard purchase.obfuscatedExternalAccountId == nil, !order.userId.isEmpty,
              let id = PlayVerifier.expectedAccountId(binding, order),
              id.count <= Self.accountIdMaxLength, !id.contains("@"),
              id.unicodeScalars.allSatisfy({ $0.value > 0x20 && $0.value < 0x7F }) else { return nil }
        return id
    }

    /// Acknowledges a delivered subscription, with the user's account id where there is one to
    /// send; the purchase is read first and nothing is sent when Google says it is acknowledged.
    func acknowledgeSubscription(_ order: Order, token: PurchaseToken) throws(PlayAPIError) -> StoreFinishOutcome {
        let purchase = try client.subscriptionPurchase(token: token)
        let accountId = Self.accountIdToSend(order, binding: binding, purchase: purchase)
        if purchase.acknowledgementState == .acknowledged {
            return .finished(accountId == nil ? "already_acknowledged" : AccountIdOutcome.notSentAlreadyAcknowledged)
        }
        guard let accountId else {
            try client.acknowledgeSubscription(subscriptionId: order.productId, token: token)
            return .finished("acknowledged")
        }
        do throws(PlayAPIError) {
            try client.acknowledgeSubscription(subscriptionId: order.productId, token: token, accountId: accountId)
            return .finished(AccountIdOutcome.sent)
        } catch where error.kind == .refused {
            // The acknowledge is what keeps Google from refunding the purchase: never lost to the extra field.
            try client.acknowledgeSubscription(subscriptionId: order.productId, token: token)
            return .finished(AccountIdOutcome.refusedByGoogle)
        }
    }
}
