import Foundation
import SettleBase
import SettleModel

/// The rules support commands follow on both back ends, so each engine only writes rows.
extension Resolution {
    /// A retry hands an order back to the machine, which would verify and deliver it to its
    /// user: an order without one (an unclaimed purchase) first needs its buyer.
    package static func checkRetryable(_ order: Order) throws(LedgerError) {
        let unclaimed = order.reason == AttentionReason.unclaimedPurchase.rawValue
        guard unclaimed || order.userId.isBlank else { return }
        throw .invalid("order \(order.orderId) names no user (\(order.reason ?? "no reason")): a retry would deliver it to nobody. "
                       + "Find the buyer and run: settle assign \(Verdict.shellWord(order.orderId)) --user USER_ID --note TICKET")
    }

    /// `--transaction` names the purchase one order was granted by hand.
    package static func checkHandTransaction(_ transaction: String?, orders: Int, resolution: Resolution) throws(LedgerError) {
        guard let transaction else { return }
        guard resolution == .grantedByHand else { throw .invalid("--transaction goes with --as granted_by_hand") }
        guard orders == 1 else { throw .invalid("--transaction names the purchase of one order; resolve exactly one order with it") }
        // A store's transaction ids are digits (the App Store) or read like GPA.1234-5678-9012-34567 (Play's order ids).
        guard !transaction.isEmpty, transaction.count <= 64,
              transaction.allSatisfy({ $0.isASCII && ($0.isNumber || $0.isLetter || $0 == "." || $0 == "-") }) else {
            throw .invalid("--transaction: '\(transaction.prefix(64))' is not \(StoreRegistry.phrase("transaction"))")
        }
    }

    /// The purchase an order resolved `granted_by_hand` stands for, to be recorded as granted
    /// outside settle: the order's own transaction (its grant key once Apple confirmed it), or
    /// the one the person names. An order that names none needs `--transaction`: without it the
    /// same purchase uploaded again would be delivered a second time.
    package static func handGrant(_ order: Order, transaction: String?) throws(LedgerError) -> VerifiedPurchase {
        let own = order.transactionId
        if let transaction, let own, transaction != own, transaction != order.verified?.originalTransactionId {
            throw .invalid("order \(order.orderId) names transaction \(own), not \(transaction); resolve it without --transaction")
        }
        guard let id = transaction ?? own else {
            throw .invalid("order \(order.orderId) names no transaction; say which purchase was granted by hand (\(StoreRegistry.phrase("transaction"))), so it is never "
                           + "delivered again: settle resolve \(Verdict.shellWord(order.orderId)) --as granted_by_hand --transaction TXN --note TICKET")
        }
        let key = order.verified.map { $0.transactionId == id || $0.originalTransactionId == id ? $0.grantKey : id } ?? id
        return VerifiedPurchase(transactionId: id, originalTransactionId: key, productId: order.productId, environment: "",
                                quantity: 1, purchaseDateMs: nil, expiresDateMs: nil, grantKey: key)
    }

    package static func heldByOrder(_ purchase: VerifiedPurchase, holder: String, resolving id: String) -> String {
        "transaction \(purchase.transactionId) is held by order \(holder) (settle granted it there); order \(id) cannot record it "
            + "as granted by hand. Check both orders (settle status --transaction \(purchase.transactionId)); nothing changed"
    }

    package static func handGrantNote(_ orderId: String, note: String) -> String {
        "resolved granted_by_hand on order \(orderId): \(note)"
    }
}
