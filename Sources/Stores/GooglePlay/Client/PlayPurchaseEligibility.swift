import Foundation
import SettleBase
import SettleModel

/// What may be granted for a Google Play purchase.
package struct PlayGrant: Sendable, Equatable {
    /// What is granted at most once: Google's `orderId` (`GPA.…`). A purchase without one (some
    /// test purchases) is keyed by the SHA-256 of its token, which is as unique and not a secret.
    package var grantKey: String
    package var environment: PlayEnvironment
    package var productId: String
    package var quantity: Int
    package var purchaseTimeMillis: Int64?
    /// Already acknowledged (by the app, or by settle before a crash): finishing skips the call.
    package var alreadyAcknowledged: Bool
    /// Already consumed: someone finished it outside settle, which the caller must weigh before granting.
    package var alreadyConsumed: Bool
}

/// The answer for one purchase and one order.
package enum PlayPurchaseDecision: Sendable, Equatable {
    /// The purchase carries the order's user's account id.
    case grant(PlayGrant)
    /// Grantable, but nothing ties it to the user (the purchase carries no account id, or none is
    /// known for the user): the caller's `user_binding` policy decides, as for a tokenless Apple proof.
    case unbound(PlayGrant)
    /// Pending payment: check again later without using an attempt; never granted before it is purchased.
    case wait(String)
    /// Final: nothing is ever granted for this purchase to this order.
    case rejected(PlayRejection, String)
    /// settle has no rule for what Google said: a person decides.
    case needsAttention(String)
}

/// Stable codes, the same words the App Store side uses where they mean the same.
package enum PlayRejection: String, Sendable, CaseIterable {
    case canceled
    case sandboxNotAccepted = "sandbox_not_accepted"
    case userMismatch = "user_mismatch"
    case productMismatch = "product_mismatch"
}

/// The rules that turn what Google said about a purchase into a decision for an order (the Play
/// counterpart of `PurchaseEligibility`): the order's product, purchased (not pending, not
/// canceled), the order's user by `obfuscatedExternalAccountId`, and test purchases only where
/// sandbox purchases are accepted. Pure: the ledger decides which order finally holds the grant key.
package struct PlayPurchaseEligibility: Sendable {
    package var acceptSandbox: Bool

    package init(acceptSandbox: Bool) {
        self.acceptSandbox = acceptSandbox
    }

    /// `expectedAccountId`: the obfuscated account id the order's user must carry, nil when unknown.
    package func decide(_ facts: PlayPurchaseFacts, token: PurchaseToken, productId: String,
                       expectedAccountId: String?) -> PlayPurchaseDecision {
        let name = facts.orderId ?? token.fingerprint
        guard facts.productIds.contains(productId) else {
            return .rejected(.productMismatch, "purchase \(name) is for \(facts.productIds.joined(separator: ", ")), the order is for \(productId)")
        }
        if facts.state == .canceled { return .rejected(.canceled, "purchase \(name) was canceled; nothing was paid") }
        if let actual = facts.accountId, let expectedAccountId, actual != expectedAccountId {
            return .rejected(.userMismatch, "purchase \(name) carries obfuscatedExternalAccountId \(actual), not the order's user's (\(expectedAccountId))")
        }
        switch facts.state {
        case .pending: return .wait("purchase \(name) is pending payment")
        case let .unclear(what): return .needsAttention("purchase \(name): Google says \(what), which settle has no rule for")
        case let .suspended(what): return .wait("purchase \(name) is \(what)")
        case .purchased, .canceled: break
        }
        if facts.isTest && !acceptSandbox {
            return .rejected(.sandboxNotAccepted, "purchase \(name) is a license tester's (sandbox) and accept_sandbox is off")
        }
        let grant = PlayGrant(grantKey: facts.orderId ?? "token-sha256:" + SHA256.hex(Data(token.value.utf8)),
                              environment: facts.isTest ? .sandbox : .production, productId: productId, quantity: facts.quantity,
                              purchaseTimeMillis: facts.purchaseTimeMillis, alreadyAcknowledged: facts.acknowledged,
                              alreadyConsumed: facts.consumed)
        return facts.accountId != nil && expectedAccountId != nil ? .grant(grant) : .unbound(grant)
    }
}
