import Foundation
import SettleBase

/// The binding rule of a store whose purchase names its buyer by a free-form account id the app
/// passed at purchase (Huawei's and ONE store's `developerPayload`): the id the order's user must
/// carry follows `app_account_token` (the one stored with the order, the user id itself, or the
/// user id's version-5 UUID); a UUID compares in lowercase, anything else as it is.
extension UserBinding {
    /// The account id the order's user must carry; nil when none is known.
    package func expectedAccountId(for order: Order) -> String? {
        switch tokenSource {
        case .order: return order.appAccountToken.flatMap { $0.isEmpty ? nil : Self.normalizedAccountId($0) }
        case .userId: return order.userId.isEmpty ? nil : Self.normalizedAccountId(order.userId)
        case .uuid5: return namespace.map { UserBinding.uuid5(namespace: $0, name: order.userId).uuidString.lowercased() }
        }
    }

    /// A UUID in any case compares as its lowercase spelling; any other id as it is.
    package static func normalizedAccountId(_ id: String) -> String { UUID(uuidString: id)?.uuidString.lowercased() ?? id }

    /// What the binding says of a purchase carrying `accountId` (`field` names it in the store's
    /// words, `purchase` names the purchase): nil when it may be granted to the order's user. An
    /// absent or empty id follows `tokenless_signed_proofs`; an id no one can check waits for a
    /// person; another user's is refused.
    package func accountIdProblem(_ accountId: String?, field: String, order: Order, purchase: String) -> VerificationOutcome? {
        guard let actual = accountId.flatMap({ $0.isEmpty ? nil : Self.normalizedAccountId($0) }) else {
            switch tokenlessSignedProofs {
            case .trust: return nil
            case .refuse:
                return .rejected(reason: .proofUnbound, detail: "\(purchase) carries no \(field) and user_binding.tokenless_signed_proofs is refuse")
            case .needsAttention:
                return .needsAttention(reason: .proofUnbound, detail: "\(purchase) carries no \(field): check it is user \(order.userId)'s")
            }
        }
        let shown = PrintableText.escape(String(actual.prefix(128)))
        guard let expected = expectedAccountId(for: order) else {
            return .needsAttention(reason: .tokenUnverifiable,
                                   detail: "the purchase carries \(field) \(shown), and no \(field) is known for user \(order.userId) "
                                       + "to check it against (user_binding.app_account_token: \(tokenSource.rawValue))")
        }
        guard actual == expected else {
            return .rejected(reason: .userMismatch, detail: "the purchase's \(field) \(shown) is not user \(order.userId)'s")
        }
        return nil
    }
}
