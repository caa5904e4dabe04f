import Foundation
import SettleBase

/// A StoreKit `AppTransaction` as the App Store signs it for one Apple Account's download of the
/// app (`AppTransaction.shared`), signed by the simulator's chain.
/// https://developer.apple.com/documentation/storekit/apptransaction
package struct SimulatedAppTransaction: Sendable, Equatable {
    package var appTransactionId: String
    package var bundleId: String
    /// `receiptType`: `Production`, `Sandbox`, or (to test refusal) `Xcode`.
    package var receiptType: String
    package var appAppleId: Int64?

    package init(appTransactionId: String, bundleId: String, receiptType: String = "Production", appAppleId: Int64? = nil) {
        self.appTransactionId = appTransactionId
        self.bundleId = bundleId
        self.receiptType = receiptType
        self.appAppleId = appAppleId
    }

    /// The AppTransaction payload: its signing time is `receiptCreationDate`.
    package func payload(signedAt signedDateMs: Int64) -> JSONValue {
        var members: [(String, JSONValue)] = [
            ("receiptType", .string(receiptType)),
            ("bundleId", .string(bundleId)),
            ("applicationVersion", .string("1")),
            ("receiptCreationDate", .number(signedDateMs)),
            ("requestDate", .number(signedDateMs)),
            ("originalPurchaseDate", .number(signedDateMs - 86_400_000)),
            ("originalApplicationVersion", .string("1")),
            ("appTransactionId", .string(appTransactionId)),
            ("originalPlatform", .string("iOS")),
        ]
        if let appAppleId { members.append(("appAppleId", .number(appAppleId))) }
        return .object(members)
    }

    package func signed(at signedDateMs: Int64) throws -> String {
        try SimulatorSigningChain.sign(payload(signedAt: signedDateMs))
    }
}
