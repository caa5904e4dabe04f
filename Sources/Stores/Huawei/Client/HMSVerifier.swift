import Foundation
import SettleBase
import SettleModel
import SettleConfig

/// Re-verifies an HMS IAP order (huawei-appgallery.md sections 2.3 to 2.5 and 3): the client's
/// signed purchase data, when the proof carries it, must verify with the app's IAP public key
/// (a forged one is refused before Huawei is asked); then `tokens/verify` on the purchase's site,
/// whose signed answer is what is granted: the order's product and token, purchased, the
/// product's kind, an accepted environment, bound to the order's user, not confirmed by anyone
/// else. Keyed once by HMS's `orderId`. Subscriptions are not verified here yet.
package struct HMSVerifier: Sendable {
    package let client: HMSClient
    package let appId: String
    package let products: [String: Configuration.Product]
    package let acceptSandbox: Bool
    package let binding: UserBinding

    package init(
        client: HMSClient, appId: String, products: [String: Configuration.Product], acceptSandbox: Bool,
        binding: UserBinding
    ) {
        (self.client, self.appId, self.products, self.acceptSandbox, self.binding) = (
            client, appId, products, acceptSandbox, binding
        )
    }

    package func verify(_ order: Order) -> Verification {
        guard let proof = HMSProof(order.storeProof) else {
            return Verification(
                outcome: .needsAttention(
                    reason: .proofMissing, detail: "an HMS IAP order needs its purchase token and product id"))
        }
        guard let product = products[order.productId], product.stores.contains(.huawei) else {
            return Verification(
                outcome: .needsAttention(
                    reason: .unknownProduct, detail: "product \(order.productId) is not configured for store huawei"))
        }
        if let data = proof.clientData, let signature = proof.clientSignature,
            !HMSProof.verify(
                data: data, signature: signature, algorithm: proof.signatureAlgorithm, key: client.publicKey)
        {
            return Verification(
                outcome: .rejected(
                    reason: .signatureInvalid,
                    detail:
                        "the client's inAppPurchaseData does not verify with huawei.hms.public_key_file: not Huawei's"))
        }
        let answer: (data: String, signature: String, algorithm: String?)
        let asked: Result<(data: String, signature: String, algorithm: String?), IAPKitClient.Failure>
        if product.kind == .autoRenewable {
            guard let subscriptionId = proof.subscriptionId else {
                return Verification(
                    outcome: .needsAttention(
                        reason: .proofMissing,
                        detail:
                            "an HMS subscription order needs its subscriptionId (the client's inAppPurchaseData carries it)"
                    ))
            }
            asked = client.subscription(proof, subscriptionId: subscriptionId)
        } else {
            asked = client.verifyToken(proof)
        }
        switch asked {
        case let .success(value): answer = value
        case let .failure(failure): return IAPKitVerifier.verification(failure)
        }
        guard
            HMSProof.verify(
                data: answer.data, signature: answer.signature, algorithm: answer.algorithm, key: client.publicKey)
        else {
            return Verification(
                outcome: .configurationFault(
                    "HMS's signed purchase data does not verify with "
                        + "huawei.hms.public_key_file: nothing it says is trusted; check the key and what sits between settle and Huawei"
                ))
        }
        let purchase: HMSPurchase
        do throws(HMSPurchase.Invalid) {
            purchase = try HMSPurchase(json: answer.data)
        } catch {
            return Verification(
                outcome: .needsAttention(
                    reason: .purchaseStateUnclear, detail: "HMS's signed purchase data: \(error.message)"),
                storeAnswered: true)
        }
        return decide(order, proof, purchase, kind: product.kind)
    }

    private func decide(_ order: Order, _ proof: HMSProof, _ purchase: HMSPurchase, kind: ProductKind) -> Verification {
        let environment = purchase.purchaseType == 0 ? "sandbox" : "production"
        func answer(_ outcome: VerificationOutcome) -> Verification {
            Verification(outcome: outcome, environment: environment, storeAnswered: true)
        }
        let name = purchase.orderId.map { "HMS order \($0)" } ?? "the HMS purchase"
        if let application = purchase.applicationId, application != appId {
            return answer(
                .rejected(
                    reason: .bundleMismatch,
                    detail:
                        "\(name) is for application \(PrintableText.escape(String(application.prefix(64)))), not huawei.app_id \(appId)"
                ))
        }
        guard purchase.purchaseToken == proof.purchaseToken else {
            return answer(
                .needsAttention(
                    reason: .purchaseStateUnclear, detail: "HMS answered for another purchase token than the order's"))
        }
        guard purchase.productId == order.productId else {
            return answer(
                .rejected(
                    reason: .productMismatch, detail: "\(name) is product \(purchase.productId), not \(order.productId)"
                ))
        }
        if kind == .autoRenewable { return subscription(order, purchase, name: name) }
        let expectedKind = kind == .consumable ? 0 : 1
        if let actual = purchase.kind, actual != expectedKind {
            return answer(
                .rejected(
                    reason: .productMismatch,
                    detail: "HMS says \(purchase.productId) is kind \(actual), the configuration says \(kind.rawValue)")
            )
        }
        if purchase.purchaseType == 0 && !acceptSandbox {
            return answer(
                .rejected(
                    reason: .sandboxNotAccepted, detail: "\(name) is a sandbox purchase and accept_sandbox is false"))
        }
        switch purchase.purchaseState {
        case 0?: break
        case 1?: return answer(.rejected(reason: .canceled, detail: "HMS says \(name) was cancelled"))
        case 2?: return answer(.rejected(reason: .refunded, detail: "HMS says \(name) was refunded"))
        case .some(-1), .some(3):
            var waiting = answer(
                .retry("HMS says \(name) is not paid yet (purchaseState \(purchase.purchaseState ?? 0))"))
            waiting.keepsAttempt = true
            waiting.retryAfterSeconds = IAPKitVerifier.incompleteRecheckSeconds
            return waiting
        default:
            return answer(
                .needsAttention(
                    reason: .purchaseStateUnclear,
                    detail: "HMS says \(name) has purchaseState \(purchase.purchaseState.map(String.init) ?? "absent")")
            )
        }
        guard let orderId = purchase.orderId else {
            return answer(
                .needsAttention(
                    reason: .purchaseStateUnclear, detail: "HMS's purchase data has no orderId to grant it under"))
        }
        if let problem = IAPKitVerifier.bindingProblem(
            binding, order, payload: purchase.developerPayload, purchase: name)
        {
            return answer(problem)
        }
        if purchase.confirmed == 1 || purchase.consumptionState == 1 {
            return answer(
                .needsAttention(
                    reason: .finishedElsewhere,
                    detail: "HMS says \(name) was already confirmed, and not by settle: the backend may have granted it"
                ))
        }
        return answer(
            .verified(
                .only(
                    VerifiedPurchase(
                        transactionId: orderId, originalTransactionId: orderId, productId: purchase.productId,
                        environment: environment, quantity: 1, purchaseDateMs: purchase.purchaseTimeMs,
                        expiresDateMs: nil).paying(purchase.paid))))
    }
}

