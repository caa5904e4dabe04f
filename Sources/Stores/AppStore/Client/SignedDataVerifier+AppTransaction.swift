import Foundation
import SettleBase
import SettleModel

extension SignedDataVerifier {
    /// Verifies a signed AppTransaction (StoreKit's `AppTransaction.shared` JWS, or Get App
    /// Transaction Info's `signedAppTransactionInfo`) as Apple's libraries do
    /// (apple-protocol.md 3.4): the chain to a configured root at `receiptCreationDate` (its
    /// signed date), then the bundle id (and the app's Apple ID in production, when configured),
    /// then `receiptType` as the environment.
    /// https://developer.apple.com/documentation/storekit/apptransaction
    package func verifyAppTransaction(_ token: String, now: Date) -> Result<AppTransaction, SignedDataFailure> {
        Result { () throws(SignedDataFailure) in
            let checkTime = try Self.appTransactionCheckTime(token, orElse: now)
            let payload = try authenticate(token, checkTime: checkTime)
            guard case let .string(bundle) = payload["bundleId"] else {
                throw .payloadInvalid("app transaction payload has no bundleId string")
            }
            guard bundle == bundleId else {
                throw .bundleMismatch("app transaction is for \(bundle), expected \(bundleId)")
            }
            let environment: AppleEnvironment
            switch payload["receiptType"] {
            case .string(AppleEnvironment.production.rawValue): environment = .production
            case .string(AppleEnvironment.sandbox.rawValue):
                guard acceptSandbox else { throw .sandboxNotAccepted }
                environment = .sandbox
            case let .string(other): throw .environmentMismatch("receiptType \(other) is not accepted")
            default: throw .payloadInvalid("app transaction payload has no receiptType string")
            }
            if environment == .production, let appAppleId, let named = payload["appAppleId"]?.looseString, named != appAppleId {
                throw .bundleMismatch("app transaction is for app \(named), expected \(appAppleId)")
            }
            guard let id = payload["appTransactionId"]?.looseString, !id.isEmpty, id.count <= 64 else {
                throw .payloadInvalid("app transaction payload has no appTransactionId")
            }
            let signed = payload["receiptCreationDate"]?.looseString.flatMap(Double.init).map { Int64($0) }
            return AppTransaction(appTransactionId: id, bundleId: bundle, environment: environment, signedDateMs: signed)
        }
    }

    /// An AppTransaction names its signing time `receiptCreationDate`, not `signedDate`: the chain
    /// is checked then, so a genuine one verifies after its short-lived leaf expired. Read before
    /// the signature is checked, as `signedDate` is: a forged date still fails the signature.
    private static func appTransactionCheckTime(_ token: String, orElse now: Date) throws(SignedDataFailure) -> CheckTime {
        let parts = token.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3, let bytes = Base64URL.decode(parts[1]), let payload = try? JSONValue.parse(bytes) else {
            return .signedDate(orElse: now)
        }
        guard let value = payload["receiptCreationDate"], value != .null else { return .signedDate(orElse: now) }
        guard let milliseconds = value.looseString.flatMap(Double.init), milliseconds.isFinite else {
            throw .malformed("receiptCreationDate is not a number of milliseconds")
        }
        return .fixed(Date(timeIntervalSince1970: milliseconds / 1000))
    }
}
