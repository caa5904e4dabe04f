import Foundation
import SettleBase

/// How a purchase is bound to the order's user: StoreKit's `appAccountToken` (a UUID the app
/// passes to StoreKit at purchase time) compared with the token the order's user must have,
/// and what to do with proofs that bind the purchase to nobody.
/// https://developer.apple.com/documentation/storekit/product/purchaseoption/3749440-appaccounttoken
package struct UserBinding: Sendable, Equatable {
    /// Where the user's expected token comes from.
    package enum TokenSource: String, Sendable, CaseIterable {
        /// The token the backend stored with the order (`app_account_token`, `enqueue --app-account-token`).
        case order
        /// The user id itself, when it is a UUID.
        case userId = "user_id"
        /// A name-based UUID (version 5, RFC 9562) of the user id under `uuid5_namespace`.
        case uuid5
    }

    /// What to do with a purchase whose proof binds it to nobody.
    package enum Policy: String, Sendable, CaseIterable {
        /// `rejected` (`proof_unbound`).
        case refuse
        /// `needs_attention` (`proof_unbound`): a person checks the purchase is the user's.
        case needsAttention = "needs_attention"
        /// Granted: the backend only enqueues proofs it got from Apple for this user itself.
        case trust
    }

    package var tokenSource: TokenSource
    package var namespace: UUID?
    /// Proofs that are not Apple-signed data the customer's device produced: a bare
    /// transaction id (ids are near-sequential, anyone can name a stranger's).
    package var unsignedProofs: Policy
    /// Apple-signed proofs (a receipt, a signed transaction) whose purchase carries no token.
    /// A stranger cannot make one, so the default trusts them, as every legacy receipt flow does.
    package var tokenlessSignedProofs: Policy

    package init(tokenSource: TokenSource = .order, namespace: UUID? = nil, unsignedProofs: Policy = .needsAttention,
                tokenlessSignedProofs: Policy = .trust) {
        self.tokenSource = tokenSource
        self.namespace = namespace
        self.unsignedProofs = unsignedProofs
        self.tokenlessSignedProofs = tokenlessSignedProofs
    }

    /// The appAccountToken the order's user must have (lowercased), nil when unknown.
    package func expectedToken(for order: Order) -> String? {
        switch tokenSource {
        case .order:
            return order.appAccountToken.flatMap(UUID.init(uuidString:))?.uuidString.lowercased()
        case .userId:
            return UUID(uuidString: order.userId)?.uuidString.lowercased()
        case .uuid5:
            return namespace.map { UserBinding.uuid5(namespace: $0, name: order.userId).uuidString.lowercased() }
        }
    }

    /// What the binding says about one purchase.
    package enum Verdict: Sendable, Equatable {
        /// The purchase's token is the user's.
        case bound
        /// The purchase's token is someone else's: never granted to this order.
        case mismatch(String)
        /// Nothing ties the purchase to a user; `policy` decides.
        case unbound(Policy)
        /// The purchase names its buyer but the order's user's token is unknown, so whether
        /// they are the same person cannot be checked: a person decides, whatever the policy.
        case unverifiable(String)
    }

    /// A purchase that carries a token is bound to whoever the token stands for: it is granted
    /// only when the token is checked to be the order's user's. A purchase whose token does not
    /// settle it is bound as strongly by its `appTransactionId` when a signed AppTransaction
    /// linked that id to users (`linked`). Only a purchase with neither is unbound, left to the
    /// policies. A family member's shared purchase is passed without its token (the buyer's).
    package func verdict(purchaseToken: String?, order: Order, proofSigned: Bool, appTransactionId: String? = nil,
                         linked: LinkedAppTransactions = [:]) -> Verdict {
        let byToken = tokenVerdict(purchaseToken, order: order, proofSigned: proofSigned)
        switch byToken {
        case .bound, .mismatch: return byToken
        case .unbound, .unverifiable: break
        }
        guard let appTransactionId, let users = linked[appTransactionId], !users.isEmpty else { return byToken }
        let names = users.sorted().joined(separator: ", ")
        if users == [order.userId] { return .bound }
        if !users.contains(order.userId) {
            return .mismatch("the purchase's appTransactionId \(appTransactionId) is linked to user \(names), not \(order.userId)")
        }
        return .unverifiable("the purchase's appTransactionId \(appTransactionId) is linked to more than one user (\(names)): "
                             + "one store account signed in to several of the app's accounts")
    }

    private func tokenVerdict(_ purchaseToken: String?, order: Order, proofSigned: Bool) -> Verdict {
        guard let purchaseToken, !purchaseToken.isEmpty else {
            return .unbound(proofSigned ? tokenlessSignedProofs : unsignedProofs)
        }
        let token = UUID(uuidString: purchaseToken)?.uuidString.lowercased() ?? purchaseToken
        guard let expected = expectedToken(for: order) else {
            return .unverifiable("the purchase carries appAccountToken \(token), and no token is known for user \(order.userId) "
                                 + "to check it against (user_binding.app_account_token: \(tokenSource.rawValue))")
        }
        return token == expected ? .bound
            : .mismatch("the purchase's appAccountToken \(token) is not user \(order.userId)'s (\(expected))")
    }

    /// A version-5 UUID: SHA-1 of the namespace's 16 bytes and the name's UTF-8 bytes, with
    /// the version and variant bits set (RFC 9562 section 5.5).
    package static func uuid5(namespace: UUID, name: String) -> UUID {
        var input = withUnsafeBytes(of: namespace.uuid) { Array($0) }
        input.append(contentsOf: Array(name.utf8))
        var digest = SHA1.hash(input)
        digest[6] = (digest[6] & 0x0F) | 0x50
        digest[8] = (digest[8] & 0x3F) | 0x80
        return UUID(uuid: (digest[0], digest[1], digest[2], digest[3], digest[4], digest[5], digest[6], digest[7],
                           digest[8], digest[9], digest[10], digest[11], digest[12], digest[13], digest[14], digest[15]))
    }
}
