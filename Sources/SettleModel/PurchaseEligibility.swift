import Foundation

/// A purchase Apple confirmed (in a verifyReceipt answer or a verified signed transaction),
/// before the rules decide whether this order may be granted it.
package struct ConfirmedPurchase: Sendable, Equatable {
    package var transactionId: String
    package var originalTransactionId: String
    package var productId: String
    package var environment: String
    package var quantity: Int
    package var purchaseDateMs: Int64?
    package var expiresDateMs: Int64?
    /// Set when Apple refunded or revoked it: why, for the order's history.
    package var refunded: String?
    package var isUpgraded: Bool
    package var appAccountToken: String?
    /// The Apple Account's id for the app (`SignedTransaction.appTransactionId`).
    package var appTransactionId: String? = nil
    /// `inAppOwnershipType` `FAMILY_SHARED`: any token it carries is the buyer's, not the member's.
    package var familyShared = false
    /// The price the store's answer states for it (a signed transaction's `price` and `currency`).
    package var price: Price? = nil

    package init(transactionId: String, originalTransactionId: String, productId: String, environment: String, quantity: Int,
                purchaseDateMs: Int64?, expiresDateMs: Int64?, refunded: String?, isUpgraded: Bool, appAccountToken: String?,
                appTransactionId: String? = nil, familyShared: Bool = false) {
        (self.appTransactionId, self.familyShared, self.transactionId, self.originalTransactionId) = (appTransactionId, familyShared, transactionId, originalTransactionId)
        (self.productId, self.environment, self.quantity, self.purchaseDateMs) = (productId, environment, quantity, purchaseDateMs)
        (self.expiresDateMs, self.refunded, self.isUpgraded, self.appAccountToken) = (expiresDateMs, refunded, isUpgraded, appAccountToken)
    }
}

/// The rules that turn Apple's confirmed purchases into an order's candidates (SPEC section 4
/// and the README's user binding): the order's product, a product the configuration knows,
/// not refunded, not upgraded, and bound to the order's user. Pure: which candidate the order
/// finally gets is decided in the ledger write that reserves it.
package struct PurchaseEligibility: Sendable {
    package var products: [String: ProductKind]
    package var binding: UserBinding

    package init(products: [String: ProductKind], binding: UserBinding = UserBinding()) {
        self.products = products
        self.binding = binding
    }

    /// The grant key: what is granted at most once (see `VerifiedPurchase.grantKey`).
    package func grantKey(_ p: ConfirmedPurchase) -> String {
        products[p.productId] == .nonConsumable ? p.originalTransactionId : p.transactionId
    }

    /// `named`: the order claims exactly these purchases (usually one). Otherwise every purchase
    /// of the order's product is a candidate, oldest first. `proofSigned`: the proof is
    /// Apple-signed data from the customer's device (a receipt or a signed transaction), not a
    /// bare id.
    /// `linked`: the users signed AppTransactions linked the purchases' `appTransactionId`s to.
    package func decide(_ confirmed: [ConfirmedPurchase], order: Order, named: Bool, proofSigned: Bool,
                        linked: LinkedAppTransactions = [:]) -> VerificationOutcome {
        var ofProduct = confirmed
        if named {
            if let other = confirmed.first(where: { $0.productId != order.productId }) {
                return .rejected(reason: .productMismatch,
                                 detail: "transaction \(other.transactionId) is for \(other.productId), order is for \(order.productId)")
            }
        } else {
            ofProduct = confirmed.filter { $0.productId == order.productId }
            guard !ofProduct.isEmpty else {
                return .rejected(reason: .transactionNotFound, detail: "the proof holds no purchase of \(order.productId)")
            }
            // Oldest by purchase time, numerically; never by id strings (ids are not ordered).
            ofProduct.sort { ($0.purchaseDateMs ?? .max, $0.transactionId) < ($1.purchaseDateMs ?? .max, $1.transactionId) }
        }
        guard products[order.productId] != nil else {
            return .rejected(reason: .unknownProduct, detail: "product \(order.productId) is not in the configuration's products")
        }
        var candidates: [VerifiedPurchase] = []
        var excluded: [String: Exclusion] = [:]
        var firstExclusion: Exclusion?
        var needsPerson: (reason: AttentionReason, detail: String)?
        for p in ofProduct {
            let key = grantKey(p)
            var exclusion: Exclusion?
            if let refunded = p.refunded {
                exclusion = Exclusion(.refunded, "transaction \(p.transactionId) \(refunded)")
            } else if p.isUpgraded {
                exclusion = Exclusion(.upgraded, "transaction \(p.transactionId) was upgraded to another subscription")
            } else {
                switch binding.verdict(purchaseToken: p.familyShared ? nil : p.appAccountToken, order: order, proofSigned: proofSigned,
                                       appTransactionId: p.appTransactionId, linked: linked) {
                case .bound, .unbound(.trust):
                    break
                case let .mismatch(detail):
                    exclusion = Exclusion(.userMismatch, "transaction \(p.transactionId): \(detail)")
                case .unbound(.refuse):
                    exclusion = Exclusion(.proofUnbound, unboundDetail(p, order: order, proofSigned: proofSigned))
                case .unbound(.needsAttention):
                    needsPerson = needsPerson ?? (.proofUnbound, unboundDetail(p, order: order, proofSigned: proofSigned))
                    continue
                case let .unverifiable(detail):
                    needsPerson = needsPerson ?? (.tokenUnverifiable, "transaction \(p.transactionId): \(detail)")
                    continue
                }
            }
            if let exclusion {
                excluded[key] = exclusion
                firstExclusion = firstExclusion ?? exclusion
                continue
            }
            candidates.append(VerifiedPurchase(
                transactionId: p.transactionId, originalTransactionId: p.originalTransactionId, productId: p.productId,
                environment: p.environment, quantity: max(1, p.quantity), purchaseDateMs: p.purchaseDateMs,
                expiresDateMs: p.expiresDateMs, grantKey: key))
            candidates[candidates.count - 1].price = p.price
        }
        if !candidates.isEmpty { return .verified(Match(candidates: candidates, named: named, excluded: excluded)) }
        if let needsPerson { return .needsAttention(reason: needsPerson.reason, detail: needsPerson.detail) }
        // A refund of any of them says more than "someone else's": report the most telling reason.
        let reasons: [RejectionReason] = [.refunded, .upgraded, .userMismatch, .proofUnbound]
        let telling = reasons.lazy.compactMap { r in excluded.values.first(where: { $0.reason == r }) }.first ?? firstExclusion
        guard let telling else {
            return .rejected(reason: .transactionNotFound, detail: "the proof holds no purchase of \(order.productId)")
        }
        return .rejected(reason: telling.reason, detail: telling.detail)
    }

    private func unboundDetail(_ p: ConfirmedPurchase, order: Order, proofSigned: Bool) -> String {
        let proof = proofSigned ? "the signed proof's purchase carries no appAccountToken"
            : "a bare transaction id proves nothing about who bought it, and the purchase carries no appAccountToken"
        let known = binding.expectedToken(for: order) == nil ? " (no token is known for user \(order.userId))" : ""
        return "transaction \(p.transactionId): \(proof)\(known); check it is user \(order.userId)'s (user_binding)"
    }
}
