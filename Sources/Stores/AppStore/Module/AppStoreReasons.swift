import SettleModel

/// What the App Store's own reasons mean, in a support agent's words (the verdict, the overview,
/// `retry`'s warning).
enum AppStoreReasons {
    static let words: [String: StoreReasonWords] = [
        "receipt_invalid": StoreReasonWords("Apple says the receipt is not genuine or is malformed"),
        "transaction_not_found": StoreReasonWords("Apple does not know this purchase in the proof"),
        "refunded": StoreReasonWords("Apple refunded or revoked the purchase",
                                     retryAdvice: "nothing to grant: Apple refunded it (a retry is rejected the same way)"),
        "payload_invalid": StoreReasonWords("Apple's signed data lacks a field settle needs"),
        "grant_conflict": StoreReasonWords("the order holds a purchase Apple no longer lists"),
        "history_incomplete": StoreReasonWords("Apple's answer for this customer could not be read in full"),
        "backfilled_purchase": StoreReasonWords(
            "a purchase made before settle first read Apple's history; the app may have granted it"),
    ]
}
