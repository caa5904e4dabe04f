import Foundation
import SettleBase
import SettleModel

extension SignedDataVerifier {
    /// Verifies a notification's `signedPayload` as Apple's libraries do
    /// (`verifyAndDecodeNotification`): chain, OIDs and ES256 of the outer JWS, then bundle id,
    /// `appAppleId` in production and the environment of whichever body the type carries, and
    /// every nested transaction or renewal JWS on its own, which must agree with the outer payload.
    ///
    /// Only a signature, bundle or environment that fails is refused. A genuine notification of
    /// a shape settle does not act on is still returned, to be stored and answered: Apple sends
    /// a refused one again for days, and the history catch-up would stop at it.
    package func verifyNotification(_ signedPayload: String, now: Date) -> Result<AppleNotification, SignedDataFailure> {
        Result { () throws(SignedDataFailure) in
            let payload = try authenticate(signedPayload, checkTime: .signedDate(orElse: now))
            let (body, environment) = try checkNotificationApp(payload)
            // Apple always sends a UUID and a type; were one missing, the payload's digest keys
            // the row (the same bytes are the same notification) and the type says so.
            let uuid: String
            if case let .string(text)? = payload["notificationUUID"], !text.isEmpty, text.utf8.count <= 64 {
                uuid = text
            } else {
                uuid = "sha256-" + String(SHA256.hex(Data(signedPayload.utf8)).prefix(48))
            }
            var type = "UNKNOWN"
            if case let .string(text)? = payload["notificationType"], !text.isEmpty, text.utf8.count <= 64 { type = text }
            var notification = AppleNotification(
                uuid: uuid, type: type, subtype: payload["subtype"]?.looseString, environment: environment,
                signedDateMs: payload["signedDate"]?.looseInt64, transaction: nil, signedTransactionInfo: nil,
                consumptionRequestReason: body["consumptionRequestReason"]?.looseString,
                revocationReason: body["revocationReason"]?.looseString, signedPayload: signedPayload)
            if case let .string(jws)? = body["signedTransactionInfo"] {
                switch verifyTransaction(jws, now: now) {
                case let .success(transaction):
                    guard transaction.environment == environment else {
                        throw .environmentMismatch("the notification is \(environment), its transaction \(transaction.environment)")
                    }
                    notification.transaction = transaction
                    notification.signedTransactionInfo = jws
                    notification.revocationReason = notification.revocationReason ?? transaction.payload["revocationReason"]?.looseString
                case let .failure(.payloadInvalid(detail)):
                    // Apple signed it for this app, but settle cannot read it: kept for a person.
                    notification.unreadable = "its signed transaction cannot be read: \(detail)"
                case let .failure(failure):
                    throw failure
                }
            }
            if case let .string(jws)? = body["signedRenewalInfo"] {
                switch verifySignedData(jws, now: now) {
                case let .success(renewal):
                    guard renewal["environment"]?.looseString == environment.rawValue else {
                        throw .environmentMismatch("the notification is \(environment), its renewal info is not")
                    }
                case .failure(.payloadInvalid):
                    break
                case let .failure(failure):
                    throw failure
                }
            }
            return notification
        }
    }

    /// The body that names the app, and the environment, of each shape Apple sends: `data` for
    /// most types, `summary` for renewal-extension summaries, `appData` for RESCIND_CONSENT,
    /// `externalPurchaseToken` for EXTERNAL_PURCHASE_TOKEN, which has no environment: Apple's
    /// libraries read Sandbox from an `externalPurchaseId` starting with `SANDBOX`.
    /// https://developer.apple.com/documentation/appstoreservernotifications/responsebodyv2decodedpayload
    private func checkNotificationApp(_ payload: JSONValue) throws(SignedDataFailure) -> (JSONValue, AppleEnvironment) {
        // As Apple's libraries: a notification naming no app is not this app's.
        let shapes = ["data", "summary", "externalPurchaseToken", "appData"].compactMap { key in
            payload[key].flatMap { $0.objectMembers != nil ? (key, $0) : nil }
        }
        guard let (shape, body) = shapes.first else {
            throw .bundleMismatch("notification names no app (no data, summary, appData or externalPurchaseToken object)")
        }
        guard case let .string(bundle)? = body["bundleId"] else { throw .bundleMismatch("notification names no bundleId") }
        guard bundle == bundleId else { throw .bundleMismatch("notification is for \(bundle), expected \(bundleId)") }
        var environment = AppleEnvironment.production
        if shape == "externalPurchaseToken" {
            if body["externalPurchaseId"]?.looseString?.hasPrefix("SANDBOX") == true {
                guard acceptSandbox else { throw .sandboxNotAccepted }
                environment = .sandbox
            }
        } else {
            do {
                environment = try checkEnvironment(body)
            } catch let .payloadInvalid(detail) {
                throw .environmentMismatch("notification \(detail)")
            }
        }
        if environment == .production, let appAppleId {
            guard body["appAppleId"]?.looseString == appAppleId else {
                throw .bundleMismatch("notification is for app \(body["appAppleId"]?.looseString ?? "(none)"), expected \(appAppleId)")
            }
        }
        return (body, environment)
    }
}
