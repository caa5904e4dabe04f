import SettleModel

/// A verified App Store Server Notification V2 (`ResponseBodyV2DecodedPayload`,
/// https://developer.apple.com/documentation/appstoreservernotifications/responsebodyv2decodedpayload),
/// with its nested signed transaction verified too. Types are kept as sent so a new one survives.
/// Plain data, as the ledger applies and stores it; `SignedDataVerifier.verifyNotification`
/// (SettleAppStore) makes one.
package struct AppleNotification: Sendable, Equatable {
    package var uuid: String
    package var type: String
    package var subtype: String?
    /// From `data.environment` (or `summary`), checked like any signed data's.
    package var environment: AppleEnvironment
    package var signedDateMs: Int64?
    /// `data.signedTransactionInfo`, verified; nil for notifications about no transaction (TEST).
    package var transaction: SignedTransaction?
    /// The transaction's JWS as Apple sent it: the proof an order created from it carries.
    package var signedTransactionInfo: String?
    /// `data.consumptionRequestReason` of a CONSUMPTION_REQUEST.
    package var consumptionRequestReason: String?
    /// `data.revocationReason` when Apple gives one, else the transaction's.
    package var revocationReason: String?
    /// The `signedPayload` exactly as received, kept in the ledger.
    package var signedPayload: String
    /// Why a part Apple signed for this app cannot be read (a nested transaction lacking a field
    /// settle needs): stored without its effect, for a person, never refused.
    package var unreadable: String?

    package init(uuid: String, type: String, subtype: String?, environment: AppleEnvironment, signedDateMs: Int64?,
                 transaction: SignedTransaction?, signedTransactionInfo: String?, consumptionRequestReason: String?,
                 revocationReason: String?, signedPayload: String) {
        self.uuid = uuid
        self.type = type
        self.subtype = subtype
        self.environment = environment
        self.signedDateMs = signedDateMs
        self.transaction = transaction
        self.signedTransactionInfo = signedTransactionInfo
        self.consumptionRequestReason = consumptionRequestReason
        self.revocationReason = revocationReason
        self.signedPayload = signedPayload
    }

    /// What a notification means for settle's orders.
    package enum Effect: Sendable, Equatable {
        /// A purchase Apple saw: create or settle its order.
        case purchase
        /// Apple took the purchase back (`REFUND`, `REVOKE`).
        case refund
        /// An earlier refund was reversed.
        case refundReversed
        /// The customer asked for a refund: answer with Send Consumption Information.
        case consumptionRequest
        /// Recorded, nothing to do.
        case informational
    }

    package var effect: Effect {
        switch type {
        case "ONE_TIME_CHARGE", "SUBSCRIBED", "DID_RENEW", "OFFER_REDEEMED": return transaction == nil ? .informational : .purchase
        // An upgrade starts a new transaction for the higher tier at once.
        case "DID_CHANGE_RENEWAL_PREF" where subtype == "UPGRADE": return transaction == nil ? .informational : .purchase
        case "REFUND", "REVOKE": return transaction == nil ? .informational : .refund
        case "REFUND_REVERSED": return transaction == nil ? .informational : .refundReversed
        case "CONSUMPTION_REQUEST": return transaction == nil ? .informational : .consumptionRequest
        default: return .informational
        }
    }
}
