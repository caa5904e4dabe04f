import SettleModel

/// The decisions of "which purchase does this order get", shared by both ledger back ends: pure,
/// so only reading holders and writing rows (in each database's dialect) is written per back end.
package enum GrantChoice {
    /// What to do with an order that already holds a grant key from an earlier attempt.
    package enum Own {
        /// Keep that purchase.
        case keep(VerifiedPurchase)
        /// Apple refunded or revoked that purchase: the one positive evidence that takes a held
        /// grant away.
        case reject(Exclusion)
        /// Apple no longer lists it: a person must look.
        case conflict(String)
    }

    /// `owner` is who answered for the order's store ("Apple"), as its descriptor names it.
    package static func own(_ key: String, in match: Match, owner: String) -> Own {
        if let mine = match.candidates.first(where: { $0.grantKey == key }) { return .keep(mine) }
        if let why = match.excluded[key] {
            guard why.reason == .refunded else {
                return .conflict("order already holds \(key), which \(owner) confirmed before; \(owner)'s answer now excludes it "
                                 + "(\(why.reason.rawValue): \(why.detail)), and only a refund or revocation takes a held purchase away")
            }
            return .reject(why)
        }
        let offered = match.candidates.map(\.transactionId).joined(separator: ", ")
        return .conflict("order already holds \(key), \(owner) now matched \(offered.isEmpty ? "nothing" : offered)")
    }

    /// What an order is when every candidate is held by someone.
    package enum AllHeld {
        /// One of them was granted outside settle: the order's purchase was delivered.
        case alreadyDelivered(VerifiedPurchase, String)
        case alreadyGranted(String)
    }

    package static func allHeld(_ held: [(VerifiedPurchase, GrantHolder)], named: Bool) -> AllHeld {
        let list = held.prefix(3).map { "\($0.0.transactionId) \($0.1.description)" }.joined(separator: ", ")
        if let (outside, _) = held.first(where: { if case .outside = $0.1 { return true }; return false }) {
            return .alreadyDelivered(outside, "the purchase was granted outside settle (\(list)); nothing to deliver")
        }
        return .alreadyGranted(named ? "transaction \(list)" : "every purchase of this product in the proof is already granted (\(list))")
    }

    /// Finds whether an order's current purchase may have reached the hook before the call that
    /// just answered "already granted": a delivery attempt that ran (any outcome but
    /// `cannot_start`) or a rescue's re-delivery, since the order last moved past a purchase.
    /// Then the answer may be the receiver remembering settle's own earlier call (a worker whose
    /// lease lapsed mid-hook, a hook that timed out after granting), and moving to the next
    /// purchase could grant the customer twice. Binds the order id twice; same SQL on both back ends.
    package static let earlierHandOff = """
        SELECT 1 AS handed FROM history
        WHERE order_id = ?
          AND id > coalesce((SELECT max(id) FROM history WHERE order_id = ? AND kind = 'delivery' AND outcome = 'already_granted'), 0)
          AND ((kind = 'delivery' AND outcome <> 'cannot_start') OR (kind = 'rescue' AND outcome = 'redeliver'))
        LIMIT 1
        """

    /// Why such an order needs a person (`AttentionReason.alreadyGrantedUnclear`).
    package static func unclearAlreadyGranted(_ order: Order) -> String {
        "the hook answered that \(order.verified.map { "transaction \($0.transactionId)" } ?? "this order's purchase") was "
            + "granted before, but settle may have handed it to the hook for this order already (an earlier attempt or a "
            + "re-delivery after a takeover): not matched to another purchase"
    }

    /// The history detail of a reservation.
    package static func reserved(_ purchase: VerifiedPurchase) -> String {
        "transaction \(purchase.transactionId)" + (purchase.grantKey == purchase.transactionId ? "" : " (grant key \(purchase.grantKey))")
    }
}
