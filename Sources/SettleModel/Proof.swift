/// What proves an order's purchase, as its store knows it: one value, read from the ledger's
/// columns in one place (`Order.proof`), so no code asks an order's store to know which
/// columns to read.
package enum Proof: Sendable, Equatable {
    /// An App Store proof: a receipt (stored once by its hash in `receipts`), a StoreKit 2 signed
    /// transaction, a bare transaction id, or several of them (the strongest is used first).
    case appStore(receiptSHA256: String?, signedTransaction: String?, transactionId: String?)
    /// A Google Play purchase token: a bearer secret, only ever shown by its fingerprint.
    case googlePlay(PlayPurchaseToken)

    /// How status names it: `receipt`, `signed_transaction`, `transaction_id`, `purchase_token`.
    package var kind: String {
        switch self {
        case .googlePlay: "purchase_token"
        case let .appStore(receipt, signed, _):
            receipt != nil ? "receipt" : signed != nil ? "signed_transaction" : "transaction_id"
        }
    }
}

extension Order {
    /// The order's proof; nil when the row holds none its store can use (a Google Play order
    /// whose token is missing or unusable, an App Store order with no proof at all).
    package var proof: Proof? {
        switch store {
        case .appStore:
            guard receiptSHA256 != nil || signedTransaction != nil || requestedTransactionId != nil else { return nil }
            return .appStore(receiptSHA256: receiptSHA256, signedTransaction: signedTransaction, transactionId: requestedTransactionId)
        case .googlePlay:
            return purchaseToken.map(Proof.googlePlay)
        default:
            return nil
        }
    }
}
