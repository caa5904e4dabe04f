import Foundation
import SettleModel

/// A verified App Store Server Notification V2 (`ResponseBodyV2DecodedPayload`,
/// https://developer.apple.com/documentation/appstoreservernotifications/responsebodyv2decodedpayload),
/// with its nested signed transaction verified too. Types are kept as sent so a new one survives.
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

extension SignedDataVerifier {
    /// Verifies a notification's `signedPayload` as Apple's libraries do
    /// (`verifyAndDecodeNotification`): chain, OIDs and ES256 of the outer JWS, then bundle id,
    /// `appAppleId` in production, the environment from `data.environment`, and every nested
    /// JWS on its own, which must agree with the outer payload.
    package func verifyNotification(_ signedPayload: String, now: Date) -> Result<AppleNotification, SignedDataFailure> {
        Result { () throws(SignedDataFailure) in
            let payload = try authenticate(signedPayload, checkTime: .signedDate(orElse: now))
            guard case let .string(uuid)? = payload["notificationUUID"], !uuid.isEmpty, uuid.utf8.count <= 64 else {
                throw .payloadInvalid("notification has no notificationUUID string")
            }
            guard case let .string(type)? = payload["notificationType"], !type.isEmpty, type.utf8.count <= 64 else {
                throw .payloadInvalid("notification has no notificationType string")
            }
            // `data` for most types, `summary` for renewal-extension summaries, `externalPurchaseToken` for external purchases.
            guard let body = payload["data"] ?? payload["summary"] ?? payload["externalPurchaseToken"], body.objectMembers != nil else {
                throw .payloadInvalid("notification has no data, summary or externalPurchaseToken object")
            }
            guard case let .string(bundle)? = body["bundleId"] else { throw .payloadInvalid("notification data has no bundleId string") }
            guard bundle == bundleId else { throw .bundleMismatch("notification is for \(bundle), expected \(bundleId)") }
            let environment = try checkEnvironment(body)
            if environment == .production, let appAppleId {
                guard body["appAppleId"]?.looseString == appAppleId else {
                    throw .bundleMismatch("notification is for app \(body["appAppleId"]?.looseString ?? "(none)"), expected \(appAppleId)")
                }
            }
            var notification = AppleNotification(
                uuid: uuid, type: type, subtype: payload["subtype"]?.looseString, environment: environment,
                signedDateMs: payload["signedDate"]?.looseInt64, transaction: nil, signedTransactionInfo: nil,
                consumptionRequestReason: body["consumptionRequestReason"]?.looseString,
                revocationReason: body["revocationReason"]?.looseString, signedPayload: signedPayload)
            if case let .string(jws)? = body["signedTransactionInfo"] {
                let transaction = try verifyTransaction(jws, now: now).get()
                guard transaction.environment == environment else {
                    throw .environmentMismatch("the notification is \(environment), its transaction \(transaction.environment)")
                }
                notification.transaction = transaction
                notification.signedTransactionInfo = jws
                notification.revocationReason = notification.revocationReason ?? transaction.payload["revocationReason"]?.looseString
            }
            if case let .string(jws)? = body["signedRenewalInfo"] {
                let renewal = try verifySignedData(jws, now: now).get()
                guard renewal["environment"]?.looseString == environment.rawValue else {
                    throw .environmentMismatch("the notification is \(environment), its renewal info is not")
                }
            }
            return notification
        }
    }
}
