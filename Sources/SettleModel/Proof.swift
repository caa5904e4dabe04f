/// What proves an order's purchase, as its store knows it: one value, read from the ledger's
/// columns in one place (`Order.proof`), so no code asks an order's store to know which
/// columns to read.
package enum Proof: Sendable, Equatable {
    /// The proof in the order row's own columns, which every ledger had before stores kept
    /// theirs as data: a receipt (stored once by its hash in `receipts`), a signed transaction
    /// (a JWS), a bare transaction id, or several of them (the store's adapter uses the strongest).
    case orderColumns(receiptSHA256: String?, signedTransaction: String?, transactionId: String?)
    /// A bearer purchase token: a secret, only ever shown by its fingerprint.
    case purchaseToken(PurchaseToken)
    /// A store module's own proof, which the core does not interpret.
    case module(StoreProof)

    /// How status names it: `receipt`, `signed_transaction`, `transaction_id`, `purchase_token`.
    package var kind: String {
        switch self {
        case .purchaseToken: "purchase_token"
        case let .module(proof): proof.kind
        case let .orderColumns(receipt, signed, _):
            receipt != nil ? "receipt" : signed != nil ? "signed_transaction" : "transaction_id"
        }
    }
}

extension Order {
    /// The order's proof; nil when the row holds none its store can use (an order whose token is
    /// missing or unusable, an App Store order with no proof at all).
    package var proof: Proof? {
        // A bearer token or a module's proof is the store's own; else the row's columns, if any.
        if let purchaseToken { return .purchaseToken(purchaseToken) }
        if let storeProof { return .module(storeProof) }
        // A store proven by a token has no other proof: a row without one has none it can use.
        guard !store.descriptor.provenByPurchaseToken,
              receiptSHA256 != nil || signedTransaction != nil || requestedTransactionId != nil else { return nil }
        return .orderColumns(receiptSHA256: receiptSHA256, signedTransaction: signedTransaction, transactionId: requestedTransactionId)
    }
}

/// What proves an order of a store whose module keeps its proof as data: a kind its module
/// names (`purchase_order`), the proof as the module wrote it (it may hold a bearer secret:
/// never shown, logged or compared outside the ledger's own same-content check), and a lookup
/// key the order is found by (an order id the store shows the buyer; never secret).
package struct StoreProof: Sendable, Equatable {
    package var kind: String
    package var proof: String
    package var key: String?

    package init(kind: String, proof: String, key: String? = nil) {
        self.kind = kind
        self.proof = proof
        self.key = key
    }
}
