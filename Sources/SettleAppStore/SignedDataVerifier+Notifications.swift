import Foundation
import SettleModel

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
