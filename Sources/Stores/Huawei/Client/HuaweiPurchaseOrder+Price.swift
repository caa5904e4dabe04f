import SettleModel

extension HuaweiPurchaseOrder {
    /// What the customer paid: Huawei's `price` is the amount times 100 (fen for CNY) with its
    /// ISO 4217 `currency`. Nil without both, or for one that is not a price (past
    /// `Price.maxMilliunits`, a currency that is not three capital letters): unknown, never guessed.
    package var paid: Price? {
        guard let price, let currency else { return nil }
        return Price(hundredths: price, currency: currency, source: .store)
    }
}
