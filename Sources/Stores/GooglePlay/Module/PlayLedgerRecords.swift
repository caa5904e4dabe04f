import SettleModel
import SettleGooglePlay
import SettleLedger
import SettleEngine

/// The ledger's answers to the Play verifier's questions (`PlayGrantRecords`): the store target
/// names them, the ledger holds them, and this is where the two meet.
package struct PlayLedgerRecords: PlayGrantRecords {
    package let ledger: any SettleLedger

    package init(ledger: any SettleLedger) {
        self.ledger = ledger
    }

    package func grants(token: PurchaseToken) throws -> [PlayHeldGrant] {
        try ledger.playGrants(token: token).compactMap { order in
            order.verified.map { PlayHeldGrant(grantKey: $0.grantKey, orderId: order.orderId, userId: order.userId,
                                               expiresDateMs: $0.expiresDateMs) }
        }
    }

    package func holder(grantKey: String) throws -> PlayGrantHolder? {
        let probe = VerifiedPurchase(transactionId: grantKey, originalTransactionId: grantKey, productId: "", environment: "",
                                     quantity: 1, purchaseDateMs: nil, expiresDateMs: nil, grantKey: grantKey)
        switch try ledger.grantHolder(of: probe) {
        case let .order(id)?: return .order(id)
        case .outside?: return .outside
        case nil: return nil
        }
    }

    package func wasSetAside(orderId: String, reason: AttentionReason) throws -> Bool {
        try ledger.wasSetAside(orderId: orderId, reason: reason)
    }
}
