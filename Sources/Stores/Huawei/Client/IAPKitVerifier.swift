import Foundation
import SettleBase
import SettleModel
import SettleConfig

/// Re-verifies an IAP Kit order: asks Huawei for the purchase's status (a subscription's for an
/// auto-renewing product), verifies the signed answer against the pinned root, and grants only
/// what it shows: this app, an accepted environment, the order's own purchase order and token,
/// the order's product, not revoked, completed, and bound to the order's user.
/// Reference: huawei-appgallery.md sections 1.3 to 1.5 and 3.
package struct IAPKitVerifier: Sendable {
    package let client: IAPKitClient
    package let signedData: HuaweiSignedData
    package let appId: String
    package let products: [String: Configuration.Product]
    package let acceptSandbox: Bool
    package let binding: UserBinding
    package let time: any TimeSource

    /// How long an order whose purchase has not completed waits before Huawei is asked again.
    package static let incompleteRecheckSeconds: Double = 600

    package init(
        client: IAPKitClient, signedData: HuaweiSignedData, appId: String, products: [String: Configuration.Product],
        acceptSandbox: Bool, binding: UserBinding, time: any TimeSource
    ) {
        (self.client, self.signedData, self.appId, self.products) = (client, signedData, appId, products)
        (self.acceptSandbox, self.binding, self.time) = (acceptSandbox, binding, time)
    }

    package func verify(_ order: Order) -> Verification {
        guard let proof = HuaweiProof(order.storeProof) else {
            return Verification(
                outcome: .needsAttention(
                    reason: .proofMissing, detail: "a Huawei order needs its purchaseOrderId and purchaseToken"))
        }
        guard let product = products[order.productId], product.stores.contains(.huawei) else {
            return Verification(
                outcome: .needsAttention(
                    reason: .unknownProduct,
                    detail: "product \(order.productId) is not configured for store huawei"))
        }
        return product.kind == .autoRenewable ? subscription(order, proof) : oneTime(order, proof, kind: product.kind)
    }

    private func oneTime(_ order: Order, _ proof: HuaweiProof, kind: ProductKind) -> Verification {
        let jws: String
        switch client.orderStatus(purchaseOrderId: proof.purchaseOrderId, purchaseToken: proof.purchaseToken) {
        case let .success(value): jws = value
        case let .failure(failure): return Self.verification(failure)
        }
        let purchase: HuaweiPurchaseOrder
        switch signed(jws, what: "jwsPurchaseOrder") {
        case let .unusable(unusable): return unusable
        case let .payload(payload):
            if let wrong = foreign(payload) { return wrong }
            do throws(HuaweiPurchaseOrder.Invalid) {
                purchase = try HuaweiPurchaseOrder(json: payload)
            } catch {
                return Verification(
                    outcome: .needsAttention(
                        reason: .purchaseStateUnclear, detail: "Huawei's signed answer: \(error.message)"),
                    storeAnswered: true)
            }
        }
        guard purchase.purchaseOrderId == proof.purchaseOrderId, purchase.purchaseToken == proof.purchaseToken else {
            return Verification(
                outcome: .needsAttention(
                    reason: .purchaseStateUnclear,
                    detail:
                        "Huawei answered for order \(purchase.purchaseOrderId), not the order's \(proof.purchaseOrderId) and its token"
                ),
                storeAnswered: true)
        }
        let expectedType: HuaweiPurchaseOrder.ProductType =
            switch kind {
            case .consumable: .consumable
            case .nonConsumable: .nonConsumable
            case .nonRenewing: .nonRenewing
            case .autoRenewable: .autoRenewable
            }
        return decide(order, purchase, expectedType: expectedType, expiresMs: nil)
    }

    private func subscription(_ order: Order, _ proof: HuaweiProof) -> Verification {
        let jws: String
        switch client.subscriptionStatus(purchaseOrderId: proof.purchaseOrderId, purchaseToken: proof.purchaseToken) {
        case let .success(value): jws = value
        case let .failure(failure): return Self.verification(failure)
        }
        let statuses: [HuaweiSubscriptionStatus]
        switch signed(jws, what: "jwsSubGroupStatus") {
        case let .unusable(unusable): return unusable
        case let .payload(payload):
            if let wrong = foreign(payload) { return wrong }
            do throws(HuaweiPurchaseOrder.Invalid) {
                statuses = try HuaweiSubscriptionStatus.all(in: payload)
            } catch {
                return Verification(
                    outcome: .needsAttention(
                        reason: .purchaseStateUnclear, detail: "Huawei's signed answer: \(error.message)"),
                    storeAnswered: true)
            }
        }
        guard let status = statuses.first(where: { $0.purchaseToken == proof.purchaseToken }) else {
            return Verification(
                outcome: .rejected(
                    reason: .transactionNotFound,
                    detail: "Huawei's subscription group holds no subscription with the order's purchase token"),
                storeAnswered: true)
        }
        let last = status.lastPurchaseOrder
        guard last.purchaseOrderId == proof.purchaseOrderId else {
            let earlier = status.recentPurchaseOrders.contains { $0.purchaseOrderId == proof.purchaseOrderId }
            return Verification(
                outcome: .needsAttention(
                    reason: .purchaseStateUnclear,
                    detail: earlier
                        ? "order \(proof.purchaseOrderId) is an earlier period of subscription \(status.subscriptionId ?? "?"); its current period is order \(last.purchaseOrderId)"
                        : "Huawei's subscription status does not list order \(proof.purchaseOrderId) (its last order is \(last.purchaseOrderId))"
                ),
                storeAnswered: true)
        }
        switch status.state {
        case .active?:
            return decide(order, last, expectedType: .autoRenewable, expiresMs: status.expiresTimeMs)
        case .revoked?:
            return Verification(
                outcome: .rejected(
                    reason: .refunded, detail: "Huawei revoked subscription order \(last.purchaseOrderId) (status 5)"),
                environment: Self.environment(last), storeAnswered: true)
        case .expired?, .billingRetry?, nil:
            if last.revocationTimeMs != nil {
                return Verification(
                    outcome: .rejected(
                        reason: .refunded, detail: "Huawei revoked subscription order \(last.purchaseOrderId)"),
                    environment: Self.environment(last), storeAnswered: true)
            }
            let said = status.state.map { "\($0)" } ?? "unknown"
            return Verification(
                outcome: .needsAttention(
                    reason: .purchaseStateUnclear,
                    detail:
                        "Huawei says subscription order \(last.purchaseOrderId) has status \(status.rawStatus) (\(said)): a period is granted only while it is 1 (active)"
                ),
                environment: Self.environment(last), storeAnswered: true)
        }
    }

    /// The checks every purchase order passes before it is granted.
    private func decide(
        _ order: Order, _ purchase: HuaweiPurchaseOrder, expectedType: HuaweiPurchaseOrder.ProductType,
        expiresMs: Int64?
    ) -> Verification {
        let environment = Self.environment(purchase)
        func answer(_ outcome: VerificationOutcome) -> Verification {
            Verification(outcome: outcome, environment: environment, storeAnswered: true)
        }
        switch purchase.environment {
        case "NORMAL": break
        case "SANDBOX" where acceptSandbox: break
        case "SANDBOX":
            return answer(
                .rejected(
                    reason: .sandboxNotAccepted,
                    detail: "order \(purchase.purchaseOrderId) is a sandbox purchase and accept_sandbox is false"))
        default:
            return answer(
                .rejected(
                    reason: .environmentMismatch,
                    detail:
                        "order \(purchase.purchaseOrderId) is from environment \(PrintableText.escape(String(purchase.environment.prefix(32))))"
                ))
        }
        guard purchase.productId == order.productId else {
            return answer(
                .rejected(
                    reason: .productMismatch,
                    detail: "order \(purchase.purchaseOrderId) is product \(purchase.productId), not \(order.productId)"
                ))
        }
        guard purchase.productType == expectedType else {
            return answer(
                .rejected(
                    reason: .productMismatch,
                    detail:
                        "Huawei says \(purchase.productId) is productType \(purchase.productType.rawValue), the configuration says \(expectedType)"
                ))
        }
        if purchase.revocationTimeMs != nil {
            return answer(
                .rejected(
                    reason: .refunded,
                    detail:
                        "Huawei revoked order \(purchase.purchaseOrderId) (reason code \(purchase.revocationReasonCode ?? "absent"))"
                ))
        }
        guard let purchaseTimeMs = purchase.purchaseTimeMs else {
            var waiting = answer(
                .retry("Huawei says order \(purchase.purchaseOrderId) has not completed (no purchaseTime)"))
            waiting.keepsAttempt = true
            waiting.retryAfterSeconds = Self.incompleteRecheckSeconds
            return waiting
        }
        if let bound = bindingProblem(order, purchase) { return answer(bound) }
        if purchase.finishStatus == "1" {
            return answer(
                .needsAttention(
                    reason: .finishedElsewhere,
                    detail:
                        "Huawei says order \(purchase.purchaseOrderId) was already confirmed as shipped, and not by settle: the backend may have granted it"
                ))
        }
        var verified = VerifiedPurchase(
            transactionId: purchase.purchaseOrderId,
            originalTransactionId: purchase.subscriptionId ?? purchase.purchaseOrderId,
            productId: purchase.productId, environment: environment, quantity: purchase.quantity,
            purchaseDateMs: purchaseTimeMs, expiresDateMs: expiresMs)
        verified.price = purchase.paid
        return answer(.verified(.only(verified)))
    }

    /// `developerPayload` is how an IAP Kit purchase names its buyer: checked against the order's
    /// user by `user_binding`, as Google's obfuscated account id is.
    private func bindingProblem(_ order: Order, _ purchase: HuaweiPurchaseOrder) -> VerificationOutcome? {
        Self.bindingProblem(
            binding, order, payload: purchase.developerPayload, purchase: "order \(purchase.purchaseOrderId)")
    }

    /// What `user_binding` says of a Huawei purchase (IAP Kit's or HMS's) whose developer payload is `payload`.
    package static func bindingProblem(
        _ binding: UserBinding, _ order: Order, payload: String?, purchase: String
    ) -> VerificationOutcome? {
        binding.accountIdProblem(payload, field: "developerPayload", order: order, purchase: purchase)
    }

    /// A developer payload as compared: a UUID in lowercase, any other payload as it is.
    package static func normalized(_ id: String) -> String { UserBinding.normalizedAccountId(id) }

    /// A signed answer that does not verify against the pinned roots is never trusted, and is not
    /// the purchase's fault: Huawei's own answer failing means settle's roots are wrong or someone
    /// is between settle and Huawei, so the store stops (a configuration fault) and nothing is granted.
    private enum Signed {
        case payload(JSONValue)
        case unusable(Verification)
    }

    private func signed(_ jws: String, what: String) -> Signed {
        switch signedData.verify(jws, now: time.now) {
        case let .success(payload): return .payload(payload)
        case let .failure(failure):
            return .unusable(
                Verification(
                    outcome: .configurationFault(
                        "Huawei's \(what) does not verify: \(failure.message); nothing it says is trusted: check huawei.root_certificates "
                            + "(the Huawei CBG Root CA G2) and what sits between settle and Huawei")))
        }
    }

    /// An answer about another app: the purchase token belongs to another app, never granted here.
    private func foreign(_ payload: JSONValue) -> Verification? {
        let application = payload["applicationId"]?.looseString
        guard application != appId else { return nil }
        let named = application.map { PrintableText.escape(String($0.prefix(64))) } ?? "no application"
        return Verification(
            outcome: .rejected(
                reason: .bundleMismatch,
                detail: "Huawei's signed answer is for application \(named), not huawei.app_id \(appId)"),
            storeAnswered: true)
    }

    private static func environment(_ purchase: HuaweiPurchaseOrder) -> String {
        purchase.environment == "SANDBOX" ? "sandbox" : "production"
    }

    /// Why a purchase order could not be read for a notification.
    package enum PurchaseReadFailure: Error, Sendable {
        /// Huawei did not answer usefully.
        case store(IAPKitClient.Failure)
        /// Huawei answered, and what it answered is not to be trusted or used (a signature that
        /// does not verify, another app, a payload settle cannot read, no such order in it).
        case untrusted(String)
    }

    /// The purchase order `proof` names, as Huawei signs it now (a notification's new
    /// transaction): from the order status, or a subscription's status.
    package func purchaseOrder(
        _ proof: HuaweiProof, subscription: Bool
    ) -> Result<HuaweiPurchaseOrder, PurchaseReadFailure> {
        let answer =
            subscription
            ? client.subscriptionStatus(purchaseOrderId: proof.purchaseOrderId, purchaseToken: proof.purchaseToken)
            : client.orderStatus(purchaseOrderId: proof.purchaseOrderId, purchaseToken: proof.purchaseToken)
        let jws: String
        switch answer {
        case let .success(value): jws = value
        case let .failure(failure): return .failure(.store(failure))
        }
        let payload: JSONValue
        switch signedData.verify(jws, now: time.now) {
        case let .success(value): payload = value
        case let .failure(failure): return .failure(.untrusted("Huawei's answer does not verify: \(failure.message)"))
        }
        guard payload["applicationId"]?.looseString == appId else {
            return .failure(.untrusted("Huawei's signed answer is for another application than huawei.app_id \(appId)"))
        }
        do throws(HuaweiPurchaseOrder.Invalid) {
            let orders: [HuaweiPurchaseOrder]
            if subscription {
                orders = try HuaweiSubscriptionStatus.all(in: payload).filter {
                    $0.purchaseToken == proof.purchaseToken
                }
                .flatMap { [$0.lastPurchaseOrder] + $0.recentPurchaseOrders }
            } else {
                orders = [try HuaweiPurchaseOrder(json: payload)]
            }
            guard
                let order = orders.first(where: {
                    $0.purchaseOrderId == proof.purchaseOrderId && $0.purchaseToken == proof.purchaseToken
                })
            else {
                return .failure(.untrusted("Huawei's answer does not hold purchase order \(proof.purchaseOrderId)"))
            }
            return .success(order)
        } catch {
            return .failure(.untrusted("Huawei's signed answer: \(error.message)"))
        }
    }

    /// What a failed call means for the order.
    package static func verification(_ failure: IAPKitClient.Failure) -> Verification {
        switch failure.kind {
        case .notFound:
            return Verification(
                outcome: .rejected(reason: .transactionNotFound, detail: failure.message), storeAnswered: true)
        case .configuration:
            return Verification(outcome: .configurationFault(failure.message))
        case .refused:
            return Verification(
                outcome: .needsAttention(reason: .storeRefused, detail: failure.message), storeAnswered: true)
        case .unavailable:
            return Verification(outcome: .storeUnavailable(failure.message, retryAfter: failure.retryAfter))
        case .paced:
            return Verification(outcome: .paced(failure.message))
        }
    }
}
