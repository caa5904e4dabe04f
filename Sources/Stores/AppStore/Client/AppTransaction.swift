import SettleModel
/// The fields settle uses from a verified StoreKit `AppTransaction` (`AppTransaction.shared`,
/// the App Store's signed record of one Apple Account's download of the app,
/// https://developer.apple.com/documentation/storekit/apptransaction).
///
/// Its `appTransactionId` is one per Apple Account per app, and one per family member: every
/// transaction of that account, family-shared ones included, carries it. A backend that hands
/// settle the signed AppTransaction its app read for a user tells settle, with Apple's signature,
/// which `appTransactionId` is that user's; a bare id proves nothing (anyone can send one).
/// https://developer.apple.com/documentation/appstoreserverapi/apptransactionid
package struct AppTransaction: Sendable, Equatable {
    package var appTransactionId: String
    package var bundleId: String
    /// From `receiptType`, the AppTransaction's name for the environment.
    package var environment: AppleEnvironment
    /// `receiptCreationDate`: when the App Store signed it.
    package var signedDateMs: Int64?

    package init(appTransactionId: String, bundleId: String, environment: AppleEnvironment, signedDateMs: Int64?) {
        self.appTransactionId = appTransactionId
        self.bundleId = bundleId
        self.environment = environment
        self.signedDateMs = signedDateMs
    }
}

/// Verified, it tells the pass the Apple Account is the order's user's: the App Store's module
/// links it (`AppStoreModule.record`).
extension AppTransaction: LearnedFact {}
