import SettleModel
import SettleConfig

/// Tells Huawei an order's goods were granted: the shipped confirm of its purchase order (the
/// subscription one for an auto-renewing product), sent only after the grant is durable. An
/// order confirmed before (a confirm that reached Huawei before a crash) is finished too.
package struct HuaweiFinisher: StoreFinisher {
    package let client: IAPKitClient
    package let products: [String: Configuration.Product]

    package init(client: IAPKitClient, products: [String: Configuration.Product]) {
        self.client = client
        self.products = products
    }

    package func finish(_ order: Order) -> StoreFinishOutcome {
        guard let proof = HuaweiProof(order.storeProof) else {
            return .refused("the order holds no Huawei proof to confirm")
        }
        // The purchase order granted: the verified one (a subscription's current period), else the proof's.
        let purchaseOrderId = order.verified?.transactionId ?? proof.purchaseOrderId
        let subscription = products[order.productId]?.kind == .autoRenewable
        switch client.confirmShipped(
            subscription: subscription, purchaseOrderId: purchaseOrderId, purchaseToken: proof.purchaseToken)
        {
        case let .success(word):
            return .finished(word)
        case let .failure(failure):
            switch failure.kind {
            case .configuration: return .failed(failure.message, configuration: true)
            case .unavailable: return .failed(failure.message, configuration: false)
            case .paced: return .paced(failure.message)
            case .notFound, .refused: return .refused(failure.message)
            }
        }
    }
}
