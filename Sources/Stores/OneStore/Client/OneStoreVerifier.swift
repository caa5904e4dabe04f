import Foundation
import SettleBase
import SettleModel
import SettleConfig

/// Re-verifies a ONE store order (one-store.md sections 3 and 11): purchase details on the
/// commercial host (and the sandbox host, a separate ledger, when sandbox is accepted), under the
/// configured market code; granted only when purchased, the claimed purchase id, a sane quantity,
/// bound to the order's user, and not consumed or acknowledged by anyone else. Keyed by `purchaseId`.
///
/// A purchase neither host knows under the configured market code is asked for once under the
/// other code: found there, the configuration is wrong (a configuration fault naming
/// `one_store.market_code`), not the purchase.
package struct OneStoreVerifier: Sendable {
    package let client: OneStoreClient
    package let products: [String: Configuration.Product]
    package let acceptSandbox: Bool
    package let binding: UserBinding

    package init(
        client: OneStoreClient, products: [String: Configuration.Product], acceptSandbox: Bool, binding: UserBinding
    ) {
        (self.client, self.products, self.acceptSandbox, self.binding) = (client, products, acceptSandbox, binding)
    }

    /// Where a purchase was found, and what ONE store says of it.
    package enum Read {
        case found(OneStorePurchase, OneStoreClient.Host)
        case verification(Verification)
    }

    /// The purchase, from the host that knows it.
    package func read(_ proof: OneStoreProof) -> Read {
        var hosts: [OneStoreClient.Host] = [.commercial]
        if acceptSandbox { hosts.append(.sandbox) }
        for host in hosts {
            switch client.purchase(proof, on: host) {
            case let .success(purchase): return .found(purchase, host)
            case let .failure(failure) where failure.kind == .notFound: continue
            case let .failure(failure): return .verification(Self.verification(failure))
            }
        }
        // Unknown everywhere under the configured code: is it the code?
        let other =
            client.settings.marketCode == .korea ? Configuration.OneStoreConfiguration.MarketCode.global : .korea
        for host in hosts {
            if case .success = client.purchase(proof, on: host, market: other.rawValue) {
                return .verification(
                    Verification(
                        outcome: .configurationFault(
                            "ONE store knows purchase \(proof.purchaseId) under market code \(other.rawValue), not one_store.market_code "
                                + "\(client.settings.marketCode.rawValue): set one_store.market_code to \(other.rawValue) for this app"
                        )))
            }
        }
        return .verification(
            Verification(
                outcome: .rejected(
                    reason: .purchaseNotFound,
                    detail:
                        "ONE store knows no purchase \(proof.purchaseId) of product \(proof.productId) with this token"
                        + (acceptSandbox ? " (commercial or sandbox)" : " (commercial; accept_sandbox is false)")),
                storeAnswered: true))
    }

    package func verify(_ order: Order) -> Verification {
        guard let proof = OneStoreProof(order.storeProof) else {
            return Verification(
                outcome: .needsAttention(
                    reason: .proofMissing, detail: "a ONE store order needs its productId, purchaseToken and purchaseId"
                ))
        }
        guard let product = products[order.productId], product.stores.contains(.oneStore) else {
            return Verification(
                outcome: .needsAttention(
                    reason: .unknownProduct, detail: "product \(order.productId) is not configured for store one_store")
            )
        }
        guard product.kind != .autoRenewable else {
            return Verification(
                outcome: .needsAttention(
                    reason: .purchaseStateUnclear,
                    detail:
                        "ONE store's subscription API is not documented: settle does not settle ONE store subscriptions"
                ))
        }
        guard proof.productId == order.productId else {
            return Verification(
                outcome: .rejected(
                    reason: .productMismatch,
                    detail: "the proof is for product \(proof.productId), not \(order.productId)"))
        }
        switch read(proof) {
        case let .verification(verification): return verification
        case let .found(purchase, host): return decide(order, proof, purchase, host: host)
        }
    }

    private func decide(
        _ order: Order, _ proof: OneStoreProof, _ purchase: OneStorePurchase, host: OneStoreClient.Host
    ) -> Verification {
        let environment = host == .sandbox ? "sandbox" : "production"
        func answer(_ outcome: VerificationOutcome) -> Verification {
            Verification(outcome: outcome, environment: environment, storeAnswered: true)
        }
        guard purchase.purchaseId == proof.purchaseId else {
            return answer(
                .rejected(
                    reason: .transactionNotFound,
                    detail:
                        "the token is ONE store's purchase \(purchase.purchaseId), not the claimed \(proof.purchaseId)")
            )
        }
        switch purchase.purchaseState {
        case 0: break
        case 1:
            return answer(
                .rejected(reason: .refunded, detail: "ONE store cancelled (refunded) purchase \(purchase.purchaseId)"))
        default:
            return answer(
                .needsAttention(
                    reason: .purchaseStateUnclear,
                    detail: "ONE store says purchase \(purchase.purchaseId) has purchaseState \(purchase.purchaseState)"
                ))
        }
        if let problem = Self.bindingProblem(
            binding, order, payload: purchase.developerPayload, purchase: "purchase \(purchase.purchaseId)")
        {
            return answer(problem)
        }
        if purchase.consumptionState == 1 || purchase.acknowledgeState == 1 {
            return answer(
                .needsAttention(
                    reason: .finishedElsewhere,
                    detail:
                        "ONE store says purchase \(purchase.purchaseId) was already \(purchase.consumptionState == 1 ? "consumed" : "acknowledged"), "
                        + "and not by settle: the app may have delivered it"))
        }
        let offsetMs = Int64(client.settings.purchaseTimeOffsetHours) * 3_600_000
        return answer(
            .verified(
                .only(
                    VerifiedPurchase(
                        transactionId: purchase.purchaseId, originalTransactionId: purchase.purchaseId,
                        productId: order.productId,
                        environment: environment, quantity: purchase.quantity,
                        purchaseDateMs: purchase.purchaseTimeMs.map { max(0, $0 - offsetMs) },
                        expiresDateMs: nil))))
    }

    /// What `user_binding` says of a purchase whose developer payload is `payload` (ONE store
    /// reports an empty payload as `""` in sandbox and `null` in commercial: both are none).
    package static func bindingProblem(
        _ binding: UserBinding, _ order: Order, payload: String?, purchase: String
    ) -> VerificationOutcome? {
        binding.accountIdProblem(payload, field: "developerPayload", order: order, purchase: purchase)
    }

    package static func verification(_ failure: OneStoreClient.Failure) -> Verification {
        switch failure.kind {
        case .notFound:
            return Verification(
                outcome: .rejected(reason: .purchaseNotFound, detail: failure.message), storeAnswered: true)
        case .configuration: return Verification(outcome: .configurationFault(failure.message))
        case .refused:
            return Verification(
                outcome: .needsAttention(reason: .storeRefused, detail: failure.message), storeAnswered: true)
        case .unavailable:
            return Verification(outcome: .storeUnavailable(failure.message, retryAfter: failure.retryAfter))
        case .paced: return Verification(outcome: .paced(failure.message))
        }
    }
}

