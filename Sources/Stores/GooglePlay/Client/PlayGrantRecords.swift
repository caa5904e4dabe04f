import SettleModel

/// A grant the ledger holds for an order of a Google Play purchase token.
package struct PlayHeldGrant: Sendable, Equatable {
    /// Google's order id of the period or purchase granted.
    package var grantKey: String
    package var orderId: String
    package var userId: String
    /// When the period granted ends (subscriptions), Unix ms.
    package var expiresDateMs: Int64?

    package init(grantKey: String, orderId: String, userId: String, expiresDateMs: Int64? = nil) {
        self.grantKey = grantKey
        self.orderId = orderId
        self.userId = userId
        self.expiresDateMs = expiresDateMs
    }
}

/// Who holds a grant key, as far as the Play verifier needs to know.
package enum PlayGrantHolder: Sendable, Equatable {
    case order(String)
    /// Recorded as granted outside settle (the hook's "already granted", `grant-recorded`).
    case outside
}

/// What settle already knows about Google Play purchases, beyond Google's answer: read by the
/// Play verifier before it lets the ledger reserve a grant. The ledger answers (the engine
/// adapts it); this target only names the questions, so it never depends on the ledger.
package protocol PlayGrantRecords: Sendable {
    /// The grants held by orders of `token`, newest first.
    func grants(token: PurchaseToken) throws -> [PlayHeldGrant]
    func holder(grantKey: String) throws -> PlayGrantHolder?
    /// Whether settle set this order aside for `reason` before: it is verified again only
    /// because a person retried it since.
    func wasSetAside(orderId: String, reason: AttentionReason) throws -> Bool
}