extension HMSVerifier {
    /// A subscription's current period: granted only while HMS says it is valid (`subIsvalid`:
    /// charged, unexpired, unrefunded), under its order id, until its `expirationDate`.
    fileprivate func subscription(_ order: Order, _ purchase: HMSPurchase, name: String) -> Verification {
        let environment = purchase.purchaseType == 0 ? "sandbox" : "production"
        func reply(_ outcome: VerificationOutcome) -> Verification {
            Verification(outcome: outcome, environment: environment, storeAnswered: true)
        }
        if purchase.kind.map({ $0 != 2 }) ?? false {
            return reply(
                .rejected(
                    reason: .productMismatch,
                    detail: "HMS says \(purchase.productId) is kind \(purchase.kind ?? -1), not a subscription"))
        }
        if purchase.purchaseType == 0 && !acceptSandbox {
            return reply(
                .rejected(
                    reason: .sandboxNotAccepted, detail: "\(name) is a sandbox purchase and accept_sandbox is false"))
        }
        if purchase.cancelTimeMs != nil {
            return reply(.rejected(reason: .refunded, detail: "HMS says \(name) was revoked (cancelTime)"))
        }
        guard purchase.subIsValid == true, let orderId = purchase.orderId else {
            return reply(
                .needsAttention(
                    reason: .purchaseStateUnclear,
                    detail:
                        "HMS says \(name) is not valid now (subIsvalid \(purchase.subIsValid.map(String.init) ?? "absent")): a period is granted only while it is"
                ))
        }
        if let problem = IAPKitVerifier.bindingProblem(
            binding, order, payload: purchase.developerPayload, purchase: name)
        {
            return reply(problem)
        }
        return reply(
            .verified(
                .only(
                    VerifiedPurchase(
                        transactionId: orderId, originalTransactionId: purchase.subscriptionId ?? orderId,
                        productId: purchase.productId, environment: environment, quantity: 1,
                        purchaseDateMs: purchase.purchaseTimeMs, expiresDateMs: purchase.expirationDateMs
                    ).paying(purchase.paid))))
    }
}

/// Tells HMS an order's goods were granted (`v2/purchases/confirm`), after the grant is durable.
package struct HMSFinisher: StoreFinisher {
    package let client: HMSClient

    package init(client: HMSClient) { self.client = client }

    package func finish(_ order: Order) -> StoreFinishOutcome {
        guard let proof = HMSProof(order.storeProof) else { return .refused("the order holds no HMS proof to confirm") }
        // HMS confirms one-time purchases; a subscription's delivery is nothing HMS is told of.
        if proof.subscriptionId != nil { return .finished("subscription_needs_no_confirm") }
        switch client.confirm(proof) {
        case let .success(word): return .finished(word)
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
