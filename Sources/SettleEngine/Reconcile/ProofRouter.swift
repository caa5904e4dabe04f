import SettleModel
import SettleAppStore
import SettleGooglePlay

/// Sends each order to the verifier its store and proof of purchase need, and sends to a person what no
/// Apple answer could make grantable (a product the configuration does not know) without asking.
package struct ProofRouter: OrderVerifier {
    /// verifyReceipt, when `receipt_api` is configured.
    package var receipts: ReceiptVerifier?
    /// StoreKit 2 signed data and the App Store Server API.
    package var storeKit: StoreKitVerifier
    package var products: Set<String>
    /// Google Play purchases, when `google_play` is configured: chosen by the order's store.
    package var play: PlayVerifier?
    /// Whether `receipt_api` or `server_api` is configured (a Google Play-only installation has neither).
    package var appStore: Bool

    package init(receipts: ReceiptVerifier?, storeKit: StoreKitVerifier, products: Set<String>, play: PlayVerifier? = nil,
                appStore: Bool = true) {
        self.receipts = receipts
        self.storeKit = storeKit
        self.products = products
        self.play = play
        self.appStore = appStore
    }

    package func verify(_ order: Order) throws -> Verification {
        if order.store == .googlePlay {
            if let play { return try play.verify(order) }
            // Not the order's fault: it waits, using no attempt, until google_play is configured.
            var waiting = Verification(outcome: .retry("a Google Play order, and no google_play section is configured"))
            waiting.keepsAttempt = true
            return waiting
        }
        guard appStore else {
            var waiting = Verification(outcome: .retry("an App Store order, and neither receipt_api nor server_api is configured"))
            waiting.keepsAttempt = true
            return waiting
        }
        guard products.contains(order.productId) else {
            return Verification(outcome: .needsAttention(reason: .unknownProduct,
                                                         detail: "product \(order.productId) is not in the configuration's products; "
                                                             + "add it, then settle retry \(Verdict.shellWord(order.orderId))"))
        }
        if order.signedTransaction == nil, order.receiptSHA256 != nil {
            if let receipts { return try receipts.verify(order) }
            guard storeKit.legacyReceipt != nil else {
                return Verification(outcome: .configurationFault("the order has an app receipt but neither receipt_api nor server_api is configured"))
            }
        }
        do {
            return try storeKit.verify(order)
        } catch let error as LegacyReceiptError {
            return Verification(outcome: .rejected(reason: .receiptInvalid, detail: error.message))
        }
    }
}

/// A stored legacy receipt that is not a PKCS#7 app receipt.
package struct LegacyReceiptError: Error {
    package var message: String
    /// Why the receipt's signature was refused; its `code` is stable (receipt_signature_invalid, ...).
    package var signatureFailure: ReceiptSignatureFailure? = nil
}
