import SettleModel
import SettleBase

/// The fields settle uses from a verified StoreKit 2 transaction
/// (`JWSTransactionDecodedPayload`,
/// https://developer.apple.com/documentation/appstoreserverapi/jwstransactiondecodedpayload).
/// The whole payload is kept so that fields settle does not model survive for hooks.
///
/// Plain data, as the ledger applies and stores it; reading and verifying it is
/// SettleAppStore's (`SignedTransaction(decoding:)`, `SignedDataVerifier.verifyTransaction`).
package struct SignedTransaction: Sendable, Equatable {
    package var transactionId: String
    package var originalTransactionId: String
    package var bundleId: String
    package var productId: String
    package var purchaseDateMs: Int64?
    package var expiresDateMs: Int64?
    package var revocationDateMs: Int64?
    package var signedDateMs: Int64?
    package var quantity: Int
    package var environment: AppleEnvironment
    /// `Auto-Renewable Subscription`, `Non-Consumable`, `Consumable` or
    /// `Non-Renewing Subscription`, kept as sent so that a new value survives.
    package var type: String?
    /// `PURCHASED` or `FAMILY_SHARED`, kept as sent.
    package var inAppOwnershipType: String?
    /// The UUID the app passed at purchase (`Product.PurchaseOption.appAccountToken`), in
    /// lowercase with hyphens, Apple's own spelling, so it compares equal to what an operator
    /// stored whatever case their language prints UUIDs in; nil when none was supplied.
    /// https://developer.apple.com/documentation/appstoreserverapi/appaccounttoken
    package var appAccountToken: String?
    /// True when the customer upgraded to another subscription: this transaction no longer
    /// gives access. https://developer.apple.com/documentation/appstoreserverapi/isupgraded
    package var isUpgraded: Bool
    /// The Apple Account's id for this app (API 1.15): one per account, one per family member,
    /// the same on every transaction of that account. Binds a tokenless purchase to the user a
    /// signed AppTransaction linked it to (`AppTransaction`); nil in data older than 2025.
    /// https://developer.apple.com/documentation/appstoreserverapi/apptransactionid
    package var appTransactionId: String? = nil
    package var payload: JSONValue

    /// A family member's copy of someone else's purchase: it never carries the member's token
    /// (at most the buyer's), so only the member's `appTransactionId` binds it.
    package var isFamilyShared: Bool { inAppOwnershipType == "FAMILY_SHARED" }

    package init(transactionId: String, originalTransactionId: String, bundleId: String, productId: String,
                 purchaseDateMs: Int64?, expiresDateMs: Int64?, revocationDateMs: Int64?, signedDateMs: Int64?, quantity: Int,
                 environment: AppleEnvironment, type: String?, inAppOwnershipType: String?, appAccountToken: String?,
                 isUpgraded: Bool, payload: JSONValue) {
        self.transactionId = transactionId
        self.originalTransactionId = originalTransactionId
        self.bundleId = bundleId
        self.productId = productId
        self.purchaseDateMs = purchaseDateMs
        self.expiresDateMs = expiresDateMs
        self.revocationDateMs = revocationDateMs
        self.signedDateMs = signedDateMs
        self.quantity = quantity
        self.environment = environment
        self.type = type
        self.inAppOwnershipType = inAppOwnershipType
        self.appAccountToken = appAccountToken
        self.isUpgraded = isUpgraded
        self.payload = payload
    }
}
