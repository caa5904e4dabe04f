import SettleModel
import SettleConfig

/// Tells Google a delivered purchase is done, after the hook said delivered: consumes a
/// consumable (which acknowledges it and lets the customer buy it again), acknowledges any other
/// one-time product and subscriptions. What would refund the purchase after three days is the
/// missing acknowledgement, so this must happen; what must never happen is doing it before the
/// goods were granted.
///
/// The purchase is read first, and nothing is sent when Google says it is done already (the app
/// acknowledged it, or settle did just before a crash): finishing is safe to repeat.
package struct PlayFinisher: StoreFinisher {
    package let client: PlayDeveloperClient
    package let products: [String: Configuration.Product]
    /// Says which obfuscated account id a subscription's acknowledge carries (`accountIdToSend`, in `PlayFinisher+AccountId.swift`).
    package var binding: UserBinding

    package init(client: PlayDeveloperClient, products: [String: Configuration.Product],
                 binding: UserBinding = UserBinding()) {
        self.client = client
        self.products = products
        self.binding = binding
    }

    package func finish(_ order: Order) -> StoreFinishOutcome {
        guard let token = order.purchaseToken else { return .failed("the order has no usable purchase token", configuration: false) }
        let kind = products[order.productId]?.kind
        do {
            if kind == .autoRenewable { return try acknowledgeSubscription(order, token: token) }
            let purchase = try client.productPurchaseV2(token: token)
            if kind == .consumable {
                let item = purchase.lineItems.first { $0.productId == order.productId } ?? purchase.lineItems.first
                if item?.consumed == true { return .finished("already_consumed") }
                try client.consumeProduct(productId: order.productId, token: token)
                return .finished("consumed")
            }
            if purchase.acknowledged { return .finished("already_acknowledged") }
            try client.acknowledgeProduct(productId: order.productId, token: token)
            return .finished("acknowledged")
        } catch {
            switch error.kind {
            case .configuration: return .failed("Google Play: \(error.message)", configuration: true)
            // Delivered, and Google no longer knows the token (refunded and gone, expired):
            // nothing is left to acknowledge.
            case .purchaseNotFound: return .finished("not_acknowledged: \(error.message)")
            case .unavailable:
                return .failed(error.description, configuration: false)
            case .paced:
                return .paced(error.message)
            case .refused:
                return .refused(error.description)
            }
        }
    }
}
