import Foundation

/// How a person closed an order settle could not settle (`settle resolve --as`). Recorded as
/// the order's `reason`; the order leaves `needs_attention` and the alerts for good.
package enum Resolution: String, Sendable, CaseIterable {
    /// Support granted the goods another way (a coupon, the game's admin tool): settle must never
    /// deliver it. The order is `finished` when it holds Apple's grant, else `rejected`.
    case grantedByHand = "granted_by_hand"
    /// Nothing will be granted (refund fraud, a deleted account): `rejected`.
    case wontGrant = "wont_grant"
}

/// A fresh proof of purchase a person attaches on retry (the customer sent a new receipt).
package enum ReplacementProof: Sendable, Equatable {
    case receipt(String)
    case signedTransaction(String)
}

/// What a retry changed, for the command to say so.
package struct RetriedOrder: Sendable, Equatable {
    package var orderId: String
    /// The state and reason it was retried from.
    package var previousState: OrderState
    package var previousReason: String?
    /// Whether the new proof is the very same as the old one.
    package var proofUnchanged: Bool
    package var transactionId: String?

    package init(orderId: String, previousState: OrderState, previousReason: String? = nil, proofUnchanged: Bool, transactionId: String? = nil) {
        self.orderId = orderId
        self.previousState = previousState
        self.previousReason = previousReason
        self.proofUnchanged = proofUnchanged
        self.transactionId = transactionId
    }
}
