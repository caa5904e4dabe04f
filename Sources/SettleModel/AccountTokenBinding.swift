import Foundation
import SettleBase

/// `settle bind` (issue 36): support stores the account token of an order's user (StoreKit's
/// appAccountToken, Play's obfuscated account id, a developer payload) without SQL, so a purchase
/// that names its buyer can be checked against it. The rules of who may bind what live here, for
/// the ledger, the command and the console alike.
///
/// Which reasons a token fixes, and why only one:
/// - `token_unverifiable`: the purchase names its buyer and the order's user's token is unknown.
///   Storing the user's token is exactly what was missing; the next pass compares it with the
///   purchase's, and grants only when they are equal (a wrong token ends `user_mismatch`).
/// - `proof_unbound` is refused: the purchase carries no token at all, so a token stored with the
///   order is compared with nothing and the pass ends the same way. Checking the customer's
///   account and `settle resolve` is its fix.
/// - `user_mismatch` is refused: the purchase names another user's token, and binding (or
///   replacing) this order's token with it would hand that user's purchase to this one — the
///   very thing the check exists to stop. No case was found where it is safe: a backend that
///   stored a wrong token looks the same as a customer claiming a stranger's purchase.
package enum AccountTokenBinding {
    /// The reasons a bound token fixes.
    package static let bindableReasons: [String] = [AttentionReason.tokenUnverifiable.rawValue]

    /// Whether `settle bind` may act on the order at all (its state and reason): the console shows
    /// its form only then.
    package static func isBindable(_ order: Order) -> Bool {
        (order.state == .needsAttention || order.state == .rejected) && bindableReasons.contains(order.reason ?? "")
    }

    /// Why the order cannot be bound (nil when it can), in an operator's words.
    package static func orderRefusal(_ order: Order) -> String? {
        if isBindable(order) { return nil }
        let state = order.state.rawValue + (order.reason.map { " (\($0))" } ?? "")
        let label = order.store.descriptor.accountIdLabel
        switch order.reason {
        case RejectionReason.proofUnbound.rawValue?:
            return "order \(order.orderId) is \(state): its purchase carries no \(label), so a token stored with "
                + "the order is compared with nothing and the pass would end the same way; check the "
                + "customer's account, then settle resolve"
        case RejectionReason.userMismatch.rawValue?:
            return "order \(order.orderId) is \(state): its purchase names another user's "
                + "\(label), and binding it would hand that user's purchase to "
                + "user \(order.userId); settle bind never does that "
                + "(settle resolve, or settle transfer from the buyer's order)"
        default:
            return "order \(order.orderId) is \(state); only needs_attention orders with reason "
                + "\(bindableReasons.joined(separator: ", ")) can be bound"
        }
    }

    /// The token as the ledger keeps it (a UUID in lowercase, any other id as given), or why it
    /// cannot be one for `store`: a UUID for a store whose account id is one (StoreKit), else
    /// printable text up to the store's `accountIdMaxLength` (the id is compared as it is).
    package static func normalized(_ token: String, store: Store) -> Result<String, BindingRefusal> {
        let label = store.descriptor.accountIdLabel
        if store.descriptor.accountIdIsUUID {
            guard let uuid = UUID(uuidString: token) else {
                return .failure(BindingRefusal("the \(label) is not a UUID (\(store.displayName) tokens look like "
                                               + "6f1e4c2a-5b3d-4e8f-9a0b-1c2d3e4f5a6b)"))
            }
            return .success(uuid.uuidString.lowercased())
        }
        let limit = store.descriptor.accountIdMaxLength
        guard !token.isEmpty, token.utf8.count <= limit, !token.unicodeScalars.contains(where: PrintableText.isControl),
              token.trimmingCharacters(in: .whitespaces) == token else {
            return .failure(BindingRefusal("the \(label) must be 1 to \(limit) bytes of printable text, "
                                           + "without control characters or spaces at either end"))
        }
        return .success(UserBinding.normalizedAccountId(token))
    }

    /// Why binding cannot help under this configuration: a stored token is read only when
    /// `user_binding.app_account_token` is `order`; otherwise the user's token follows the user id.
    package static func configurationRefusal(_ binding: UserBinding) -> BindingRefusal? {
        guard binding.tokenSource != .order else { return nil }
        return BindingRefusal("user_binding.app_account_token is \(binding.tokenSource.rawValue): the user's token "
                              + "follows the user id and a token stored with the order is never read, so binding "
                              + "changes nothing")
    }

    /// What history, audit and messages show instead of a token: "sha256:" and 12 hex digits.
    /// Tokens are not secrets, but they are customers' identifiers: kept out of logs.
    package static func fingerprint(_ token: String) -> String {
        "sha256:" + String(SHA256.hex(Data(token.utf8)).prefix(12))
    }
}

/// Why a bind was refused: the message names the cause and never the token.
package struct BindingRefusal: Error, Sendable, Equatable, CustomStringConvertible {
    package var message: String
    package init(_ message: String) { self.message = message }
    package var description: String { message }
}
