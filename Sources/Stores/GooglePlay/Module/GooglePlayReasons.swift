import SettleModel

/// What Google Play's own reasons mean, in a support agent's words (the verdict, the overview,
/// `retry`'s warning).
enum GooglePlayReasons {
    static let words: [String: StoreReasonWords] = [
        "refunded": StoreReasonWords("Google refunded, charged back or revoked the purchase",
                                     retryAdvice: "nothing to grant: Google voided it (a retry is rejected the same way)"),
        "canceled": StoreReasonWords("Google Play says the purchase was canceled before it was paid", retryAdvice: nothingPaid),
        "purchase_not_found": StoreReasonWords("Google Play does not know this purchase token (or no longer honours it)",
                                               retryAdvice: nothingPaid),
        "purchase_state_unclear": StoreReasonWords("Google Play answered with a purchase state settle has no rule for"),
        "finished_elsewhere": StoreReasonWords("Google Play says the purchase was already consumed or acknowledged, "
                                               + "which settle never did: the app or another backend finished it"),
    ]

    private static let nothingPaid = "nothing to grant: Google Play says nothing was paid for this token (a retry ends the same way)"
}