/// Tells ONE store an order's goods were granted, on the host that knows the purchase: consume
/// for a consumable, acknowledge otherwise. Refused (409 `InvalidPurchaseState`) is re-read: a
/// purchase already consumed or acknowledged is done; otherwise the refusal counts an attempt.
package struct OneStoreFinisher: StoreFinisher {
    package let verifier: OneStoreVerifier

    package init(verifier: OneStoreVerifier) { self.verifier = verifier }

    package func finish(_ order: Order) -> StoreFinishOutcome {
        guard let proof = OneStoreProof(order.storeProof) else {
            return .refused("the order holds no ONE store proof to acknowledge")
        }
        let consume = verifier.products[order.productId]?.kind == .consumable
        let host: OneStoreClient.Host = order.verified?.environment == "sandbox" ? .sandbox : .commercial
        switch verifier.client.finish(proof, consume: consume, on: host, developerPayload: nil) {
        case .success:
            return .finished(consume ? "consumed" : "acknowledged")
        case let .failure(failure):
            if failure.kind == .refused, case let .success(purchase) = verifier.client.purchase(proof, on: host),
                (consume ? purchase.consumptionState : purchase.acknowledgeState) == 1
            {
                return .finished(consume ? "already_consumed" : "already_acknowledged")
            }
            switch failure.kind {
            case .configuration: return .failed(failure.message, configuration: true)
            case .unavailable: return .failed(failure.message, configuration: false)
            case .notFound, .refused: return .refused(failure.message)
            case .paced: return .paced(failure.message)
            case .paced: return .paced(failure.message)
            }
        }
    }
}
