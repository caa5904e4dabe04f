/// One reason of a store, as support reads it in the verdict, the overview and `retry`'s warning.
package struct StoreReasonWords: Sendable, Equatable {
    /// What it means for the customer: "Google Play does not know this purchase token".
    package var explanation: String
    /// For a reason a plain retry reproduces, what would make a retry worthwhile (`ID` and `TXN`
    /// stand for the order's id and transaction); nil to use the core's advice, if any.
    package var retryAdvice: String?

    package init(_ explanation: String, retryAdvice: String? = nil) {
        self.explanation = explanation
        self.retryAdvice = retryAdvice
    }
}
